#include "support/forged_events.hpp"
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/access/access.hpp"
#include "core/jobs/job.hpp"
#include "core/memory/job_pool.hpp"
#include "core/world/world.hpp"

using namespace baton::core;
using nlohmann::json;

namespace {

ev::job_handoff_started walltime() {
  ev::job_handoff_started h;
  h.reason = "walltime";
  return h;
}
ev::job_failed payload_failed() {
  ev::job_failed f;
  f.reason = "payload_failed";
  return f;
}

constexpr time_us t0 = 1'700'000'000'000'000;

struct fixture {
  world w;
  time_us now = t0;

  decision run(decision d) {
    now += 1'000'000;
    if (d.ok()) apply(w, d, now);
    return d;
  }
  const job& j(const std::string& id) { return w.jobs.at(id); }
  void create(const std::string& id, uint32_t max_attempts = 5) {
    create_job c{id, "t", "/bundles/" + id, "img", "", {}, max_attempts};
    ASSERT_TRUE(run(decide_create(w.find_job(id), c, now)).ok());
  }
  // A job of a user in an account, QOS "normal".
  void create_for(const std::string& id, const std::string& user, const std::string& account) {
    create_job c{id, "t", "/bundles/" + id, "img", "", {}, 5};
    c.user = user;
    c.account = account;
    c.qos = "normal";
    ASSERT_TRUE(run(decide_create(w.find_job(id), c, now)).ok());
  }
  void add_worker(const std::string& id) {
    register_worker r;
    r.id = id;
    r.worker_image_key = "img";
    ASSERT_TRUE(run(decide_register(nullptr, r, now)).ok());
  }
  void assign(const std::string& job_id, const std::string& worker_id) {
    ASSERT_TRUE(run(baton::test::forged_assignment(j(job_id), worker_id, json::object(), now)).ok());
  }
};

}  // namespace

TEST(JobCore, TransitionTableMatchesRelayMDPlusRecoverableHandoff) {
  using S = job_status;
  EXPECT_TRUE(transition_allowed(S::queued, S::assigned));
  EXPECT_FALSE(transition_allowed(S::queued, S::running));
  EXPECT_TRUE(transition_allowed(S::running, S::handoff));
  EXPECT_FALSE(transition_allowed(S::assigned, S::handoff));
  EXPECT_TRUE(transition_allowed(S::handoff, S::queued));
  EXPECT_TRUE(transition_allowed(S::handoff, S::failed));
  EXPECT_TRUE(transition_allowed(S::cancelling, S::cancelled));
  EXPECT_FALSE(transition_allowed(S::cancelling, S::completed));
  for (auto t : {S::completed, S::failed, S::cancelled})
    for (int to = 0; to < 8; ++to) EXPECT_FALSE(transition_allowed(t, static_cast<S>(to)));
  EXPECT_TRUE(occupies_worker(S::handoff));
}

TEST(JobCore, HappyPathAndIdempotentStart) {
  fixture f;
  f.create("j1");
  f.add_worker("w1");
  EXPECT_EQ(f.w.queued.size(), 1u);
  f.assign("j1", "w1");
  EXPECT_EQ(f.j("j1").status, job_status::assigned);
  ASSERT_NE(f.w.held_job("w1"), nullptr);
  EXPECT_EQ(*f.w.held_job("w1"), "j1");
  EXPECT_TRUE(f.w.queued.empty());
  EXPECT_TRUE(idle_workers(f.w).empty());
  EXPECT_EQ(f.run(decide_start(f.j("j1"), f.now)).events.size(), 1u);
  auto again = f.run(decide_start(f.j("j1"), f.now));
  EXPECT_TRUE(again.ok());
  EXPECT_TRUE(again.events.empty());
  checkpoint_report r;
  r.manifest_path = "/ckpt/j1/1.json";
  r.progress = 0.4;
  ASSERT_TRUE(f.run(decide_checkpoint(f.j("j1"), r, f.now)).ok());
  EXPECT_EQ(f.j("j1").latest_checkpoint_manifest_path, "/ckpt/j1/1.json");
  EXPECT_EQ(*f.j("j1").progress, 0.4);
  ASSERT_TRUE(f.run(decide_complete(f.j("j1"), f.now)).ok());
  EXPECT_EQ(f.j("j1").status, job_status::completed);
  EXPECT_EQ(idle_workers(f.w).size(), 1u);
  EXPECT_NEAR(runtime_seconds(f.j("j1"), f.now), 3.0, 1e-9);  // started .. completed: three steps of 1 s
  auto late = decide_complete(f.j("j1"), f.now);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error->kind, error_kind::conflict);
  EXPECT_EQ(late.error->code, "job_transition_conflict");
  EXPECT_EQ(late.error->details["current_status"], "completed");
  EXPECT_EQ(late.error->details["requested_status"], "completed");
}

