// Time in the model: the fit rule (core/planning/deadline.hpp), expected ends, and deadline-aware
// assignment on the poll path (core/world/scheduling.hpp).
#include "support/forged_events.hpp"
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include "core/planning/deadline.hpp"
#include "core/provisioning/provisioning.hpp"
#include "core/world/scheduling.hpp"
#include "core/util/time.hpp"

using namespace baton::core;

namespace {

constexpr time_us s = 1'000'000;  // one second in µs
const deadline_rule rule{3600, 600};

struct pool {
  world w;
  time_us now = 1'700'000'000 * s;
  int jobs = 0;

  // ends_in: seconds from now until the allocation ends (0: unknown).
  void worker(const std::string& id, int gpus, int64_t ends_in) {
    register_worker r{id, platform::hpc, "A100", gpus, 80, "img", "", ""};
    r.allocation_ends_at = ends_in ? now + ends_in * s : 0;
    apply(w, decide_register(nullptr, r, now), now);
  }
  void job(const std::string& id, std::optional<int64_t> limit, bool checkpoints) {
    create_job c{id, id, "/b", "img", "", {}, 5};
    c.time_limit_seconds = limit;
    c.checkpoints = checkpoints;
    time_us created = now - 1000 + ++jobs;  // submitted in this order, before now
    apply(w, decide_create(nullptr, c, created), created);
  }
  poll_choice poll(const std::string& worker_id) { return choose_job_for(w, worker_id, {}, rule, now); }
  void assign(const std::string& job_id, const std::string& worker_id, const nlohmann::json& record) {
    apply(w, baton::test::forged_assignment(w.jobs.at(job_id), worker_id, record, now), now);
  }
};

}  // namespace

TEST(FitRule, LimitFitsExactlyAtTheBoundary) {
  auto at = fit_of(3600 * s, int64_t{3600}, false, rule);
  EXPECT_TRUE(at.admitted);
  EXPECT_STREQ(at.rule, "fits");
  EXPECT_EQ(at.time_limit_seconds, 3600);
  auto short_by_1us = fit_of(3600 * s - 1, int64_t{3600}, false, rule);
  EXPECT_FALSE(short_by_1us.admitted);
  EXPECT_STREQ(short_by_1us.rule, "too_short");
}

TEST(FitRule, NoTimeLimitMeansTheDefault) {
  EXPECT_TRUE(fit_of(3600 * s, std::nullopt, false, rule).admitted);
  EXPECT_FALSE(fit_of(3600 * s - 1, std::nullopt, false, rule).admitted);
  EXPECT_EQ(fit_of(0, std::nullopt, false, rule).time_limit_seconds, 3600);
  deadline_rule two_hours{7200, 600};
  EXPECT_FALSE(fit_of(3600 * s, std::nullopt, false, two_hours).admitted);
  EXPECT_EQ(time_limit_of(std::nullopt, two_hours), 7200);
}

TEST(FitRule, CheckpointingJobNeedsMinUsefulWhenItsLimitDoesNotFit) {
  auto just_enough = fit_of(600 * s, int64_t{3600}, true, rule);
  EXPECT_TRUE(just_enough.admitted);
  EXPECT_STREQ(just_enough.rule, "checkpoint_min_useful");
  auto just_below = fit_of(600 * s - 1, int64_t{3600}, true, rule);
  EXPECT_FALSE(just_below.admitted);
  EXPECT_STREQ(just_below.rule, "too_short");
  // A short checkpointing job that fits is admitted by "fits", below min_useful too.
  auto fits = fit_of(300 * s, int64_t{300}, true, rule);
  EXPECT_TRUE(fits.admitted);
  EXPECT_STREQ(fits.rule, "fits");
  // A job that does not checkpoint never uses min_useful.
  EXPECT_FALSE(fit_of(3000 * s, int64_t{3600}, false, rule).admitted);
}

TEST(FitRule, WorkerWithoutKnownEndTakesAnything) {
  worker wk;
  job j;
  j.time_limit_seconds = 366 * 86400;
  j.checkpoints = false;
  auto f = fit_of(wk, j, rule, 5 * s);
  EXPECT_TRUE(f.admitted);
  EXPECT_STREQ(f.rule, "no_deadline");
  wk.allocation_ends_at = 10 * s;
  EXPECT_FALSE(fit_of(wk, j, rule, 5 * s).admitted);
  EXPECT_EQ(remaining_seconds(wk, 5 * s), 5);
  EXPECT_EQ(remaining_seconds(wk, 11 * s - 1), -1);
}

