// Pure provisioning decisions: how many pilot workers a cluster submits, for which image,
// what squeue's answer does to placeholders, and why a queued job cannot be served.
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include "core/provisioning/provisioning.hpp"
#include "core/provisioning/provisioning_basis.hpp"

#include <limits>

using namespace baton::core;

namespace {

struct scene {
  world w;
  time_us now = 1'700'000'000'000'000;

  void worker(const std::string& id, const std::string& image, const std::string& provider = "") {
    now += 1000;
    apply(w, decide_register(nullptr, {id, platform::hpc, "A100", 1, 0, image, provider, ""}, now), now);
  }
  void job(const std::string& id, const std::string& image, std::vector<std::string> pins = {}) {
    now += 1000;
    apply(w, decide_create(nullptr, {id, id, "/b", image, "", pins, 5}, now), now);
  }
  void placeholder(const cluster_spec& c, const std::string& id, const std::string& image, const std::string& slurm_id) {
    now += 1000;
    auto d = decide_placeholder(w, c, id, image, slurm_id, {}, now);
    ASSERT_TRUE(d.ok());
    apply(w, d, now);
  }
  std::map<std::string, int> plan(const cluster_spec& c) {
    std::map<std::string, int> out;
    for (const auto& p : plan_submissions(w, c, {}, {}, 600'000'000, now)) out[p.image] = p.count;
    return out;
  }
};

cluster_spec spec(const std::string& name, std::vector<std::string> images, int max_pending = 1,
                  const std::string& strategy = "reactive") {
  cluster_spec c;
  c.name = name;
  c.images = std::move(images);
  c.max_pending = max_pending;
  c.strategy = strategy;
  return c;
}

}  // namespace

TEST(Provisioning, EveryQueuedImageIsLookedAtNotOnlyTheOldestJobs) {
  scene s;
  auto c = spec("a", {"amber", "gromacs"});
  s.job("j1", "amber");  // oldest, and an idle amber worker will take it
  s.worker("w-amber", "amber");
  s.job("j2", "gromacs");
  EXPECT_EQ(s.plan(c), (std::map<std::string, int>{{"gromacs", 1}}));  // RelayMD would stall behind j1
}

TEST(Provisioning, ReactiveSubmitsOnlyForDemandNobodyServesAndRespectsMaxPending) {
  scene s;
  auto a = spec("a", {"img"}, 5), b = spec("b", {"img"}, 5);
  for (int i = 0; i < 4; ++i) s.job("j" + std::to_string(i), "img");
  s.worker("idle", "img");
  EXPECT_EQ(s.plan(a)["img"], 3);  // 4 queued - 1 idle
  s.placeholder(b, "p1", "img", "100");
  EXPECT_EQ(s.plan(a)["img"], 2);  // another cluster's pending allocation counts as coming supply
  s.placeholder(a, "p2", "img", "7");
  s.placeholder(a, "p3", "img", "8");
  EXPECT_TRUE(s.plan(a).empty());  // 4 = 1 idle + 3 pending
  auto capped = spec("c", {"img"}, 1);
  s.job("j9", "img");
  s.job("j10", "img");
  EXPECT_EQ(s.plan(capped)["img"], 1);  // max_pending_jobs per (cluster, image)
}

TEST(Provisioning, ContinuousKeepsAllocationsPendingWhileAnyJobWaits) {
  scene s;
  auto c = spec("a", {"img"}, 3, "continuous");
  EXPECT_TRUE(s.plan(c).empty());  // nothing queued: nothing submitted
  s.job("j", "img");
  s.worker("idle1", "img");
  s.worker("idle2", "img");
  EXPECT_EQ(s.plan(c)["img"], 3);
  s.placeholder(c, "p", "img", "5");
  EXPECT_EQ(s.plan(c)["img"], 2);
}

TEST(Provisioning, JitThresholdWaitsForTheOldestJobsAge) {
  scene s;
  auto c = spec("a", {"img"}, 1, "jit_threshold");
  c.jit_threshold_us = 3'600'000'000;  // one hour
  s.job("j", "img");
  EXPECT_TRUE(s.plan(c).empty());
  s.now += 3'600'000'000;
  EXPECT_EQ(s.plan(c)["img"], 1);
}

