// Who goes first, through the application layer (core::decide with a fake clock, no actors):
// the evaluation order (partition tier before priority), age that stops while a job is held,
// fair share between users, GPU requests, validation and the per-user cap, FIFO for logs
// written before priorities existed, and a replay of the same events giving the same queue.
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include <cmath>

#include "core/world/priority.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
namespace C = core::commands;

namespace {

constexpr core::time_us second = 1'000'000, hour = 3600 * second, day = 24 * hour;

struct queue_fixture : test::core_under_test {
  principal admin = principal::operator_named("admin");

  queue_fixture() {
    s.priority.partitions = {{"normal", 1, 1}, {"test", 100, 10}};
    s.priority.accounts = {{"chem", "root", 1, {{"ann", 1}}}, {"phys", "root", 1, {{"cy", 1}}}};
  }
  std::string job(const std::string& name, std::function<void(C::create_job&)> tweak = {}) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/b/" + name;
    if (tweak) tweak(c);
    auto o = run(admin, c);
    EXPECT_FALSE(o.answer.error) << o.answer.error->message;
    return c.id;
  }
  std::string worker(const std::string& name, int gpus = 1) { return register_worker(test::uid(name), gpus); }
  void recalculate() { EXPECT_FALSE(run(principal::loop(), C::recalculate_priorities{}).answer.error); }
  core::priority_explained explain(const std::string& id) { return core::explain_priority(w, *w.find_job(id)); }
};

}  // namespace

TEST(queue_order, TestPartitionIsConsideredBeforeAHigherPriorityNormalJob) {
  queue_fixture f;
  f.s.priority.multifactor.weights.partition = 0;  // only age counts: the older normal job has the higher priority
  f.recalculate();
  auto normal = f.job("normal");
  f.now += day;
  auto test_job = f.job("test", [](C::create_job& c) { c.partition = "test"; });
  f.now += second;
  f.recalculate();
  EXPECT_GT(f.explain(normal).priority, f.explain(test_job).priority);
  EXPECT_EQ(f.explain(test_job).tier, 100);
  EXPECT_EQ(core::queue_in_evaluation_order(f.w), (std::vector<std::string>{test_job, normal}));
  auto w1 = f.worker("w1");
  EXPECT_EQ(f.poll(w1), test_job) << "partition tier comes before priority ";
  auto w2 = f.worker("w2");
  EXPECT_EQ(f.poll(w2), normal);
}

TEST(queue_order, AgeStopsAccruingWhileHeld) {
  queue_fixture f;
  f.recalculate();
  auto id = f.job("held");
  f.now += day;
  EXPECT_FALSE(f.run(f.admin, C::hold_job{id}).answer.error);
  EXPECT_EQ(core::pending_reason(f.w, *f.w.find_job(id)), "JobHeld");
  f.now += 2 * day;
  f.recalculate();
  EXPECT_DOUBLE_EQ(f.explain(id).multifactor.age.raw, 86400) << "one day eligible, two held";
  EXPECT_FALSE(f.run(f.admin, C::release_job{id}).answer.error);
  f.now += day;
  f.recalculate();
  EXPECT_DOUBLE_EQ(f.explain(id).multifactor.age.raw, 2 * 86400.0);
  EXPECT_DOUBLE_EQ(f.explain(id).multifactor.age.normalized, 2.0 / 5) << "max age 5 days";
}

TEST(queue_order, HeldJobsAreNotAssignedUntilReleased) {
  queue_fixture f;
  f.recalculate();
  auto id = f.job("h", [](C::create_job& c) { c.hold = true; });
  auto w1 = f.worker("w1");
  EXPECT_FALSE(f.poll(w1));
  EXPECT_FALSE(f.run(f.admin, C::release_job{id}).answer.error);
  EXPECT_EQ(f.poll(w1), id);
  auto hold_running = f.run(f.admin, C::hold_job{id}).answer;
  ASSERT_TRUE(hold_running.error);
  EXPECT_EQ(hold_running.error->code, "job_not_queued");
}