TEST(JobCore, OnlyTheAssigneeMayChangeTheJob) {
  fixture f;
  f.create("j1");
  f.add_worker("w1");
  f.add_worker("w2");
  f.assign("j1", "w1");
  for (auto k : {command_kind::start_job, command_kind::complete_job, command_kind::fail_job, command_kind::checkpoint_job,
                 command_kind::handoff_start, command_kind::handoff_complete}) {
    auto e = authorize_job(principal::of_worker("w2"), k, f.j("j1"));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind, error_kind::conflict);
    EXPECT_EQ(e->code, "job_not_assigned_to_worker");
    EXPECT_FALSE(authorize_job(principal::of_worker("w1"), k, f.j("j1")));
    EXPECT_FALSE(authorize_job(principal::operator_named(""), k, f.j("j1"))) << "shared-token mode is not identified";
  }
  // Control: the current worker and any earlier one may read it (to learn of a cancel); others may not.
  EXPECT_FALSE(authorize_job(principal::of_worker("w1"), command_kind::job_control, f.j("j1")));
  auto other = authorize_job(principal::of_worker("w2"), command_kind::job_control, f.j("j1"));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->kind, error_kind::forbidden);
}

TEST(JobCore, CancelRules) {
  fixture f;
  f.create("q");
  ASSERT_TRUE(f.run(decide_cancel(f.j("q"), false, f.now)).ok());
  EXPECT_EQ(f.j("q").status, job_status::cancelled);
  f.create("r");
  f.add_worker("w");
  f.assign("r", "w");
  f.run(decide_start(f.j("r"), f.now));
  auto no_force = decide_cancel(f.j("r"), false, f.now);
  ASSERT_FALSE(no_force.ok());
  EXPECT_EQ(no_force.error->code, "force_required");
  ASSERT_TRUE(f.run(decide_cancel(f.j("r"), true, f.now)).ok());
  EXPECT_EQ(f.j("r").status, job_status::cancelling);
  EXPECT_FALSE(decide_complete(f.j("r"), f.now).ok()) << "a late complete must not win over a cancel";
  EXPECT_TRUE(decide_checkpoint(f.j("r"), {}, f.now).ok()) << "checkpoints still land while cancelling";
  ASSERT_TRUE(f.run(decide_finish_cancel(f.j("r"), f.now)).ok());
  EXPECT_EQ(f.j("r").status, job_status::cancelled);
  EXPECT_EQ(idle_workers(f.w).size(), 1u);
  EXPECT_FALSE(decide_cancel(f.j("r"), true, f.now).ok());
}

TEST(JobCore, HandoffIsRecoveredWhenItsWorkerIsLost) {
  fixture f;
  f.create("j");
  f.add_worker("w");
  f.assign("j", "w");
  f.run(decide_start(f.j("j"), f.now));
  checkpoint_report r;
  r.manifest_path = "/ckpt/j/7.json";
  f.run(decide_checkpoint(f.j("j"), r, f.now));
  ASSERT_TRUE(f.run(decide_handoff_start(f.j("j"), walltime(), f.now)).ok());
  EXPECT_EQ(f.j("j").status, job_status::handoff);
  EXPECT_TRUE(idle_workers(f.w).empty()) << "a worker in handoff is busy";
  auto d = f.run(decide_worker_lost(f.j("j"), loss_cause::reaped, f.now));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.events[0].type(), "job.requeued_after_reap");
  EXPECT_EQ(f.j("j").status, job_status::queued);
  EXPECT_EQ(f.j("j").latest_checkpoint_manifest_path, "/ckpt/j/7.json") << "the requeued job resumes from its checkpoint";
  EXPECT_TRUE(f.j("j").assigned_worker_id.empty());
}