TEST(Provisioning, PinsAndDisabledClusters) {
  scene s;
  auto a = spec("a", {"img"}), b = spec("b", {"img"});
  s.job("pinned-to-b", "img", {"b"});
  EXPECT_TRUE(s.plan(a).empty());
  EXPECT_EQ(s.plan(b)["img"], 1);
  auto off = decide_cluster_enabled(s.w, "b", false, "maintenance");
  ASSERT_EQ(off.events.size(), 1u);
  EXPECT_EQ(off.events[0].type(), "cluster.disabled");
  apply(s.w, off, s.now);
  EXPECT_TRUE(s.plan(b).empty());
  EXPECT_TRUE(decide_cluster_enabled(s.w, "b", false, "").events.empty());  // no change, no event
  apply(s.w, decide_cluster_enabled(s.w, "b", true, ""), s.now);
  EXPECT_EQ(s.plan(b)["img"], 1);
}

TEST(Provisioning, SqueueAnswerRemovesOnlyCheckedDeadUnadoptedPlaceholders) {
  scene s;
  auto c = spec("a", {"img"}, 5);
  s.placeholder(c, "p1", "img", "11");
  s.placeholder(c, "p2", "img", "12");
  s.placeholder(c, "p3", "img", "13");
  s.placeholder(spec("other", {"img"}), "q1", "img", "11");
  EXPECT_EQ(placeholder_slurm_ids(s.w, "a"), (std::vector<std::string>{"11", "12", "13"}));
  // p2's worker registered (adopted) while squeue ran: it must survive the removal.
  apply(s.w, decide_register(s.w.find_worker("p2"), {"fresh", platform::hpc, "A100", 1, 0, "img", "a:12", ""}, s.now), s.now);
  auto d = decide_placeholders_checked(s.w, "a", {"11", "12"}, {}, s.now);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].stream, "worker/p1");
  EXPECT_EQ(d.events[0].type(), "worker.placeholder_removed");
  apply(s.w, d, s.now);
  EXPECT_EQ(placeholder_slurm_ids(s.w, "a"), (std::vector<std::string>{"13"}));  // 13 was not asked about
  EXPECT_EQ(placeholder_slurm_ids(s.w, "other"), (std::vector<std::string>{"11"}));
  EXPECT_TRUE(s.w.workers.at("p1").gone);
  EXPECT_FALSE(decide_placeholder(s.w, c, "p9", "img", "13", {}, s.now).ok());  // same allocation twice
}

TEST(Provisioning, QueueBlockedReasons) {
  scene s;
  std::vector<cluster_spec> clusters{spec("a", {"img"}), spec("b", {"other"})};
  s.job("plain", "img");
  s.job("unknown-image", "nope");
  s.job("pin-unknown", "img", {"zzz"});
  s.job("pin-b-wrong-image", "img", {"b"});
  auto reason = [&](const std::string& id) { return queue_blocked_reason(s.w, clusters, s.w.jobs.at(id)); };
  EXPECT_EQ(reason("plain"), "");
  EXPECT_EQ(reason("unknown-image"), "no_compatible_worker_image_clusters");
  EXPECT_EQ(reason("pin-unknown"), "no_matching_pinned_clusters");
  EXPECT_EQ(reason("pin-b-wrong-image"), "no_compatible_pinned_worker_image_clusters");
  apply(s.w, decide_cluster_enabled(s.w, "a", false, ""), s.now);
  EXPECT_EQ(reason("plain"), "no_enabled_worker_image_clusters");
  apply(s.w, decide_cluster_enabled(s.w, "b", false, ""), s.now);
  EXPECT_EQ(reason("pin-b-wrong-image"), "no_enabled_pinned_clusters");
  EXPECT_EQ(queue_blocked_reason(s.w, {}, s.w.jobs.at("plain")), "");  // no clusters configured: workers come by hand
}

TEST(Provisioning, PlaceholdersOfARemovedClusterAreDropped) {
  scene s;
  auto kept = spec("kept", {"img"}), gone = spec("gone", {"img"});
  s.placeholder(kept, "p1", "img", "1");
  s.placeholder(gone, "p2", "img", "2");
  auto d = decide_unconfigured_placeholders(s.w, {kept});
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].stream, "worker/p2");
  EXPECT_EQ(baton::core::payload_json(d.events[0])["reason"], "cluster_not_configured");
  apply(s.w, d, s.now);
  EXPECT_TRUE(decide_unconfigured_placeholders(s.w, {kept}).events.empty());
  EXPECT_EQ(s.w.workers.at("p2").gone_reason, "cluster_not_configured");
}