TEST(queue_order, TheUserWithLessUsageGoesFirst) {
  queue_fixture f;
  f.recalculate();
  // ann runs a job for ten hours; cy has used nothing.
  auto old = f.job("ann-old", [](C::create_job& c) { c.user = "ann"; });
  auto w1 = f.worker("w1");
  EXPECT_EQ(f.poll(w1), old);
  EXPECT_FALSE(f.run(principal::of_worker(w1), C::start_job{old}).answer.error);
  f.now += 10 * hour;
  EXPECT_FALSE(f.run(principal::of_worker(w1), C::complete_job{old}).answer.error);
  auto ann = f.job("ann-new", [](C::create_job& c) { c.user = "ann"; });
  f.now += second;
  auto cy = f.job("cy-new", [](C::create_job& c) { c.user = "cy"; });
  f.now += second;
  f.recalculate();
  EXPECT_EQ(f.w.find_job(ann)->account, "chem") << "a user's default account is the first that lists them";
  EXPECT_GT(f.explain(cy).multifactor.fairshare.normalized, f.explain(ann).multifactor.fairshare.normalized);
  auto w2 = f.worker("w2");  // w1 has been silent for ten hours: stale
  EXPECT_EQ(f.poll(w2), cy) << "cy submitted later but has used less";
  const auto& shares = f.w.priority.shares;
  ASSERT_TRUE(shares.count("chem/ann"));
  // Ten GPU-hours, each decayed from when it was spent (half-life 7 days) to the recalculation
  // two seconds after the run: h/ln2 · (2^(-2 s/h) - 2^(-(10 h + 2 s)/h)).
  double h = 7 * 86400.0;
  double expected = h / std::log(2.0) * (std::exp2(-2 / h) - std::exp2(-(36000 + 2) / h));
  EXPECT_NEAR(shares.at("chem/ann").usage, expected, 1e-6 * expected);
}

TEST(queue_order, AJobGoesOnlyToAWorkerWithEnoughGpus) {
  queue_fixture f;
  f.recalculate();
  auto big = f.job("big", [](C::create_job& c) { c.gpu_count = 2; });
  auto small_worker = f.worker("small", 1);
  EXPECT_FALSE(f.poll(small_worker));
  auto small_job = f.job("small-job");
  EXPECT_EQ(f.poll(small_worker), small_job) << "the 2-GPU job ahead of it cannot use this worker";
  auto big_worker = f.worker("big-worker", 4);
  EXPECT_EQ(f.poll(big_worker), big);
}

TEST(queue_order, UnknownNamesAreRefusedNamingTheField) {
  queue_fixture f;
  for (auto [field, tweak] : std::vector<std::pair<std::string, std::function<void(C::create_job&)>>>{
           {"partition", [](C::create_job& c) { c.partition = "nope"; }},
           {"qos", [](C::create_job& c) { c.qos = "nope"; }},
           {"account", [](C::create_job& c) { c.account = "nope"; }}}) {
    C::create_job c;
    c.id = test::uid("bad-" + field);
    c.title = "t";
    c.input_bundle_path = "/b";
    tweak(c);
    auto r = f.run(f.admin, c).answer;
    ASSERT_TRUE(r.error) << field;
    EXPECT_EQ(r.error->kind, core::error_kind::invalid);
    EXPECT_EQ(r.error->field, field);
  }
}

TEST(queue_order, TheJobCapPerUserAnswersOverLimit) {
  queue_fixture f;
  f.s.priority.max_jobs_per_user = 2;
  f.job("a1", [](C::create_job& c) { c.user = "ann"; });
  auto second_job = f.job("a2", [](C::create_job& c) { c.user = "ann"; });
  C::create_job third;
  third.id = test::uid("a3");
  third.title = "t";
  third.input_bundle_path = "/b";
  third.user = "ann";
  auto r = f.run(f.admin, third).answer;
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind, core::error_kind::over_limit);
  EXPECT_EQ(r.error->code, "max_jobs_per_user");
  f.job("cy1", [](C::create_job& c) { c.user = "cy"; });  // another user is not affected
  EXPECT_FALSE(f.run(f.admin, C::cancel_job{second_job, true}).answer.error);
  EXPECT_FALSE(f.run(f.admin, third).answer.error) << "a finished job frees its place";
}

TEST(queue_order, BeforeAnyRecalculationTheQueueIsFifo) {
  queue_fixture f;  // a log written before priorities existed has no recalculation event
  auto first = f.job("first", [](C::create_job& c) { c.nice = 1000000; });
  f.now += second;
  auto later = f.job("later", [](C::create_job& c) { c.partition = "test"; });
  EXPECT_EQ(core::queue_in_evaluation_order(f.w), (std::vector<std::string>{first, later}));
}