TEST(ExpectedEnd, CurrentSegmentStartPlusLimitOrDefault) {
  job j;
  EXPECT_FALSE(expected_end(j, rule)) << "not running: no expected end";
  j.segments.push_back({"w1", 100 * s, 200 * s});
  j.segments.push_back({"w2", 1000 * s, std::nullopt});
  EXPECT_EQ(expected_end(j, rule), 1000 * s + 3600 * s) << "the open segment, the default limit";
  j.time_limit_seconds = 60;
  EXPECT_EQ(expected_end(j, rule), 1060 * s);
  j.segments.back().ended_at = 1010 * s;
  EXPECT_FALSE(expected_end(j, rule));
}

TEST(DeadlineAssignment, PollerWithTenMinutesSkipsAJobItCannotFinish) {
  pool p;
  p.worker("pilot", 1, 600);
  p.job("long", 3600, false);
  EXPECT_FALSE(p.poll("pilot").job_id) << "a non-checkpointing hour does not fit ten minutes";
  p.job("short", 300, false);
  auto c = p.poll("pilot");
  ASSERT_EQ(c.job_id, "short") << "the older job that does not fit is skipped";
  const auto& d = c.record.at("deadline");
  EXPECT_EQ(d["rule"], "fits");
  EXPECT_EQ(d["remaining_seconds"], 600);
  EXPECT_EQ(d["time_limit_seconds"], 300);
  EXPECT_EQ(d["min_useful_seconds"], 600);
  EXPECT_EQ(d["default_time_limit_seconds"], 3600);
}

TEST(DeadlineAssignment, CheckpointingJobTakesTheWorkerWhenMinUsefulRemains) {
  pool p;
  p.worker("pilot", 1, 600);
  p.job("long-cp", std::nullopt, true);  // the default hour, but it checkpoints
  auto c = p.poll("pilot");
  ASSERT_EQ(c.job_id, "long-cp");
  EXPECT_EQ(c.record["deadline"]["rule"], "checkpoint_min_useful");
  EXPECT_EQ(c.record["deadline"]["time_limit_seconds"], 3600);
  p.now += 1;  // 599 s left: below min_useful
  EXPECT_FALSE(p.poll("pilot").job_id);
}

TEST(DeadlineAssignment, BetterWorkerThatCannotFitLeavesTheJobToTheNextOne) {
  pool p;
  p.worker("big-ending", 4, 600);  // ranks first (4 GPUs), ten minutes left
  p.worker("small", 1, 0);         // no known end
  p.job("long", 3600, false);
  p.job("short", 300, false);
  // Without deadlines big would take "long" and small "short". Now "long" is small's.
  auto small = p.poll("small");
  ASSERT_EQ(small.job_id, "long");
  EXPECT_EQ(small.record["taken_by_better_workers"], 0);
  EXPECT_EQ(small.record["deadline"]["rule"], "no_deadline");
  EXPECT_TRUE(small.record["deadline"]["remaining_seconds"].is_null());
  auto big = p.poll("big-ending");
  EXPECT_EQ(big.job_id, "short") << "the better worker still gets what fits it first";
  p.assign("short", "big-ending", big.record);
  EXPECT_EQ(p.poll("small").job_id, "long");
}

TEST(DeadlineAssignment, BetterWorkerThatFitsStillGoesFirst) {
  pool p;
  p.worker("big-ending", 4, 7200);  // two hours: fits the hour
  p.worker("small", 1, 600);
  p.job("long", 3600, false);
  p.job("short", 300, false);
  auto small = p.poll("small");
  EXPECT_EQ(small.job_id, "short") << "big takes long, small the next job that fits it";
  EXPECT_EQ(small.record["taken_by_better_workers"], 1);
  auto big = p.poll("big-ending");
  EXPECT_EQ(big.job_id, "long");
}

TEST(DeadlineAssignment, WhenEverythingFitsTheFastPathGivesTheSameAnswer) {
  pool with, without;
  for (auto* p : {&with, &without}) {
    p->worker("a", 2, p == &with ? 86400 : 0);
    p->worker("b", 1, p == &with ? 86400 : 0);
    p->job("j1", 3600, false);
    p->job("j2", std::nullopt, true);
  }
  for (const char* id : {"a", "b"}) {
    auto x = with.poll(id), y = without.poll(id);
    EXPECT_EQ(x.job_id, y.job_id) << id;
    auto rec = x.record;
    EXPECT_EQ(rec["deadline"]["rule"], "fits") << id;
    rec.erase("deadline");
    EXPECT_EQ(rec, y.record) << id << ": only the deadline entry differs";
    EXPECT_FALSE(y.record.contains("deadline")) << "no known allocation end: records as before";
  }
}

