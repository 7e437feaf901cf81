// Who may do what, from the callers' side: for every command kind and every kind of caller,
// the set each caller may send is written out here independently of core/access/access.cpp's
// switch. Then the application layer (core::decide, a pure function) with a fake clock,
// no CAF, no sockets: the same rules hold on the path that does not come through HTTP.
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include <set>

#include "core/access/access.hpp"
#include "core/access/credential.hpp"
#include "core/app/decide.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::command_kind;
using core::principal;
using K = command_kind;

namespace {

std::vector<command_kind> every_kind() {
  std::vector<command_kind> out;
  for (int k = 0; k <= static_cast<int>(K::minute_stats); ++k) out.push_back(static_cast<command_kind>(k));
  return out;
}

std::set<command_kind> allowed_for(const principal& who, bool accept_shared, const std::string& target) {
  std::set<command_kind> out;
  for (auto k : every_kind())
    if (!core::authorize(who, k, target, {accept_shared})) out.insert(k);
  return out;
}

const std::set<command_kind> operator_kinds = {K::create_job,
                                               K::get_job,
                                               K::list_jobs,
                                               K::cancel_job,
                                               K::requeue_job,
                                               K::prune_jobs,
                                               K::job_history,
                                               K::list_workers,
                                               K::list_clusters,
                                               K::set_cluster_enabled,
                                               K::set_clusters_enabled,
                                               K::list_worker_images,
                                               K::salad_status,
                                               K::hold_job,
                                               K::release_job,
                                               K::job_priority,
                                               K::list_priorities,
                                               K::fairshare,
                                               K::recalculate_priorities,
                                               K::create_operator,
                                               K::revoke_operator,
                                               K::list_operators,
                                               K::plan_now,
                                               K::audit_export,
                                               K::metrics,
                                               K::event_stream,
                                               K::rotate_operator_token,
                                               K::rotate_pilot_token,
                                               K::job_files,
                                               K::blob_upload,
                                               K::blob_uploaded,
                                               K::create_jobs,
                                               K::summary,
                                               K::minute_stats};
// What a named operator with role user may send: their own jobs and the read-only views.
const std::set<command_kind> user_kinds = {
    K::create_job,   K::get_job,      K::list_jobs,     K::cancel_job,         K::requeue_job,
    K::job_history,  K::list_workers, K::list_clusters, K::list_worker_images, K::salad_status,
    K::hold_job,     K::release_job,  K::job_priority,  K::list_priorities,    K::fairshare,
    K::event_stream, K::job_files,    K::blob_upload,   K::blob_uploaded,      K::create_jobs,
    K::summary,      K::minute_stats};
const std::set<command_kind> worker_kinds = {K::heartbeat,
                                             K::deregister,
                                             K::request_job,
                                             K::job_control,
                                             K::start_job,
                                             K::checkpoint_job,
                                             K::handoff_start,
                                             K::handoff_complete,
                                             K::complete_job,
                                             K::fail_job,
                                             K::rotate_worker_credential,
                                             K::files_begin,
                                             K::files_commit,
                                             K::job_files};

std::set<command_kind> join(std::set<command_kind> a, const std::set<command_kind>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

}  // namespace

TEST(access, WhatEachCallerMaySend) {
  EXPECT_EQ(allowed_for({}, false, ""), (std::set<command_kind>{K::health_warnings}));
  EXPECT_EQ(allowed_for(principal::pilot_token(), false, ""), (std::set<command_kind>{K::health_warnings, K::register_worker}));
  EXPECT_EQ(allowed_for(principal::operator_named("ann"), false, "w1"),
            join(operator_kinds, {K::health_warnings, K::register_worker}));
  EXPECT_EQ(allowed_for(principal::operator_named("ann"), true, "w1"),
            join(join(operator_kinds, worker_kinds), {K::health_warnings, K::register_worker}))
      << "RelayMD's shared-token workers, when allowed";
  EXPECT_EQ(allowed_for(principal::named_operator("ann", false), true, "w1"), join(user_kinds, {K::health_warnings}))
      << "a user: no admin commands, no registrations, never a worker's calls even with shared tokens accepted";
  EXPECT_EQ(allowed_for(principal::named_operator("ann", false), false, "ann"),
            join(user_kinds, {K::health_warnings, K::rotate_operator_token}))
      << "a user rotates their own token, no one else's";
  EXPECT_EQ(allowed_for(principal::named_operator("root-op", true), false, "w1"),
            join(operator_kinds, {K::health_warnings, K::register_worker}))
      << "a named admin may do what the admin token does";
  EXPECT_EQ(allowed_for(principal::of_worker("w1"), true, "w1"), join(worker_kinds, {K::health_warnings}));
  auto for_another = join(worker_kinds, {K::health_warnings});
  for (auto k : {K::heartbeat, K::deregister, K::request_job, K::rotate_worker_credential}) for_another.erase(k);
  EXPECT_EQ(allowed_for(principal::of_worker("w1"), true, "w2"), for_another) << "a worker acts only for itself";
  EXPECT_EQ(allowed_for(principal::loop(), false, "").size(), every_kind().size()) << "batond's own loops";
  EXPECT_EQ(allowed_for(principal::scrape_token(), true, "w1"), (std::set<command_kind>{K::health_warnings, K::metrics}))
      << "the scrape token reads metrics, nothing else";
}

TEST(access, RefusalsSayWhyWithTheRightStatus) {
  auto e = core::authorize({}, K::list_jobs, "", {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, core::error_kind::unauthenticated);
  e = core::authorize(principal::of_worker("w1"), K::create_job, "", {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, core::error_kind::forbidden);
  EXPECT_EQ(e->code, "operator_only");
  e = core::authorize(principal::of_worker("w1"), K::register_worker, "", {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, core::error_kind::forbidden);
  e = core::authorize(principal::operator_named(""), K::start_job, "j", {false});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "worker_token_required");
  e = core::authorize(principal::pilot_token(), K::heartbeat, "w1", {true});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "pilot_token_register_only");
  e = core::authorize(principal::named_operator("bob", false), K::rotate_operator_token, "ann", {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, core::error_kind::forbidden);
  EXPECT_EQ(e->code, "other_operator");
  e = core::authorize(principal::of_worker("w1"), K::cluster_plan, "", {true});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "internal_only");
}

// One rule for every rotated credential, at its boundary: the replaced hash passes strictly
// before its deadline, the current one always, an empty one never.
TEST(access, ARotatedCredentialIsAcceptedUntilItsDeadlineOnly) {
  core::rotating_secret s{"aa", "", 0};
  EXPECT_TRUE(core::accepts(s, "aa", 5));
  EXPECT_FALSE(core::accepts(s, "", 5));
  EXPECT_FALSE(core::accepts(s, "bb", 5));
  core::rotate(s, "bb", 1'000);
  EXPECT_TRUE(core::accepts(s, "bb", 5));
  EXPECT_TRUE(core::accepts(s, "aa", 999));
  EXPECT_FALSE(core::accepts(s, "aa", 1'000)) << "at its deadline the old one is refused";
  EXPECT_TRUE(core::accepts(s, "bb", 1'000'000));
  core::rotate(s, "cc", 2'000);
  EXPECT_FALSE(core::accepts(s, "aa", 5)) << "replaced twice: only the last replaced one has a grace";
  EXPECT_TRUE(core::accepts(s, "bb", 1'999));
  core::rotating_secret none;
  EXPECT_FALSE(core::accepts(none, "", 0));
}

// The pilot token: the configured one until the log records a rotation, then the rotations
// (the one in use keeps its grace); one from the environment is never rotated by batond.
TEST(access, ThePilotTokenRotatesOnlyWhenBatondKeepsIt) {
  namespace C = core::commands;
  const core::pilot_configured from_file{"p0", false}, from_env{"e0", true};
  core::world w;
  EXPECT_TRUE(core::pilot_accepts(w.pilot_token, from_file, "p0", 5));
  EXPECT_FALSE(core::pilot_accepts(w.pilot_token, from_file, "p1", 5));
  EXPECT_FALSE(core::pilot_accepts(w.pilot_token, {"", false}, "", 5)) << "no configured token: nothing passes";

  test::core_under_test core;
  auto rotate = [&](principal who, const core::pilot_configured& configured, const std::string& sha, int64_t grace) {
    C::rotate_pilot_token c;
    c.token_sha256 = sha;
    c.grace_seconds = grace;
    c.configured = configured;
    return core.run(std::move(who), c);
  };
  auto refused = rotate(principal::operator_named("ann"), from_env, "e1", 60);
  ASSERT_TRUE(refused.answer.error);
  EXPECT_EQ(refused.answer.error->code, "pilot_token_from_environment");
  EXPECT_TRUE(refused.events.empty());
  EXPECT_EQ(rotate(principal::named_operator("bob", false), from_file, "p1", 60).answer.error->code, "admin_only");
  EXPECT_EQ(rotate(principal::pilot_token(), from_file, "p1", 60).answer.error->code, "pilot_token_register_only")
      << "the pilot token cannot rotate itself";

  const core::time_us t1 = core.now;
  auto first = rotate(principal::operator_named("ann"), from_file, "p1", 60);
  ASSERT_FALSE(first.answer.error);
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].stream, "pilot");
  EXPECT_EQ(first.events[0].type(), "pilot.token_rotated");
  EXPECT_EQ(baton::core::payload_json(first.events[0])["previous_sha256"], "p0") << "the configured token is the one replaced";
  const auto& recorded = core.w.pilot_token;
  EXPECT_TRUE(core::pilot_accepts(recorded, from_file, "p1", t1));
  EXPECT_TRUE(core::pilot_accepts(recorded, from_file, "p0", t1 + 59'999'999));
  EXPECT_FALSE(core::pilot_accepts(recorded, from_file, "p0", t1 + 60'000'000)) << "past its grace";
  EXPECT_TRUE(core::pilot_accepts(recorded, from_env, "e0", t1)) << "a token from the environment is accepted alone";
  EXPECT_FALSE(core::pilot_accepts(recorded, from_env, "p1", t1));

  auto second = rotate(principal::named_operator("root-op", true), from_file, "p2", 0);
  ASSERT_FALSE(second.answer.error);
  EXPECT_EQ(baton::core::payload_json(second.events[0])["previous_sha256"], "p1")
      << "after a rotation, the rotated one is in use";
  EXPECT_FALSE(core::pilot_accepts(core.w.pilot_token, from_file, "p1", core.now)) << "grace 0: refused at once";
  EXPECT_FALSE(core::pilot_accepts(core.w.pilot_token, from_file, "p0", core.now));
  EXPECT_TRUE(core::pilot_accepts(core.w.pilot_token, from_file, "p2", core.now));
  EXPECT_EQ(core.w.pilot_token_rotated_at, core.now);
}

// The application layer, driven directly: fake clock, no actors, no sockets.
TEST(access, DispatchAppliesTheSameRules) {
  namespace C = core::commands;
  test::core_under_test core;
  auto run = [&](principal who, core::command cmd, std::optional<core::invalid_field_report> invalid = std::nullopt) {
    return core.run(std::move(who), std::move(cmd), std::move(invalid)).answer;
  };
  auto kind = [](const core::reply& r) { return r.error ? std::optional<core::error_kind>(r.error->kind) : std::nullopt; };

  C::create_job create{"job-1", "t", "/b", std::nullopt, {}, "", std::nullopt};
  EXPECT_FALSE(run(principal::operator_named("ann"), create).error);
  create.id = "job-2";
  EXPECT_EQ(kind(run(principal::of_worker("w-x"), create)), core::error_kind::forbidden) << "a worker cannot create jobs";

  C::register_worker reg;
  reg.new_id = "w1";
  reg.credential_sha256 = "aa";
  EXPECT_FALSE(run(principal::operator_named("ann"), reg).error);
  reg.new_id = "w9";
  EXPECT_EQ(kind(run(principal::of_worker("w1"), reg)), core::error_kind::forbidden)
      << "a worker token cannot register another worker";
  reg.new_id = "w2";
  EXPECT_FALSE(run(principal::operator_named("ann"), reg).error);

  EXPECT_EQ(kind(run(principal::of_worker("w2"), C::request_job{"w1"})), core::error_kind::forbidden) << "w2 cannot poll as w1";
  auto got = run(principal::of_worker("w1"), C::request_job{"w1"});
  auto* poll = std::get_if<core::results::poll_answer>(&got.value);
  ASSERT_TRUE(poll && poll->assigned);
  EXPECT_EQ(poll->assigned->job_id, "job-1");

  EXPECT_EQ(kind(run(principal::of_worker("w2"), C::start_job{"job-1"})), core::error_kind::conflict) << "not w2's job";
  EXPECT_EQ(kind(run(principal::of_worker("w2"), C::job_control{"job-1"})), core::error_kind::forbidden) << "w2 never held it";
  core::invalid_field_report bad{"checkpoint_manifest_path", "is required", nlohmann::json::object()};
  EXPECT_EQ(kind(run(principal::of_worker("w2"), C::checkpoint_job{"job-1", {}}, bad)), core::error_kind::conflict)
      << "ownership is checked before the body";
  auto invalid = run(principal::of_worker("w1"), C::checkpoint_job{"job-1", {}}, bad);
  EXPECT_EQ(kind(invalid), core::error_kind::invalid);
  EXPECT_EQ(invalid.error->field, "checkpoint_manifest_path");
  EXPECT_FALSE(run(principal::of_worker("w1"), C::start_job{"job-1"}).error);
  auto control = run(principal::of_worker("w1"), C::job_control{"job-1"});
  ASSERT_TRUE(std::holds_alternative<core::results::control>(control.value));
  EXPECT_EQ(std::get<core::results::control>(control.value).status, core::job_status::running);
  EXPECT_EQ(kind(run(principal::loop(), C::cluster_plan{"nowhere"})), core::error_kind::not_found) << "no such cluster";
  EXPECT_EQ(kind(run(principal::operator_named("ann"), C::cluster_plan{"nowhere"})), core::error_kind::forbidden)
      << "only batond's own loops";
}

// Every command kind, through core::decide: a caller with no credential is refused before
// anything else is looked at (only the health warnings are open), and batond's own loops
// are never refused for who they are.
template <size_t... I>
std::vector<core::command> one_of_each(std::index_sequence<I...>) {
  return {core::command(std::in_place_index<I>)...};
}

TEST(access, DecideRefusesTheAnonymousForEveryCommandButHealth) {
  core::world w;
  core::lease_book leases;
  core::scheduler_settings s;
  auto all = one_of_each(std::make_index_sequence<std::variant_size_v<core::command>>{});
  ASSERT_EQ(all.size(), every_kind().size());
  for (const auto& cmd : all) {
    core::envelope anonymous{{}, "anonymous", "req", cmd, std::nullopt};
    auto o = core::decide(w, leases, s, anonymous, 1'000'000);
    bool open = core::kind_of(cmd) == K::health_warnings;
    EXPECT_EQ(o.answer.error.has_value(), !open) << static_cast<int>(core::kind_of(cmd));
    if (o.answer.error) {
      EXPECT_EQ(o.answer.error->kind, core::error_kind::unauthenticated);
    }
    EXPECT_TRUE(o.events.empty());
    core::envelope from_loop{principal::loop(), "loop:test", "req", cmd, std::nullopt};
    auto l = core::decide(w, leases, s, from_loop, 1'000'000);
    if (l.answer.error) {
      EXPECT_NE(l.answer.error->kind, core::error_kind::unauthenticated);
      EXPECT_NE(l.answer.error->kind, core::error_kind::forbidden);
    }
  }
}

// A worker that polls again before starting the job it won lost that poll's reply: it is told
// the same job again, nothing new is decided, and the answer waits for the log.
TEST(access, APollRepeatedBeforeTheStartIsToldTheSameJobOnceDurable) {
  namespace C = core::commands;
  test::core_under_test core;
  auto run = [&](principal who, core::command cmd) { return core.run(std::move(who), std::move(cmd)); };
  run(principal::operator_named(""), C::create_job{"job-1", "t", "/b", std::nullopt, {}, "", std::nullopt});
  run(principal::operator_named(""), C::create_job{"job-2", "t", "/b", std::nullopt, {}, "", std::nullopt});
  C::register_worker reg;
  reg.new_id = "w1";
  run(principal::operator_named("ann"), reg);
  auto first = run(principal::of_worker("w1"), C::request_job{"w1"});
  ASSERT_EQ(first.events.size(), 1u);
  auto again = run(principal::of_worker("w1"), C::request_job{"w1"});
  auto* answer = std::get_if<core::results::poll_answer>(&again.answer.value);
  ASSERT_TRUE(answer && answer->assigned);
  EXPECT_EQ(answer->assigned->job_id, std::get<core::results::poll_answer>(first.answer.value).assigned->job_id);
  EXPECT_TRUE(again.events.empty()) << "nothing new is decided";
  EXPECT_TRUE(again.after_durable) << "the answer waits until the first assignment is durable";
  run(principal::of_worker("w1"), C::start_job{answer->assigned->job_id});
  auto busy = run(principal::of_worker("w1"), C::request_job{"w1"});
  EXPECT_EQ(std::get<core::results::poll_answer>(busy.answer.value).no_job_reason, "worker_busy");
}

TEST(access, UsersSeeAndChangeOnlyTheirOwnJobs) {
  namespace C = core::commands;
  test::core_under_test core;
  core.s.priority.accounts = {{"chem", "root", 1, {{"ann", 1}}}, {"phys", "root", 1, {{"bob", 1}}}};
  auto ann = principal::named_operator("ann", false), bob = principal::named_operator("bob", false);
  auto admin = principal::operator_named("ops");
  C::create_job create{test::uid("ann-job"), "t", "/b", std::nullopt, {}, "", std::nullopt};
  auto made = core.run(ann, create).answer;
  ASSERT_FALSE(made.error);
  const auto& row = std::get<core::results::job_row>(made.value);
  EXPECT_EQ(row.j.user, "ann");
  EXPECT_EQ(row.j.account, "chem") << "the first account that lists ann";
  for (core::command c : std::vector<core::command>{C::get_job{create.id}, C::cancel_job{create.id, true}, C::hold_job{create.id},
                                                    C::release_job{create.id}, C::job_priority{create.id},
                                                    C::requeue_job{create.id, test::uid("x")}}) {
    auto r = core.run(bob, c).answer;
    ASSERT_TRUE(r.error) << "command kind " << static_cast<int>(core::kind_of(c));
    EXPECT_EQ(r.error->kind, core::error_kind::not_found) << "another user's job does not exist for bob";
  }
  auto bob_list = std::get<core::results::job_page>(core.run(bob, C::list_jobs{}).answer.value);
  EXPECT_EQ(bob_list.total, 0u);
  auto admin_list = std::get<core::results::job_page>(core.run(admin, C::list_jobs{}).answer.value);
  EXPECT_EQ(admin_list.total, 1u);
  EXPECT_FALSE(core.run(ann, C::get_job{create.id}).answer.error);

  C::create_job for_bob{test::uid("for-bob"), "t", "/b", std::nullopt, {}, "", std::nullopt};
  for_bob.user = "bob";
  auto r = core.run(ann, for_bob).answer;
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind, core::error_kind::forbidden);
  EXPECT_EQ(r.error->field, "user");
  EXPECT_FALSE(core.run(admin, for_bob).answer.error) << "an admin submits for anyone";
  C::create_job charge_phys{test::uid("charge"), "t", "/b", std::nullopt, {}, "", std::nullopt};
  charge_phys.account = "phys";
  r = core.run(ann, charge_phys).answer;
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind, core::error_kind::forbidden);
  EXPECT_EQ(r.error->field, "account");
}

TEST(access, AnAdminsHoldIsReleasedOnlyByAnAdmin) {
  namespace C = core::commands;
  test::core_under_test core;
  auto ann = principal::named_operator("ann", false);
  auto admin = principal::operator_named("ops");
  C::create_job create{test::uid("held"), "t", "/b", std::nullopt, {}, "", std::nullopt};
  ASSERT_FALSE(core.run(ann, create).answer.error);
  EXPECT_FALSE(core.run(ann, C::hold_job{create.id}).answer.error);
  EXPECT_FALSE(core.run(ann, C::release_job{create.id}).answer.error) << "her own hold, she releases";
  EXPECT_FALSE(core.run(admin, C::hold_job{create.id}).answer.error);
  auto r = core.run(ann, C::release_job{create.id}).answer;
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->code, "admin_hold");
  EXPECT_EQ(r.error->kind, core::error_kind::forbidden);
  EXPECT_TRUE(core.w.find_job(create.id)->held);
  EXPECT_FALSE(core.run(ann, C::hold_job{create.id}).answer.error) << "holding again changes nothing";
  EXPECT_TRUE(core.w.find_job(create.id)->admin_hold) << "and does not weaken the admin's hold";
  EXPECT_FALSE(core.run(admin, C::release_job{create.id}).answer.error);
  EXPECT_FALSE(core.w.find_job(create.id)->held);
}

// A placeholder's one-time credential registers its own pilot once, as its own allocation;
// then it is spent, and so is one whose placeholder ended. The pilot token registers Salad
// workers only, up to salad.max_replicas live ones.
TEST(access, PilotCredentialsRegisterTheirOwnAllocationOnceAndThePilotTokenOnlySalad) {
  namespace C = core::commands;
  test::core_under_test core;
  core::cluster_spec a;
  a.name = "a";
  a.images = {"default"};
  core.s.clusters = {a};
  auto code = [](const core::outcome& o) { return o.answer.error ? o.answer.error->code : std::string(); };
  auto placeholder = [&](const std::string& id, const std::string& slurm_id) {
    C::placeholder_submitted p{"a", id, "default", slurm_id, core::ev::placeholder_plan_record{}, "hash-" + id};
    auto o = core.run(principal::loop(), p);
    ASSERT_FALSE(o.answer.error) << o.answer.error->message;
    EXPECT_EQ(core.w.find_worker(id)->registration_sha256, "hash-" + id);
  };
  placeholder("p1", "11");
  placeholder("p2", "12");
  C::register_worker reg;
  reg.new_id = "fresh-1";
  reg.credential_sha256 = "aa";
  reg.provider_id = "a:12";  // another pilot's allocation
  auto other = core.run(principal::pilot_of("p1"), reg);
  EXPECT_EQ(code(other), "pilot_credential_scope");
  EXPECT_EQ(other.answer.error->kind, core::error_kind::forbidden);
  EXPECT_FALSE(core.w.find_worker("p2")->gone);
  reg.provider_id = "";  // the worker need not say: the credential knows its allocation
  auto own = core.run(principal::pilot_of("p1"), reg);
  ASSERT_FALSE(own.answer.error) << own.answer.error->message;
  const core::worker* adopted = core.w.find_worker("p1");
  EXPECT_FALSE(adopted->placeholder);
  EXPECT_EQ(adopted->provider_id, "a:11");
  EXPECT_EQ(adopted->registration_sha256, "") << "spent";
  EXPECT_EQ(own.events.back().type(), "worker.placeholder_adopted");
  reg.new_id = "fresh-2";
  auto again = core.run(principal::pilot_of("p1"), reg);
  EXPECT_EQ(code(again), "pilot_credential_spent");
  EXPECT_EQ(again.answer.error->kind, core::error_kind::unauthenticated);
  EXPECT_TRUE(again.events.empty());
  // p2's allocation ended before its pilot registered: its credential ends with it.
  core.run(principal::loop(), C::placeholders_checked{"a", {"12"}, {}});
  ASSERT_TRUE(core.w.find_worker("p2")->gone);
  EXPECT_EQ(code(core.run(principal::pilot_of("p2"), reg)), "pilot_credential_spent");
  EXPECT_EQ(code(core.run(principal::pilot_of("nowhere"), reg)), "pilot_credential_spent");

  // The pilot token: never a Slurm pilot; Salad workers up to the group's replica count.
  reg.new_id = "s1";
  reg.kind = core::platform::salad;
  EXPECT_EQ(code(core.run(principal::pilot_token(), reg)), "salad_replicas_registered") << "Salad not configured";
  core.s.salad_enabled = true;
  core.s.salad_max_replicas = 2;
  reg.kind = core::platform::hpc;
  EXPECT_EQ(code(core.run(principal::pilot_token(), reg)), "pilot_token_scope");
  reg.kind = core::platform::salad;
  EXPECT_FALSE(core.run(principal::pilot_token(), reg).answer.error);
  reg.new_id = "s2";
  EXPECT_FALSE(core.run(principal::pilot_token(), reg).answer.error);
  reg.new_id = "s3";
  auto third = core.run(principal::pilot_token(), reg);
  EXPECT_EQ(code(third), "salad_replicas_registered");
  EXPECT_EQ(third.answer.error->kind, core::error_kind::over_limit);
  core.run(principal::of_worker("s1"), C::deregister{"s1"});
  reg.provider_id = "a:11";  // the allocation p1's worker runs in: only an admin may replace it
  auto evict = core.run(principal::pilot_token(), reg);
  EXPECT_EQ(code(evict), "provider_id_in_use");
  EXPECT_EQ(evict.answer.error->field, "provider_id");
  EXPECT_FALSE(core.w.find_worker("p1")->gone);
  reg.provider_id = "";
  EXPECT_FALSE(core.run(principal::pilot_token(), reg).answer.error) << "a replica that left frees its place";
}