TEST(queue_order, ReplayingTheEventsGivesTheSameQueue) {
  queue_fixture f;
  f.recalculate();
  for (int i = 0; i < 20; ++i) {
    f.job("j" + std::to_string(i), [i](C::create_job& c) {
      c.user = i % 2 ? "ann" : "cy";
      c.nice = (i * 37) % 5 * 100;
      c.partition = i % 7 == 0 ? "test" : "normal";
    });
    f.now += 17 * hour;
    if (i % 5 == 4) f.recalculate();
  }
  auto w1 = f.worker("w1");
  f.poll(w1);
  f.now += hour;
  f.recalculate();
  core::world replayed;
  for (const auto& [d, at] : f.log) core::apply(replayed, d, at);
  EXPECT_EQ(core::queue_in_evaluation_order(replayed), core::queue_in_evaluation_order(f.w));
  for (const auto& [id, j] : f.w.jobs.by_id()) EXPECT_EQ(replayed.find_job(id)->priority, j.priority) << id;
}

TEST(queue_order, AQosRunningLimitHoldsBackTheUsersOtherJobsAndTheirAge) {
  queue_fixture f;
  f.s.priority.qos = {{"normal", 0, 0}, {"short", 100, 1}};  // one running job per user in short
  f.recalculate();
  auto first = f.job("a1", [](C::create_job& c) {
    c.user = "ann";
    c.qos = "short";
  });
  auto second = f.job("a2", [](C::create_job& c) {
    c.user = "ann";
    c.qos = "short";
  });
  auto other = f.job("c1", [](C::create_job& c) {
    c.user = "cy";
    c.qos = "short";
  });
  auto w1 = f.worker("w1");
  EXPECT_EQ(f.poll(w1), first);
  EXPECT_EQ(core::pending_reason(f.w, *f.w.find_job(second)), "QOSMaxJobsPerUserLimit");
  auto w2 = f.worker("w2");
  EXPECT_EQ(f.poll(w2), other) << "ann's second job waits; cy's goes";
  auto w3 = f.worker("w3");
  EXPECT_FALSE(f.poll(w3));
  f.now += hour;
  EXPECT_FALSE(f.run(principal::of_worker(w1), C::start_job{first}).answer.error);
  EXPECT_FALSE(f.run(principal::of_worker(w1), C::complete_job{first}).answer.error);
  f.now += hour;
  f.recalculate();
  EXPECT_DOUBLE_EQ(f.explain(second).multifactor.age.raw, 3600) << "no age while over the limit";
  auto w4 = f.worker("w4");
  EXPECT_EQ(f.poll(w4), second) << "ann's first job ended: the second may run";
  core::world replayed;
  for (const auto& [d, at] : f.log) core::apply(replayed, d, at);
  EXPECT_EQ(replayed.find_job(second)->status, core::job_status::assigned);
}

TEST(queue_order, LatticeEnergyFactorFollowsThePriceSchedule) {
  queue_fixture f;
  ASSERT_TRUE(core::set_policy_name(f.s.priority, "lattice:service"));
  f.s.priority.energy_prices.assign(24, 0.30);
  f.s.priority.energy_prices[3] = 0.06;  // cheap at 03:00 UTC
  f.now = 1'700'000'000'000'000;         // 2023-11-14 22:13 UTC: an expensive hour
  f.recalculate();
  auto id = f.job("lattice");
  EXPECT_NEAR(f.explain(id).lattice.f[6], 0.0, 1e-12) << "1 - 0.30 / 0.30";
  f.now += 5 * hour;  // 03:13 UTC
  f.recalculate();
  EXPECT_NEAR(f.explain(id).lattice.f[6], 0.8, 1e-12) << "1 - 0.06 / 0.30";
  EXPECT_NEAR(f.explain(id).lattice.weighted[6], 0.10 * 0.8, 1e-12) << "service weighs energy 0.10";
}