TEST(DeadlineAssignment, RecordedRuleIsReadBack) {
  // Inside an assignment's deadline fit...
  deadline_fit_record fit;
  fit.default_time_limit_seconds = 120;
  fit.min_useful_seconds = 30;
  fit.rule = "fits";
  auto r = rule_of(fit);
  EXPECT_EQ(r.default_time_limit_seconds, 120);
  EXPECT_EQ(r.min_useful_seconds, 30);
  EXPECT_EQ(rule_of(deadline_fit_record{}).default_time_limit_seconds, deadline_rule{}.default_time_limit_seconds);
  // ...and in plans and preemption decisions: absent values are the rule's defaults.
  deadline_rule set{120, 30};
  auto back = rule_of(to_record(set));
  EXPECT_EQ(back.default_time_limit_seconds, 120);
  EXPECT_EQ(back.min_useful_seconds, 30);
  ev::deadline_rule_record partial;
  partial.min_useful_seconds = 5;
  EXPECT_EQ(rule_of(partial).default_time_limit_seconds, deadline_rule{}.default_time_limit_seconds);
  EXPECT_EQ(rule_of(partial).min_useful_seconds, 5);
}

TEST(DeadlineAssignment, RegistrationRecordsTheEndAndTheWorldKeepsIt) {
  pool p;
  p.worker("pilot", 1, 600);
  const auto& wk = p.w.workers.at("pilot");
  EXPECT_EQ(wk.allocation_ends_at, p.now + 600 * s);
  EXPECT_EQ(to_json(wk, "idle", std::nullopt)["allocation_ends_at"], baton::util::format_time_us(p.now + 600 * s));
  EXPECT_EQ(p.w.idle_allocation_ends_by_image.at("img").size(), 1u);
  p.job("j", 60, false);
  p.assign("j", "pilot", p.poll("pilot").record);
  EXPECT_FALSE(p.w.idle_allocation_ends_by_image.count("img")) << "a busy worker leaves the idle index";
  EXPECT_FALSE(p.w.queued_limits_by_image.count("img")) << "an assigned job leaves the queued limits";
}

TEST(DeadlineAssignment, PlaceholderRecordsTheRequestedWallTime) {
  world w;
  cluster_spec c;
  c.name = "a";
  c.images = {"img"};
  c.wall_time_seconds = 4 * 3600;
  auto d = decide_placeholder(w, c, "p1", "img", "77", ev::placeholder_plan_record{}, 5 * s);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(baton::core::payload_json(d.events[0])["wall_time_seconds"], 4 * 3600);
  apply(w, d, 5 * s);
  EXPECT_EQ(w.workers.at("p1").wall_time_seconds, 4 * 3600);
  EXPECT_EQ(to_json(w.workers.at("p1"), "provisioning", std::nullopt)["wall_time_seconds"], 4 * 3600);
}

// The queued limits count the jobs that share one: a job that leaves takes its limit out only
// when it was the last to have it, else a worker would be offered a job it cannot finish.
TEST(DeadlineAssignment, AJobLeavingKeepsTheLimitOthersShare) {
  pool p;
  p.worker("pilot", 1, 5400);  // an hour and a half left
  p.job("a", 7200, false);
  p.job("b", 7200, false);
  p.job("c", 3600, false);
  EXPECT_EQ(p.w.queued_limits_by_image.at("img").size(), 2u) << "one entry per (checkpoints, limit)";
  apply(p.w, decide_cancel(p.w.jobs.at("a"), false, p.now), p.now);
  auto choice = p.poll("pilot");
  ASSERT_TRUE(choice.job_id);
  EXPECT_EQ(*choice.job_id, "c") << "b's two hours still do not fit";
  apply(p.w, decide_cancel(p.w.jobs.at("b"), false, p.now), p.now);
  EXPECT_EQ(p.w.queued_limits_by_image.at("img").size(), 1u);
  EXPECT_EQ(*p.poll("pilot").job_id, "c");
}
