// The planning cycle over baton's world (core/world/plan_cycle.hpp): which idle worker should take
// which job now, and where and when each job that cannot start is expected to; a poll taking
// its planned job, or falling back when the plan went stale; deadlines; an unchanged plan
// writing nothing; and every recorded plan re-deriving from the events before it.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "core/events/event_payload.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/world/priority.hpp"
#include "core/world/scheduling.hpp"
#include "core/util/sha256.hpp"
#include "core/util/time.hpp"
#include "events/bytes.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
namespace C = core::commands;

namespace {

constexpr core::time_us second = 1'000'000, minute = 60 * second, hour = 60 * minute;

struct plan_fixture : test::core_under_test {
  principal admin = principal::operator_named("admin");

  plan_fixture() {
    s.priority.partitions = {{"normal", 1, 1}, {"test", 100, 10}};
    s.priority.kind = core::policy_kind::fifo;
    run(principal::loop(), C::recalculate_priorities{});  // records the partitions' tiers
  }
  std::string job(const std::string& name, uint32_t gpus, int64_t limit_seconds, bool checkpoints = true,
                  const std::string& partition = "normal") {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/b";
    c.gpu_count = gpus;
    c.time_limit_seconds = limit_seconds;
    c.checkpoints = checkpoints;
    c.partition = partition;
    auto o = run(admin, c);
    EXPECT_FALSE(o.answer.error) << o.answer.error->message;
    now += second;  // submit order is creation order, not the ids'
    return c.id;
  }
  std::string worker(const std::string& name, int gpus, std::optional<core::time_us> ends = std::nullopt) {
    C::register_worker r;
    r.new_id = test::uid(name);
    r.gpu_model = "A100";
    r.gpu_count = gpus;
    r.credential_sha256 = "00";
    r.allocation_ends_at = ends;
    auto o = run(principal::operator_named("admin"), r);
    EXPECT_FALSE(o.answer.error) << o.answer.error->message;
    return r.new_id;
  }
  void heartbeat_all() {
    for (const auto& [id, wk] : w.workers)
      if (!wk.gone) leases.touch(id, now);
  }
  // One planning cycle, applied and logged as the scheduler does; its payload (or null).
  nlohmann::json cycle() {
    heartbeat_all();
    auto d = core::plan_cycle(w, leases, s, now);
    if (d.events.empty()) return nullptr;
    // The recorded plan re-derives from the events before it (as batond --rederive checks).
    core::world replayed;
    for (const auto& [dd, at] : log) core::apply(replayed, dd, at);
    auto again = core::decide_plan(replayed, {}, s.deadlines, s.backfill, now);
    EXPECT_EQ(again.events.size(), 1u);
    if (!again.events.empty()) {
      EXPECT_EQ(baton::core::payload_json(again.events[0]), baton::core::payload_json(d.events[0]));
    }
    // Its digest is the SHA-256 of dump() of {"reservations", "starts"} (the plan writes that
    // text without building the JSON; every reservation is in the payload here).
    const auto& p = baton::core::payload_json(d.events[0]);
    EXPECT_EQ(p["reservations_total"], p["reservations"].size());
    const nlohmann::json decided = {{"reservations", p["reservations"]}, {"starts", p["starts"]}};
    EXPECT_EQ(p["digest"], util::sha256_hex(decided.dump()));
    core::apply(w, d, now);
    log.emplace_back(d, now);
    return baton::core::payload_json(d.events[0]);
  }
  std::string reason(const std::string& id) { return core::pending_reason(w, *w.find_job(id)); }
};

std::string at(core::time_us t) { return util::format_time_us(t); }

}  // namespace