TEST(JobCore, HandoffCompleteOnlyFromHandoff) {
  fixture f;
  f.create("j");
  f.add_worker("w");
  f.assign("j", "w");
  f.run(decide_start(f.j("j"), f.now));
  EXPECT_FALSE(decide_handoff_complete(f.j("j"), {}, f.now).ok());
  f.run(decide_handoff_start(f.j("j"), walltime(), f.now));
  checkpoint_report r;
  r.manifest_path = "/ckpt/j/9.json";
  ASSERT_TRUE(f.run(decide_handoff_complete(f.j("j"), r, f.now)).ok());
  EXPECT_EQ(f.j("j").status, job_status::queued);
  EXPECT_EQ(f.j("j").latest_checkpoint_manifest_path, "/ckpt/j/9.json");
}

TEST(JobCore, DistinctCausesAndTheAttemptCap) {
  fixture f;
  f.create("j", 2);
  f.add_worker("w");
  f.assign("j", "w");
  EXPECT_EQ(f.run(decide_worker_lost(f.j("j"), loss_cause::deregistered, f.now)).events[0].type(),
            "job.requeued_after_deregister");
  f.assign("j", "w");
  EXPECT_EQ(f.run(decide_worker_lost(f.j("j"), loss_cause::reaped, f.now)).events[0].type(), "job.requeued_after_reap");
  EXPECT_EQ(f.j("j").lost_workers, 1u) << "a deregistration gives the job back; a reap loses it";
  f.assign("j", "w");
  EXPECT_EQ(f.j("j").attempts, 3u);
  auto d = f.run(decide_worker_lost(f.j("j"), loss_cause::orphaned, f.now));
  EXPECT_EQ(d.events[0].type(), "job.failed");
  EXPECT_EQ(baton::core::payload_json(d.events[0])["reason"], "max_attempts_exceeded");
  EXPECT_EQ(f.j("j").status, job_status::failed);
  EXPECT_EQ(f.j("j").failure_reason, "max_attempts_exceeded");
}

// A relay of planned handoffs is the job working as meant: none of them uses up an attempt,
// so the first real loss after many handoffs only requeues the job.
TEST(JobCore, HandoffsAndGiveBacksDoNotUseUpAttempts) {
  fixture f;
  f.create("j", 2);
  f.add_worker("w");
  for (int i = 0; i < 6; ++i) {
    f.assign("j", "w");
    f.run(decide_start(f.j("j"), f.now));
    f.run(decide_handoff_start(f.j("j"), walltime(), f.now));
    ASSERT_TRUE(f.run(decide_handoff_complete(f.j("j"), {}, f.now)).ok());
    f.assign("j", "w");  // a pilot with no time left hands it straight back
    f.run(decide_worker_lost(f.j("j"), loss_cause::deregistered, f.now));
  }
  EXPECT_EQ(f.j("j").attempts, 12u);
  f.assign("j", "w");
  auto d = f.run(decide_worker_lost(f.j("j"), loss_cause::reaped, f.now));
  EXPECT_EQ(d.events[0].type(), "job.requeued_after_reap");
  EXPECT_EQ(f.j("j").status, job_status::queued);
  EXPECT_EQ(to_json(f.j("j"), f.now)["lost_workers"], 1);
}

TEST(JobCore, RequeueingTwiceNamesTheFirstClone) {
  fixture f;
  f.create("old");
  f.add_worker("w");
  f.assign("old", "w");
  f.run(decide_fail(f.j("old"), payload_failed(), f.now));
  ASSERT_TRUE(f.run(decide_requeue(f.j("old"), "clone-1", f.now)).ok());
  auto again = decide_requeue(f.j("old"), "clone-2", f.now);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error->kind, error_kind::conflict);
  EXPECT_EQ(again.error->code, "already_requeued");
  EXPECT_EQ(again.error->details["requeued_as"], "clone-1");
  EXPECT_EQ(f.w.jobs.count("clone-2"), 0u);
}