// A cluster's partitions differ by wall time (short and long-running ones): a job
// counts only for an entry whose allocations can hold it (its limit within the wall time, or
// a checkpointing job with min_useful_seconds).
TEST(Provisioning, ALongJobThatCannotCheckpointCountsOnlyForThePartitionLongEnoughForIt) {
  scene s;
  auto short_part = spec("short", {"img"}, 5), long_part = spec("long", {"img"}, 5);
  short_part.wall_time_seconds = 4 * 3600;
  long_part.wall_time_seconds = 48 * 3600;
  create_job c{"rigid", "rigid", "/b", "img", "", {}, 5};
  c.time_limit_seconds = 10 * 3600;
  c.checkpoints = false;
  apply(s.w, decide_create(nullptr, c, s.now), s.now);
  EXPECT_EQ(s.plan(short_part), (std::map<std::string, int>{})) << "10 h do not fit a 4 h pilot";
  EXPECT_EQ(s.plan(long_part), (std::map<std::string, int>{{"img", 1}}));
  c.id = "supple";
  c.checkpoints = true;  // hands off before the end: a short pilot is useful to it
  apply(s.w, decide_create(nullptr, c, s.now), s.now);
  EXPECT_EQ(s.plan(short_part), (std::map<std::string, int>{{"img", 1}}));
}

// With a plan, what it already places asks for no new allocation: a job reserved on a
// pending allocation, or on a worker that frees up sooner than a new allocation would start.
TEST(Provisioning, JobsThePlanAlreadyPlacesAskForNoNewAllocation) {
  scene s;
  auto c = spec("a", {"img"}, 5);
  s.job("soon", "img");
  s.job("on-placeholder", "img");
  s.job("late", "img");
  s.placeholder(c, "ph", "img", "77");
  s.worker("busy", "img");
  live_plan plan;
  plan.planned_at = s.now;
  plan.reservations["soon"] = {"busy", s.now + 60'000'000, s.now + 3'660'000'000};
  plan.reservations["on-placeholder"] = {"ph", s.now + 600'000'000, s.now + 4'200'000'000};
  plan.reservations["late"] = {"busy", s.now + 3'600'000'000, s.now + 7'200'000'000};  // an hour away
  // Without the plan: three jobs, one idle worker, one pending allocation: one more.
  EXPECT_EQ(s.plan(c), (std::map<std::string, int>{{"img", 1}}));
  s.w.plan = plan;
  // With it: only "late" waits longer than a new allocation takes; the idle worker and the
  // placeholder are spoken for by the plan ("busy" has a reservation; the placeholder too).
  auto plans = plan_submissions(s.w, c, {}, {}, 600'000'000, s.now);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].count, 1);
  EXPECT_EQ(plans[0].record.placed_by_plan, 2);
  EXPECT_EQ(plans[0].record.queued_compatible, 1);
}

// A cluster entry as a plan's basis records it, and read back; a recorded threshold too large
// for microseconds (a hand-made log) reads as the default.
TEST(Provisioning, ARecordedClusterEntryReadsBackAndAnOverflowingThresholdIsTheDefault) {
  cluster_spec c;
  c.name = "hpc";
  c.images = {"a", "b"};
  c.strategy = "jit_threshold";
  c.jit_threshold_us = 90 * 60'000'000LL;
  c.max_pending = 3;
  c.gpu_type = "a100";
  c.gpu_count = 4;
  c.wall_time_seconds = 7200;
  const auto back = spec_of(to_record(c));
  EXPECT_EQ(back.name, c.name);
  EXPECT_EQ(back.images, c.images);
  EXPECT_EQ(back.strategy, c.strategy);
  EXPECT_EQ(back.jit_threshold_us, c.jit_threshold_us);
  EXPECT_EQ(back.max_pending, 3);
  EXPECT_EQ(back.gpu_type, "a100");
  EXPECT_EQ(back.gpu_count, 4);
  EXPECT_EQ(back.wall_time_seconds, 7200);
  ev::cluster_spec_record huge;
  huge.jit_threshold_seconds = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(spec_of(huge).jit_threshold_us, cluster_spec{}.jit_threshold_us);
  EXPECT_EQ(spec_of(huge).strategy, cluster_spec{}.strategy);
}