TEST(plan_cycle, AFourGpuTopJobIsReservedWhileOneGpuJobsTakeTheWorkersItDoesNotNeed) {
  plan_fixture f;
  auto big = f.worker("big", 4);
  f.now += second;
  auto small_a = f.worker("small-a", 1);
  f.now += second;  // registered later: ranks below small-a
  auto small_b = f.worker("small-b", 1);
  auto running = f.job("running", 4, 3600);
  ASSERT_EQ(f.poll(big), running);
  f.run(principal::of_worker(big), C::start_job{running});
  auto started = f.now;
  f.now += 10 * minute;
  auto top = f.job("top", 4, 7200, true, "test");  // the highest tier: considered first
  auto one = f.job("one", 1, 1800), two = f.job("two", 1, 1800), three = f.job("three", 1, 1800);

  auto plan = f.cycle();
  ASSERT_TRUE(plan.is_object());
  // The 4-GPU job waits for the only 4-GPU worker: its running job's limit ends it at +1 h.
  ASSERT_EQ(plan["reservations"].size(), 2u) << plan.dump(1);
  EXPECT_EQ(plan["reservations"][0]["job_id"], top);
  EXPECT_EQ(plan["reservations"][0]["worker_id"], big);
  EXPECT_EQ(plan["reservations"][0]["start"], at(started + hour));
  // Two 1-GPU jobs start on the 1-GPU workers now, ties to the better-ranked (earlier) worker;
  // the third waits for one of them to finish (30 min), not for the big worker.
  ASSERT_EQ(plan["starts"].size(), 2u);
  EXPECT_EQ(plan["starts"][0]["job_id"], one);
  EXPECT_EQ(plan["starts"][0]["worker_id"], small_a);
  EXPECT_EQ(plan["starts"][1]["job_id"], two);
  EXPECT_EQ(plan["starts"][1]["worker_id"], small_b);
  EXPECT_EQ(plan["reservations"][1]["job_id"], three);
  EXPECT_EQ(plan["reservations"][1]["worker_id"], small_a);
  EXPECT_EQ(plan["reservations"][1]["start"], at(f.now + 30 * minute));

  EXPECT_EQ(f.reason(top), "Resources");
  EXPECT_EQ(f.reason(three), "Reservation");
  auto row = std::get<core::results::job_row>(f.run(f.admin, C::get_job{top}).answer.value);
  ASSERT_TRUE(row.reservation);
  EXPECT_EQ(row.reservation->worker_id, big);

  // The second small worker polls first: it takes its planned job, not the first in line.
  f.heartbeat_all();
  auto o = f.run(principal::of_worker(small_b), C::request_job{small_b});
  auto& answer = std::get<core::results::poll_answer>(o.answer.value);
  ASSERT_TRUE(answer.assigned);
  EXPECT_EQ(answer.assigned->job_id, two);
  ASSERT_FALSE(o.events.empty());
  EXPECT_EQ(core::payload_json(o.events[0])["decision"]["policy"], "plan") << "taken from the plan, not by the direct choice";
  EXPECT_EQ(f.w.find_job(two)->assigned_worker_id, small_b);
  EXPECT_FALSE(core::planned_job_for(f.w, small_b)) << "a planned start is used once";
  EXPECT_EQ(f.poll(small_a), one);

  EXPECT_TRUE(f.cycle().is_object()) << "the plan changed: two jobs started";
  EXPECT_TRUE(f.cycle().is_null()) << "nothing changed since: no event";
}

TEST(plan_cycle, APollFallsBackWhenItsPlannedJobNoLongerWaits) {
  plan_fixture f;
  auto a = f.worker("a", 1);
  auto first = f.job("first", 1, 600);
  auto plan = f.cycle();
  ASSERT_EQ(plan["starts"].size(), 1u);
  EXPECT_EQ(plan["starts"][0]["job_id"], first);
  EXPECT_EQ(plan["starts"][0]["worker_id"], a);
  // The plan goes stale: its job is held, another arrives before the next cycle.
  f.run(f.admin, C::hold_job{first});
  auto second = f.job("second", 1, 600);
  f.heartbeat_all();
  auto o = f.run(principal::of_worker(a), C::request_job{a});
  auto& answer = std::get<core::results::poll_answer>(o.answer.value);
  ASSERT_TRUE(answer.assigned);
  EXPECT_EQ(answer.assigned->job_id, second) << "the direct choice, not the stale plan";
  EXPECT_EQ(core::payload_json(o.events[0])["decision"]["policy"], "greedy-rank-v1");
  EXPECT_EQ(f.w.find_job(second)->status, core::job_status::assigned);
  EXPECT_EQ(f.w.find_job(first)->status, core::job_status::queued);
}

