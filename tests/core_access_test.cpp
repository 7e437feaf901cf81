// Who may do what, from the callers' side: for every command kind and every kind of caller,
// the set each caller may send is written out here independently of core/access.cpp's
// switch. Then the scheduler's dispatch (actors::handle, a pure function) with a fake clock,
// no CAF, no sockets: the same rules hold on the path that does not come through HTTP.
#include <gtest/gtest.h>

#include <set>

#include "actors/scheduler_commands.hpp"
#include "core/access.hpp"

using namespace baton;
using core::command_kind;
using core::principal;
using K = command_kind;

namespace {

std::vector<command_kind> every_kind() {
  std::vector<command_kind> out;
  for (int k = 0; k <= static_cast<int>(K::salad_failed); ++k) out.push_back(static_cast<command_kind>(k));
  return out;
}

std::set<command_kind> allowed_for(const principal& who, bool accept_shared, const std::string& target) {
  std::set<command_kind> out;
  for (auto k : every_kind())
    if (!core::authorize(who, k, target, {accept_shared})) out.insert(k);
  return out;
}

const std::set<command_kind> operator_kinds = {
    K::create_job,    K::get_job,         K::list_jobs,        K::cancel_job,           K::requeue_job,
    K::prune_jobs,    K::job_history,     K::list_workers,     K::list_clusters,        K::set_cluster_enabled,
    K::set_clusters_enabled, K::list_worker_images, K::salad_status};
const std::set<command_kind> worker_kinds = {K::heartbeat,      K::deregister,       K::request_job, K::job_control,
                                             K::start_job,      K::checkpoint_job,   K::handoff_start,
                                             K::handoff_complete, K::complete_job,   K::fail_job};

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
  EXPECT_EQ(allowed_for(principal::of_worker("w1"), true, "w1"), join(worker_kinds, {K::health_warnings}));
  auto for_another = join(worker_kinds, {K::health_warnings});
  for (auto k : {K::heartbeat, K::deregister, K::request_job}) for_another.erase(k);
  EXPECT_EQ(allowed_for(principal::of_worker("w1"), true, "w2"), for_another) << "a worker acts only for itself";
  EXPECT_EQ(allowed_for(principal::loop(), false, "").size(), every_kind().size()) << "batond's own loops";
}

TEST(access, RefusalsSayWhyWithTheRightStatus) {
  auto e = core::authorize({}, K::list_jobs, "", {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 401);
  e = core::authorize(principal::of_worker("w1"), K::create_job, "", {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 403);
  EXPECT_EQ(e->code, "operator_only");
  e = core::authorize(principal::of_worker("w1"), K::register_worker, "", {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 403);
  e = core::authorize(principal::operator_named(""), K::start_job, "j", {false});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "worker_token_required");
  e = core::authorize(principal::pilot_token(), K::heartbeat, "w1", {true});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "pilot_token_register_only");
  e = core::authorize(principal::of_worker("w1"), K::cluster_plan, "", {true});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "internal_only");
}

// The scheduler's dispatch, driven directly: fake clock, no actors.
TEST(access, DispatchAppliesTheSameRules) {
  core::world w;
  actors::lease_book leases;
  actors::scheduler_settings s;
  core::time_us now = 1'000'000'000;
  auto run = [&](actors::api_command c) {
    auto h = actors::handle(w, leases, s, c, now);
    if (!h.decision.error) core::apply(w, h.decision, now);
    if (c.kind == K::register_worker && h.reply.status == 200) leases.touch(h.reply.body["worker_id"], now);
    return h.reply;
  };
  actors::api_command create;
  create.kind = K::create_job;
  create.caller = principal::operator_named("ann");
  create.target = "job-1";
  create.body = {{"title", "t"}, {"input_bundle_path", "/b"}};
  EXPECT_EQ(run(create).status, 200);
  create.caller = principal::of_worker("w-x");
  create.target = "job-2";
  EXPECT_EQ(run(create).status, 403) << "a worker cannot create jobs";

  actors::api_command reg;
  reg.kind = K::register_worker;
  reg.caller = principal::pilot_token();
  reg.new_id = "w1";
  reg.credential_sha256 = "aa";
  reg.body = {{"platform", "hpc"}};
  EXPECT_EQ(run(reg).status, 200);
  reg.caller = principal::of_worker("w1");
  reg.new_id = "w9";
  EXPECT_EQ(run(reg).status, 403) << "a worker token cannot register another worker";
  reg.caller = principal::pilot_token();
  reg.new_id = "w2";
  EXPECT_EQ(run(reg).status, 200);

  actors::api_command poll;
  poll.kind = K::request_job;
  poll.caller = principal::of_worker("w2");
  poll.target = "w1";
  EXPECT_EQ(run(poll).status, 403) << "w2 cannot poll as w1";
  poll.caller = principal::of_worker("w1");
  auto got = run(poll);
  ASSERT_EQ(got.body["status"], "assigned") << got.body;

  actors::api_command start;
  start.kind = K::start_job;
  start.target = "job-1";
  start.caller = principal::of_worker("w2");
  EXPECT_EQ(run(start).status, 409) << "not w2's job";
  start.kind = K::job_control;
  EXPECT_EQ(run(start).status, 403) << "w2 never held it";
  start.kind = K::checkpoint_job;
  start.invalid_body = nlohmann::json{{"field", "checkpoint_manifest_path"}};
  EXPECT_EQ(run(start).status, 409) << "ownership is checked before the body";
  start.caller = principal::of_worker("w1");
  EXPECT_EQ(run(start).status, 422);
  start.invalid_body.reset();
  start.kind = K::start_job;
  EXPECT_EQ(run(start).status, 204);
}