TEST(JobCore, RequeueCloneCarriesTheCheckpointPath) {
  fixture f;
  f.create("old");
  f.add_worker("w");
  f.assign("old", "w");
  checkpoint_report r;
  r.manifest_path = "/ckpt/old/3.json";
  f.run(decide_checkpoint(f.j("old"), r, f.now));
  f.run(decide_fail(f.j("old"), payload_failed(), f.now));
  EXPECT_FALSE(decide_requeue(f.j("old"), "new", f.now).events.empty());
  ASSERT_TRUE(f.run(decide_requeue(f.j("old"), "new", f.now)).ok());
  EXPECT_EQ(f.j("new").status, job_status::queued);
  EXPECT_EQ(f.j("new").latest_checkpoint_manifest_path, "/ckpt/old/3.json");
  EXPECT_EQ(f.j("new").requeued_from, "old");
  EXPECT_EQ(f.j("old").requeued_to, std::vector<std::string>{"new"});
  EXPECT_EQ(f.j("old").status, job_status::failed) << "terminal jobs stay as they were";
  EXPECT_FALSE(decide_requeue(f.j("new"), "x", f.now).ok()) << "only terminal jobs can be requeued";
}

TEST(JobCore, ProgressRecordsChangesOnly) {
  fixture f;
  f.create("j");
  f.add_worker("w");
  f.assign("j", "w");
  EXPECT_EQ(f.run(decide_progress(f.j("j"), "w", 0.5, std::nullopt, f.now)).events.size(), 1u);
  EXPECT_TRUE(decide_progress(f.j("j"), "w", 0.5, std::nullopt, f.now).events.empty());
  EXPECT_TRUE(decide_progress(f.j("j"), "other", 0.7, std::nullopt, f.now).events.empty());
}

TEST(WorkerCore, PlaceholderIsAdoptedAtomicallyOnlyWithTheSameImage) {
  world w;
  time_us t = 1'000;
  apply(w, "worker/ph1", "worker.placeholder_created",
        {{"provider_id", "clusterA:4242"}, {"worker_image_key", "gromacs"}, {"gpu_count", 1}}, t);
  ASSERT_TRUE(w.workers.at("ph1").placeholder);
  EXPECT_TRUE(idle_workers(w).empty()) << "a placeholder is never offered work";
  EXPECT_EQ(w.placeholder_by_provider.at("clusterA:4242"), "ph1");

  register_worker wrong{"fresh", platform::hpc, "A100", 1, 80, "amber", "clusterA:4242", ""};
  auto refused = decide_register(w.find_worker("ph1"), wrong, t);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error->kind, error_kind::conflict);
  EXPECT_EQ(refused.error->message, "worker image does not match queued provider allocation: expected gromacs, got amber");

  register_worker right{"fresh", platform::hpc, "A100", 1, 80, "gromacs", "clusterA:4242", "hash"};
  auto adopted = decide_register(w.find_worker("ph1"), right, t + 5);
  ASSERT_TRUE(adopted.ok());
  ASSERT_EQ(adopted.events.size(), 1u);
  EXPECT_EQ(adopted.events[0].stream, worker_stream("ph1")) << "the placeholder's id is kept";
  EXPECT_EQ(adopted.events[0].type(), "worker.placeholder_adopted");
  apply(w, adopted, t + 5);
  const auto& wk = w.workers.at("ph1");
  EXPECT_FALSE(wk.placeholder);
  EXPECT_EQ(wk.gpu_model, "A100");
  EXPECT_EQ(wk.registered_at, t);
  EXPECT_FALSE(w.placeholder_by_provider.count("clusterA:4242"));
  EXPECT_EQ(idle_workers(w).size(), 1u);
  EXPECT_FALSE(w.workers.count("fresh"));
}