TEST(plan_cycle, AWorkerWithTenMinutesLeftIsNeverPlannedForAnHourLongJobThatCannotCheckpoint) {
  plan_fixture f;
  auto ends_at = f.now + 10 * minute;
  auto ending = f.worker("ending", 1, ends_at);
  auto rigid = f.job("rigid", 1, 3600, false);
  auto plan = f.cycle();
  ASSERT_TRUE(plan.is_object());
  EXPECT_TRUE(plan["starts"].empty()) << plan.dump(1);
  EXPECT_TRUE(plan["reservations"].empty());
  EXPECT_EQ(plan["skipped"].value("no_eligible_node", 0), 1);
  f.heartbeat_all();
  EXPECT_FALSE(f.poll(ending));
  // A checkpointing job may take it: it hands off before the end (min_useful 10 min default).
  f.s.deadlines.min_useful_seconds = 300;
  auto supple = f.job("supple", 1, 3600, true);
  plan = f.cycle();
  ASSERT_EQ(plan["starts"].size(), 1u);
  EXPECT_EQ(plan["starts"][0]["job_id"], supple);
  EXPECT_EQ(plan["starts"][0]["end"], at(ends_at)) << "cut at the allocation's end";
  EXPECT_EQ(f.poll(ending), supple);
}

TEST(plan_cycle, APendingAllocationIsPlannedAsStartingLaterForItsWallTime) {
  plan_fixture f;
  f.s.backfill.placeholder_start_estimate = 5 * minute;
  core::cluster_spec c;
  c.name = "hpc";
  c.images = {"default"};
  c.wall_time_seconds = 4 * 3600;
  c.gpu_count = 1;
  f.s.clusters.push_back(c);
  auto job = f.job("waits", 1, 1800);
  auto d = core::decide_placeholder(f.w, c, test::uid("ph"), "default", "42", core::ev::placeholder_plan_record{}, f.now);
  ASSERT_FALSE(d.events.empty());
  core::apply(f.w, d, f.now);
  f.log.emplace_back(d, f.now);
  auto plan = f.cycle();
  ASSERT_EQ(plan["reservations"].size(), 1u) << plan.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  EXPECT_EQ(plan["reservations"][0]["job_id"], job);
  EXPECT_EQ(plan["reservations"][0]["worker_id"], test::uid("ph"));
  EXPECT_EQ(plan["reservations"][0]["start"], at(f.now + 5 * minute));
}

// A plan made before the order changed (a release, a recalculation, a higher-tier job) must not
// hand a worker a lower-priority job while one ahead of it that the worker could run waits
// unplanned (Slurm's rule; issue: priority inversion through a stale plan).
TEST(plan_cycle, AStalePlanNeverHandsAWorkerAJobBehindOneItCouldRun) {
  plan_fixture f;
  auto a = f.worker("a", 1);
  auto old = f.job("old", 1, 600);
  f.run(f.admin, C::hold_job{old});
  auto young = f.job("young", 1, 600);
  auto plan = f.cycle();
  ASSERT_EQ(plan["starts"].size(), 1u);
  EXPECT_EQ(plan["starts"][0]["job_id"], young);
  // The older job is released: it is ahead in the order again, and the plan is stale for it.
  f.run(f.admin, C::release_job{old});
  f.heartbeat_all();
  EXPECT_EQ(f.poll(a), old) << "the job ahead, not the plan's";
  // A higher-tier job arriving after a plan goes first too.
  auto b = f.worker("b", 1);
  auto low = f.job("low", 1, 600);
  ASSERT_TRUE(f.cycle().is_object());
  auto high = f.job("high", 1, 600, true, "test");
  f.heartbeat_all();
  EXPECT_EQ(f.poll(b), high);
  EXPECT_EQ(f.w.find_job(low)->status, core::job_status::queued);
}

