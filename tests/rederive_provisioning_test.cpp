// Re-derivation of the decisions the loops make about workers rather than jobs: a Slurm
// submission plan and a Salad replica target (decided on the world at the point their basis
// names), and a reap (decided again from the lease facts it recorded, the job's loss included).
#include "events/cbor_encode.hpp"
#include "support/forged_events.hpp"
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include "core/provisioning/cloud.hpp"
#include "core/app/decide.hpp"
#include "core/provisioning/provisioning_basis.hpp"
#include "core/world/scheduling.hpp"
#include "core/util/time.hpp"
#include "events/payload.hpp"
#include "replay/audit/rederive.hpp"
#include "support/core_log.hpp"

using namespace baton;

namespace {

// A log in a temp dir and the world it describes; each decision is recorded at its own time.
struct logged_world : test::core_log {
  void step(const core::decision& d, core::time_us at) { record(d.events, at); }
};

constexpr core::time_us s_ = 1'000'000;

core::cluster_spec cluster() {
  core::cluster_spec c;
  c.name = "c1";
  c.images = {"img"};
  c.max_pending = 3;
  c.gpu_type = "A100";
  c.gpu_count = 1;
  return c;
}

core::create_job job_named(const std::string& id) {
  core::create_job c;
  c.id = id;
  c.title = "t";
  c.input_bundle_path = "/b";
  c.worker_image_key = "img";
  return c;
}

core::register_worker gpu_worker(const std::string& id) {
  core::register_worker r;
  r.id = id;
  r.kind = core::platform::hpc;
  r.gpu_model = "A100";
  r.gpu_count = 1;
  r.worker_image_key = "img";
  return r;
}

void queue_jobs(logged_world& log, int n, core::time_us at) {
  for (int i = 0; i < n; ++i) log.step(core::decide_create(nullptr, job_named("j" + std::to_string(i)), at), at);
}

// Two jobs queued at t, and the one submission plan the cluster makes for them a second later
// (its record names that point as its basis).
std::vector<core::submission_plan> two_jobs_and_their_plan(logged_world& log, core::time_us t) {
  queue_jobs(log, 2, t);
  auto plans = core::plan_submissions(log.w, cluster(), {}, {}, 600 * s_, t + s_);
  core::record_plan_basis(plans, log.w, cluster(), {}, {}, 600 * s_, t + s_);
  return plans;
}

}  // namespace

TEST(RederiveProvisioning, ASlurmSubmissionPlanReDerivesAndAForgedCountIsNamed) {
  logged_world log;
  core::time_us t = 100 * s_;
  const auto spec = cluster();
  auto plans = two_jobs_and_their_plan(log, t);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].count, 2);
  // sbatch answered later; meanwhile a third job arrived (the plan was made before it).
  queue_jobs(log, 1, t + 2 * s_);
  log.step(core::decide_placeholder(log.w, spec, "p1", "img", "101", plans[0].record, t + 5 * s_), t + 5 * s_);
  auto ok = replay::rederive_decisions(*log.store);
  EXPECT_EQ(ok.provisioning_plans, 1u);
  EXPECT_EQ(ok.mismatches, 0u) << (ok.problems.empty() ? "" : ok.problems[0]);

  auto forged = plans[0].record;
  forged.count = 3;  // more allocations than the demand called for
  log.step(core::decide_placeholder(log.w, spec, "p2", "img", "102", forged, t + 6 * s_), t + 6 * s_);
  auto bad = replay::rederive_decisions(*log.store);
  EXPECT_EQ(bad.provisioning_plans, 2u);
  ASSERT_EQ(bad.mismatches, 1u);
  const auto& d = bad.divergences.at(0);
  EXPECT_EQ(d.type, "worker.placeholder_created");
  EXPECT_EQ(d.stream, "worker/p2");
  EXPECT_EQ(d.diff, nlohmann::json::parse(R"([{"op":"replace","path":"/count","value":2}])")) << d.diff;
}

TEST(RederiveProvisioning, APlanThatIsNotItsWorkerStreamsFirstEventIsReportedNotSkipped) {
  // Re-derivation finds placeholders through the stream index, as their worker stream's
  // first event (batond creates one only for a worker id no event has named). In a hand-made
  // log where another event comes first, the decision is not quietly left unchecked.
  logged_world log;
  core::time_us t = 100 * s_;
  const auto spec = cluster();
  auto plans = two_jobs_and_their_plan(log, t);
  ASSERT_EQ(plans.size(), 1u);
  auto placeholder = core::decide_placeholder(log.w, spec, "p1", "img", "101", plans[0].record, t + 5 * s_);
  ASSERT_EQ(placeholder.events.size(), 1u);
  log.record({{"worker/p1", core::ev::unknown_event{"worker.note", 1, events::encode_cbor(nlohmann::json{{"text", "first"}})}}},
             t + 4 * s_);
  log.step(placeholder, t + 5 * s_);
  auto r = replay::rederive_decisions(*log.store);
  ASSERT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.divergences.at(0).type, "worker.placeholder_created");
  EXPECT_EQ(r.divergences.at(0).stream, "worker/p1");
  EXPECT_NE(r.divergences.at(0).what.find("stream index"), std::string::npos) << r.divergences.at(0).what;
}