// After jobs go in and out of the queue in every way, with submit-time ties across
// "qos/user" groups, the queue maps hold exactly the queued jobs, in submit-time then id
// order, as a world rebuilt from scratch holds them.
TEST(JobCore, QueueMapsFollowEveryJobInAndOut) {
  fixture f;
  decision batch;  // twelve jobs submitted in one decision: one submit time, ties broken by id
  for (int i = 0; i < 12; ++i) {
    create_job c{"j" + std::to_string(i), "t", "/b", "img", ""};
    c.user = i % 3 ? "alice" : "bob";
    c.qos = i % 2 ? "normal" : "high";
    for (auto& e : decide_create(nullptr, c, f.now).events) batch.events.push_back(std::move(e));
  }
  f.run(batch);
  for (int i = 0; i < 4; ++i) f.add_worker("w" + std::to_string(i));
  f.assign("j0", "w0");
  f.assign("j5", "w1");
  f.run(decide_worker_lost(f.j("j5"), loss_cause::reaped, f.now));  // back to the queue
  f.assign("j7", "w2");
  f.run(decide_cancel(f.j("j3"), false, f.now));
  f.run(decide_hold(f.j("j4"), false, f.now));  // held jobs stay queued
  f.run(decide_requeue(f.j("j3"), "j3-again", f.now));
  f.run(decide_complete(f.j("j0"), f.now));

  auto keys = [](const std::map<std::pair<time_us, std::string_view>, job*>& m) {
    std::vector<std::string> out;
    for (const auto& [key, j] : m) out.emplace_back(key.second);
    return out;
  };
  std::vector<const job*> in_order;  // the queued jobs by submit time, then id
  for (const auto& [id, j] : f.w.jobs.by_id())
    if (j.status == job_status::queued) in_order.push_back(&j);
  std::sort(in_order.begin(), in_order.end(),
            [](const job* a, const job* b) { return std::tie(a->created_at, a->id) < std::tie(b->created_at, b->id); });
  std::vector<std::string> queued;
  std::map<std::string, std::vector<std::string>> groups;
  for (const job* j : in_order) {
    queued.push_back(j->id);
    groups[j->qos + "/" + j->user].push_back(j->id);
  }
  EXPECT_EQ(keys(f.w.queued), queued);
  EXPECT_EQ(queued.size(), 10u);
  EXPECT_EQ(queued.back(), "j3-again");  // submitted last; the other nine tie on submit time
  for (const auto& [group, members] : f.w.queued_by_qos_user) EXPECT_EQ(keys(members), groups[group]) << group;

  world rebuilt;
  for (const auto& [id, j] : f.w.jobs.by_id()) rebuilt.jobs.emplace(id, j);
  for (const auto& [id, wk] : f.w.workers) rebuilt.workers.emplace(id, wk);
  rebuild_indexes(rebuilt);
  EXPECT_EQ(keys(rebuilt.queued), keys(f.w.queued));
  for (const auto& [group, members] : f.w.queued_by_qos_user) EXPECT_EQ(keys(rebuilt.queued_by_qos_user[group]), keys(members));

  // Every queued job leaves: the maps empty out.
  for (const auto& id : queued) f.run(decide_cancel(f.j(id), false, f.now));
  EXPECT_TRUE(f.w.queued.empty());
  for (const auto& [group, members] : f.w.queued_by_qos_user) EXPECT_TRUE(members.empty()) << group;
}

// A job reaches its association's usage and its QOS/user and user counters through its group's
// slots, which the world finds once (job_group_slots, pointed to by the job's job_group_ref);
// they must be its own group's, and a copy of the job, which is not the job the world holds,
// must not point to them.
TEST(JobCore, GroupSlotsAreTheJobsOwnGroupsAndStayWithTheJobTheWorldHolds) {
  fixture f;
  f.create_for("a1", "alice", "physics");
  f.create_for("b1", "bob", "chemistry");
  f.create_for("a2", "alice", "physics");
  f.add_worker("w0");
  f.assign("b1", "w0");

  const job& b1 = f.j("b1");
  ASSERT_NE(b1.slots.group, nullptr);
  ASSERT_NE(b1.slots.group->usage, nullptr);
  EXPECT_EQ(*b1.slots.group->association, "chemistry/bob");
  EXPECT_EQ(b1.slots.group->usage, &f.w.usage.at("chemistry/bob"));
  EXPECT_EQ(b1.slots.group->running_in_qos, &f.w.running_by_qos_user.at("normal/bob"));
  EXPECT_EQ(*b1.slots.group->running_in_qos, 1u);
  EXPECT_EQ(f.w.running_by_qos_user.at("normal/alice"), 0u) << "alice's group counts nothing of bob's";
  EXPECT_EQ(b1.slots.group->active_of_user, &f.w.active_jobs_by_user.at("bob"));
  EXPECT_EQ(f.w.active_jobs_by_user.at("alice"), 2u);
  EXPECT_EQ(f.j("a1").slots.group->queued_in_qos, &f.w.queued_by_qos_user.at("normal/alice"));
  EXPECT_EQ(f.w.queued_by_qos_user.at("normal/alice").size(), 2u);
  EXPECT_TRUE(f.w.queued_by_qos_user.at("normal/bob").empty());

  job copy = b1;
  EXPECT_EQ(copy.slots.group, nullptr);
  job moved = std::move(copy);
  EXPECT_EQ(moved.slots.group, nullptr);
  copy = b1;
  EXPECT_EQ(copy.slots.group, nullptr) << "assigned from the world's job";
  EXPECT_NE(b1.slots.group, nullptr) << "the world's job keeps its own";
}