// Tied sibling accounts list their rows before their merged children (core/policy/fair_tree.hpp):
// a user's target share still follows its own path down the tree.
TEST(FairShare, TargetsFollowTheAccountTreeWhenSiblingAccountsTie) {
  core::world w;
  core::priority_policy policy;
  policy.accounts = {
      {"chem", "root", 60, {{"ann", 1}}}, {"phys", "root", 40, {{"cy", 1}, {"di", 3}}}, {"bio", "phys", 10, {{"eve", 1}}}};
  auto d = core::decide_recalculation(w, policy, 1'000'000);  // no usage anywhere: every sibling ties
  ASSERT_FALSE(d.events.empty());
  const auto shares = baton::core::payload_json(d.events[0]).at("shares");
  EXPECT_DOUBLE_EQ(shares.at("chem/ann").at("target").get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(shares.at("phys/cy").at("target").get<double>(), 0.4 * 1 / 14);
  EXPECT_DOUBLE_EQ(shares.at("phys/di").at("target").get<double>(), 0.4 * 3 / 14);
  EXPECT_DOUBLE_EQ(shares.at("bio/eve").at("target").get<double>(), 0.4 * 10 / 14);
}

// The answer to a creation shows the priority the job has once created (what GET shows right
// after), not 0.
TEST(queue_order, ACreatedJobIsAnsweredWithItsPriority) {
  queue_fixture f;
  f.s.priority.multifactor.weights.partition = 1000;
  f.s.priority.multifactor.weights.fairshare = 5000;
  f.recalculate();
  C::create_job c;
  c.id = test::uid("answered");
  c.title = "answered";
  c.input_bundle_path = "/b";
  c.partition = "test";
  auto o = f.run(f.admin, c);
  ASSERT_FALSE(o.answer.error);
  const auto& row = std::get<core::results::job_row>(o.answer.value);
  EXPECT_GT(f.w.find_job(c.id)->priority, 0);
  EXPECT_EQ(row.j.priority, f.w.find_job(c.id)->priority);
  EXPECT_EQ(row.j.priority_tier, f.w.find_job(c.id)->priority_tier);
}

// Usage is charged from a job's start, as Slurm's: an assignment whose payload never started
// (the worker vanished before it) charges nothing; a started one from its start.
TEST(queue_order, UsageIsChargedFromTheStartNotTheAssignment) {
  queue_fixture f;
  f.recalculate();
  auto never = f.job("never", [](C::create_job& c) {
    c.user = "ann";
    c.account = "chem";
  });
  auto w1 = f.worker("w1");
  ASSERT_EQ(f.poll(w1), never);
  f.now += 3600 * second;
  ASSERT_FALSE(f.run(principal::of_worker(w1), C::deregister{w1}).answer.error);  // requeued, never started
  const auto& u = f.w.usage.at("chem/ann");
  EXPECT_EQ(u.closed, 0.0) << "an hour assigned, never started: no usage";
  EXPECT_TRUE(u.running.empty());
  auto w2 = f.worker("w2");
  ASSERT_EQ(f.poll(w2), never);
  f.now += 600 * second;  // assigned, not started yet
  ASSERT_FALSE(f.run(principal::of_worker(w2), C::start_job{never}).answer.error);
  ASSERT_EQ(f.w.usage.at("chem/ann").running.count(never), 1u);
  EXPECT_EQ(f.w.usage.at("chem/ann").running.at(never).started_at, f.now) << "open from the start";
  f.now += 100 * second;
  ASSERT_FALSE(f.run(principal::of_worker(w2), C::complete_job{never}).answer.error);
  EXPECT_NEAR(f.w.usage.at("chem/ann").closed, 100.0, 0.5) << "100 GPU-seconds from the start, not 700 from the assignment";
}

// Job size is normalised by what the sites offer, also before any worker registered (at
// start-up) and after the largest one left.
TEST(queue_order, JobSizeIsNormalisedByWhatTheSitesOfferNotWhoIsRegisteredNow) {
  queue_fixture f;
  f.s.priority.offered_gpu_count = 4;  // a configured cluster's workers have 4 GPUs
  f.recalculate();
  EXPECT_EQ(f.w.priority.max_gpu_count, 4u) << "no worker yet: the configured sites' largest";
  auto big = f.worker("big", 8);
  f.recalculate();
  EXPECT_EQ(f.w.priority.max_gpu_count, 8u);
  ASSERT_FALSE(f.run(principal::of_worker(big), C::deregister{big}).answer.error);
  f.recalculate();
  EXPECT_EQ(f.w.priority.max_gpu_count, 8u) << "the largest worker seen, gone or not";
  auto recorded = core::policy_from_json(core::to_json(f.s.priority));
  EXPECT_EQ(recorded.offered_gpu_count, 4u) << "recorded with the policy, so replay re-derives it";
}