TEST(RederiveProvisioning, ASaladTargetReDerivesOnTheWorldItWasDecidedOn) {
  logged_world log;
  core::time_us t = 100 * s_;
  queue_jobs(log, 4, t);
  auto target = core::salad_target(log.w, "img", 10, {});
  core::record_target_basis(target, log.w, {});
  EXPECT_EQ(target.target, 4);  // four queued, no HPC worker
  // Salad's API answered later; meanwhile two more jobs came (decided now, the target would be 6).
  for (int i = 0; i < 2; ++i) log.step(core::decide_create(nullptr, job_named("late" + std::to_string(i)), t + s_), t + s_);
  log.step(core::decide_salad_scaled(0, target), t + 2 * s_);
  auto ok = replay::rederive_decisions(*log.store);
  EXPECT_EQ(ok.salad_targets, 1u);
  EXPECT_EQ(ok.mismatches, 0u) << (ok.problems.empty() ? "" : ok.problems[0]);

  auto forged = target;
  forged.record.target = 1;
  forged.target = 1;
  log.step(core::decide_salad_scaled(4, forged), t + 3 * s_);
  auto bad = replay::rederive_decisions(*log.store);
  ASSERT_EQ(bad.mismatches, 1u);
  EXPECT_EQ(bad.divergences.at(0).stream, "cloud/salad");
  EXPECT_EQ(bad.divergences.at(0).diff, nlohmann::json::parse(R"([{"op":"replace","path":"/target","value":4}])"));
}

TEST(RederiveProvisioning, AReapReDerivesFromItsLeaseFactsWithTheJobsLoss) {
  logged_world log;
  core::time_us t = 100 * s_;
  log.step(core::decide_register(nullptr, gpu_worker("w1"), t), t);
  queue_jobs(log, 1, t);
  auto pick = core::choose_job_for(log.w, "w1", {}, {}, t + s_);
  ASSERT_EQ(pick.job_id, "j0");
  log.step(baton::test::forged_assignment(log.w.jobs.at("j0"), "w1", pick.record, t + s_), t + s_);
  core::lease_book leases;
  leases.touch("w1", t + 2 * s_);
  core::scheduler_settings s;  // stale after 120 s
  const core::time_us reaped_at = t + 200 * s_;
  auto reap = core::reap(log.w, leases, s, reaped_at);
  ASSERT_GE(reap.events.size(), 2u);  // the reap and the job's requeue
  log.step(reap, reaped_at);
  auto ok = replay::rederive_decisions(*log.store);
  EXPECT_EQ(ok.reaps, 1u);
  EXPECT_EQ(ok.mismatches, 0u) << (ok.problems.empty() ? "" : ok.problems[0]);

  // A reap the facts do not support: a worker heard from 10 s before it was reaped.
  log.step(core::decide_register(nullptr, gpu_worker("w2"), reaped_at), reaped_at);
  core::lease_book fresh;
  fresh.touch("w2", reaped_at + 290 * s_);
  auto forged = core::reap(log.w, fresh, s, reaped_at + 500 * s_);  // a real reap of w2 ...
  ASSERT_EQ(forged.events.size(), 1u);
  auto& reaped = std::get<core::ev::worker_reaped>(forged.events[0].payload);
  reaped.last_heartbeat_at = util::format_time_us(reaped_at + 490 * s_);  // ... made to look hasty
  reaped.silent_seconds = 10.0;
  log.step(forged, reaped_at + 500 * s_);
  auto bad = replay::rederive_decisions(*log.store);
  EXPECT_EQ(bad.reaps, 2u);
  ASSERT_EQ(bad.mismatches, 1u);
  EXPECT_EQ(bad.divergences.at(0).stream, "worker/w2");
  EXPECT_NE(bad.divergences.at(0).what.find("not stale"), std::string::npos) << bad.divergences.at(0).what;
}

TEST(RederiveProvisioning, AReapWhoseJobLossWasNotRecordedIsCaught) {
  logged_world log;
  core::time_us t = 100 * s_;
  log.step(core::decide_register(nullptr, gpu_worker("w1"), t), t);
  queue_jobs(log, 1, t);
  auto pick = core::choose_job_for(log.w, "w1", {}, {}, t + s_);
  log.step(baton::test::forged_assignment(log.w.jobs.at("j0"), "w1", pick.record, t + s_), t + s_);
  core::lease_book leases;
  leases.touch("w1", t + 2 * s_);
  auto reap = core::reap(log.w, leases, core::scheduler_settings{}, t + 200 * s_);
  ASSERT_GE(reap.events.size(), 2u);
  reap.events.resize(1);  // the worker reaped, its job left holding it
  log.step(reap, t + 200 * s_);
  log.step(core::decide_create(nullptr, job_named("later"), t + 201 * s_), t + 201 * s_);
  auto bad = replay::rederive_decisions(*log.store);
  EXPECT_EQ(bad.mismatches, 1u);
  ASSERT_FALSE(bad.divergences.empty());
  EXPECT_EQ(bad.divergences.at(0).stream, "job/later");
}