// The world finds a group's slots once, by account, user and QOS together: two groups whose
// names run together alike ("a" + "bc" and "ab" + "c") are still two groups.
TEST(JobCore, GroupSlotsTellApartGroupsWhoseNamesRunTogether) {
  fixture f;
  f.create_for("x", "bc", "a");
  f.create_for("y", "c", "ab");
  f.create_for("z", "bc", "a");
  EXPECT_EQ(*f.j("x").slots.group->association, "a/bc");
  EXPECT_EQ(*f.j("y").slots.group->association, "ab/c");
  EXPECT_EQ(f.j("y").slots.group->active_of_user, &f.w.active_jobs_by_user.at("c"));
  EXPECT_EQ(f.j("y").slots.group->queued_in_qos, &f.w.queued_by_qos_user.at("normal/c"));
  EXPECT_EQ(f.w.active_jobs_by_user.at("bc"), 2u);
  EXPECT_EQ(f.w.active_jobs_by_user.at("c"), 1u);
  EXPECT_EQ(f.j("z").slots.group, f.j("x").slots.group) << "one group, one set of slots";
  EXPECT_EQ(f.w.group_slots.size(), 2u);
}

// The world's job table (core/memory/job_table.hpp) is a hash table: its walks must still go in id
// order whatever order the jobs came in, and a job must stay where it is while the table
// grows (indexes point at jobs and at their ids).
TEST(JobTable, WalksInIdOrderAndKeepsEachJobInPlaceAsItGrows) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5000; ++i) ids.push_back("job-" + std::to_string(i * 7919 % 5000));
  std::shuffle(ids.begin(), ids.end(), std::mt19937(20261128));
  job_table table;
  std::vector<std::pair<std::string, const job*>> early;
  for (const auto& id : ids) {
    job& j = table.find_or_add(id);
    EXPECT_EQ(j.id, id);
    if (early.size() < 50) early.emplace_back(id, &j);
  }
  ASSERT_EQ(table.size(), ids.size());
  for (const auto& [id, at] : early) EXPECT_EQ(table.find(id), at) << id << " moved while the table grew";

  table.find_or_add(ids[0]).title = "kept";
  EXPECT_EQ(table.find_or_add(ids[0]).title, "kept") << "an existing job is found, not made again";
  job other;
  other.title = "other";
  EXPECT_EQ(table.emplace(ids[0], other).title, "kept") << "emplace keeps the job already there";
  other.id = "not its key";
  EXPECT_EQ(table.emplace("fresh", other).id, "fresh") << "a job is kept under its own id: emplace sets it";
  EXPECT_EQ(table.find("fresh")->title, "other");
  table.erase("fresh");

  table.erase(ids[1]);
  EXPECT_EQ(table.find(ids[1]), nullptr);
  EXPECT_EQ(table.count(ids[1]), 0u);
  std::vector<std::string> want(ids.begin(), ids.end());
  want.erase(std::find(want.begin(), want.end(), ids[1]));
  std::sort(want.begin(), want.end());
  std::vector<std::string> walked;
  for (const auto& [id, j] : table.by_id()) {
    EXPECT_EQ(id, j.id);
    walked.push_back(id);
  }
  EXPECT_EQ(walked, want);
  size_t folded = 0;
  table.for_each_unordered([&](const job&) { ++folded; });
  EXPECT_EQ(folded, want.size());
}