// A seeded random campaign: at every assignment taken from a plan, no job ahead of it in the
// evaluation order that the worker could run waits unplanned and unreserved elsewhere.
TEST(plan_cycle, EveryPlannedAssignmentOfARandomCampaignKeepsThePriorityOrder) {
  plan_fixture f;
  std::mt19937 rng(20261206);
  std::vector<std::string> workers, jobs;
  size_t planned_checked = 0;
  for (int step = 0; step < 600; ++step) {
    f.now += second;
    int op = static_cast<int>(rng() % 10);
    if (op == 0 || workers.size() < 2) {
      workers.push_back(f.worker("w" + std::to_string(step), 1 + static_cast<int>(rng() % 4)));
    } else if (op <= 3) {
      jobs.push_back(f.job("j" + std::to_string(step), 1 + rng() % 4, 600 + rng() % 3600, true, rng() % 5 ? "normal" : "test"));
    } else if (op == 4 && !jobs.empty()) {
      const auto& id = jobs[rng() % jobs.size()];
      if (const auto* j = f.w.find_job(id); j && j->status == core::job_status::queued)
        f.run(f.admin, j->held ? core::command{C::release_job{id}} : core::command{C::hold_job{id}});
    } else if (op == 5) {
      f.cycle();
    } else if (op == 6 && !jobs.empty()) {
      const auto& id = jobs[rng() % jobs.size()];
      if (const auto* j = f.w.find_job(id); j && j->status == core::job_status::assigned)
        f.run(principal::of_worker(j->assigned_worker_id), C::complete_job{id});
    } else {
      const auto& wid = workers[rng() % workers.size()];
      f.heartbeat_all();
      const core::world& before = f.w;
      const core::worker& me = *before.find_worker(wid);
      // The evaluation order before the poll, with what the rule needs of each job.
      struct ahead {
        std::string id;
        bool runnable, elsewhere;
      };
      std::vector<ahead> order;
      if (auto q = before.queued_by_image.find(me.worker_image_key); q != before.queued_by_image.end())
        for (const auto& key : q->second) {
          const core::job& j = *key.owner;
          bool elsewhere = false;
          if (const auto* r = core::reservation_of(before, j.id); r && r->worker_id != wid) elsewhere = true;
          for (const auto& [w2, j2] : before.plan.start_for_worker) elsewhere |= j2 == j.id && w2 != wid;
          order.push_back({j.id, core::can_run(me, j), elsewhere});
        }
      auto o = f.run(principal::of_worker(wid), C::request_job{wid});
      auto* answer = std::get_if<core::results::poll_answer>(&o.answer.value);
      if (!answer || !answer->assigned || o.events.empty()) continue;
      if (core::payload_json(o.events[0])["decision"]["policy"] != "plan") continue;
      ++planned_checked;
      for (const auto& a : order) {
        if (a.id == answer->assigned->job_id) break;
        EXPECT_FALSE(a.runnable && !a.elsewhere) << "step " << step << ": worker " << wid << " was planned "
                                                 << answer->assigned->job_id << " while " << a.id << " waited ahead";
      }
    }
  }
  EXPECT_GT(planned_checked, 10u) << "the campaign exercised planned assignments";
}

// A recorded setting whose value in microseconds would not fit an int64 (a hand-made or
// damaged log) reads as the default, never as an overflowed product.
TEST(plan_cycle, RecordedSettingsTooLargeForMicrosecondsReadAsTheDefaults) {
  core::ev::backfill_settings_record r;
  r.bf_interval_seconds = std::numeric_limits<int64_t>::max();
  r.bf_window_minutes = std::numeric_limits<int64_t>::max() / 60'000'000 + 1;
  r.bf_resolution_seconds = std::numeric_limits<int64_t>::min();
  r.placeholder_start_estimate_seconds = 120;
  const auto s = core::settings_of(r);
  const core::backfill_settings defaults;
  EXPECT_EQ(s.interval, defaults.interval);
  EXPECT_EQ(s.limits.bf_window, defaults.limits.bf_window);
  EXPECT_EQ(s.limits.bf_resolution, defaults.limits.bf_resolution);
  EXPECT_EQ(s.placeholder_start_estimate, 120'000'000);
}