// The table's slots are probed linearly and an erase shifts the run after its hole back
// (core/memory/job_table.hpp): a random mix of adds and erases, checked against a std::set after
// every step, finds every job left and none gone, at every size the table passes through.
// The job table's jobs live in a pool (core/memory/job_pool.hpp): places a cache line aligned, an odd
// number of lines apart within a block, blocks doubling up to the most places 2 MiB holds,
// never handed out twice while taken, and memory given back is taken first (under
// AddressSanitizer it is poisoned until then).
TEST(JobPool, HandsOutAlignedPlacesAnOddNumberOfLinesApartAndReusesWhatComesBack) {
  static_assert(job_pool::stride >= sizeof(job));
  static_assert(job_pool::stride % job_pool::line == 0 && (job_pool::stride / job_pool::line) % 2 == 1);
  static_assert(job_pool::max_block * job_pool::stride <= (size_t{2} << 20));
  static_assert((job_pool::max_block + 1) * job_pool::stride > (size_t{2} << 20));
  std::vector<size_t> blocks;  // places per block, up to and past the largest
  for (size_t places = job_pool::first_block; blocks.size() < 2 || blocks[blocks.size() - 2] < job_pool::max_block;
       places = job_pool::next_block(places))
    blocks.push_back(places);
  EXPECT_EQ(blocks.back(), job_pool::max_block);
  for (size_t b = 1; b < blocks.size(); ++b) EXPECT_LE(blocks[b - 1], blocks[b]);
  job_pool pool;
  std::vector<char*> at;
  size_t total = 0;
  for (size_t places : blocks) total += places;
  for (size_t i = 0; i < total + 3; ++i) at.push_back(static_cast<char*>(pool.take()));
  for (char* p : at) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % job_pool::line, 0u);
  size_t first = 0;
  for (size_t places : blocks) {
    for (size_t i = first + 1; i < first + places; ++i)
      EXPECT_EQ(at[i] - at[i - 1], static_cast<std::ptrdiff_t>(job_pool::stride)) << "place " << i;
    first += places;
  }
  EXPECT_EQ(std::set<char*>(at.begin(), at.end()).size(), at.size()) << "no place handed out twice";
  pool.give_back(at[5]);
  pool.give_back(at[9]);
  EXPECT_EQ(pool.take(), at[9]) << "memory given back is taken first";
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_TRUE(__asan_address_is_poisoned(at[5])) << "memory holding no job is poisoned";
  EXPECT_FALSE(__asan_address_is_poisoned(at[9]));
  EXPECT_TRUE(__asan_address_is_poisoned(at.back() + job_pool::stride)) << "a block's places not taken yet";
#endif
  EXPECT_EQ(pool.take(), at[5]);
}

TEST(JobTable, FindsEveryJobLeftAfterAnyMixOfAddsAndErases) {
  std::mt19937 rng(20261128);
  job_table table;
  std::set<std::string> want;
  std::vector<std::string> pool;
  for (int i = 0; i < 600; ++i) pool.push_back("j" + std::to_string(i));
  for (int step = 0; step < 20000; ++step) {
    const std::string& id = pool[rng() % pool.size()];
    if (rng() % 3 == 0) {
      table.erase(id);
      want.erase(id);
    } else {
      EXPECT_EQ(table.find_or_add(id).id, id);
      want.insert(id);
    }
    if (step % 97 != 0) continue;
    ASSERT_EQ(table.size(), want.size()) << "step " << step;
    for (const auto& p : pool) {
      const job* j = table.find(p);
      ASSERT_EQ(j != nullptr, want.count(p) == 1) << p << " at step " << step;
      if (j) {
        ASSERT_EQ(j->id, p);
      }
      ASSERT_EQ(table.find(job_table::key_of(p)), j) << "a key hashed ahead finds the same job";
    }
  }
  std::vector<std::string> walked;
  for (const auto& [id, j] : table.by_id()) walked.push_back(id);
  EXPECT_EQ(walked, std::vector<std::string>(want.begin(), want.end()));
  EXPECT_THROW(table.at("absent"), std::out_of_range);
}
