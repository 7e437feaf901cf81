#pragma once
// The scheduler's planning cycle over baton's world (Slurm's backfill loop, live): every
// bf_interval the scheduler turns the world into the planner's plain input (core/planning/backfill.hpp)
// and records what the planner decided as one decision event, scheduler.plan_made:
//   - planned starts: an idle worker and the job it should take; that worker's next poll takes
//     it if the job is still waiting and still fits (core/world/scheduling.cpp), else it falls back
//     to the direct choice. The plan is advice the poll checks, never trusted blindly.
//   - reservations: when and where each job that cannot start now is expected to (the
//     earliest worker, or pending allocation, that fits it); shown as the job's expected start.
// Workers are exclusive (one job each), so a poll's job on an idle worker never delays a
// reservation: reservations sit on busy workers and pending allocations.
#include <set>
#include <string>
#include <vector>

#include "core/planning/backfill.hpp"
#include "core/planning/deadline.hpp"
#include "core/world/world.hpp"

namespace baton::core {

// scheduling.backfill in the config, Slurm's names and the seeds' values.
struct backfill_settings {
  time_us interval = 45'000'000;  // bf_interval
  backfill_limits limits{2880LL * 60 * 1'000'000, 2000, 15, 200, 0, 0};
  // A pending allocation (placeholder) is planned as starting this long from now (Slurm's
  // queue does not say when it will start) and lasting its wall time.
  time_us placeholder_start_estimate = 600'000'000;
  // Reservations recorded in full in each event (all are re-derived, through the digest).
  size_t recorded_reservations = 50;
};

// The settings as plans record them, and read back (absent values keep the defaults above).
ev::backfill_settings_record to_record(const backfill_settings& s);
backfill_settings settings_of(const ev::backfill_settings_record& r);

// The planner's input as of now, and which worker each node is (nodes are numbered in worker
// rank order, so ties go to the better worker). Stale workers are left out.
struct planner_view {
  plan_input input;
  std::vector<std::string> worker_of_node;
};
planner_view planner_input(const world& w, const std::set<std::string>& stale, const deadline_rule& rule,
                           const backfill_settings& s, time_us now);

// A cycle in three steps, so the planner can run off the scheduler's thread: the snapshot
// (built from the world, on its thread), the planner (pure, anywhere), and the decision
// (back on the world's thread). The event names the snapshot by world::applied ("based_on")
// and its time ("planned_at"), so a replay stops at that point of the log to re-derive it.
struct plan_snapshot {
  planner_view view;
  std::set<std::string> stale;
  deadline_rule rule;
  backfill_settings settings;
  time_us planned_at = 0;
  uint64_t based_on = 0;
};
plan_snapshot snapshot_for_plan(const world& w, const std::set<std::string>& stale, const deadline_rule& rule,
                                const backfill_settings& s, time_us now);
plan run_planner(const plan_snapshot& snap);
// The event, or nothing when the plan is what the world's last one recorded.
decision decide_plan(const world& w, const plan_snapshot& snap, const plan& p);
// All three at once (POST /plan, tests).
decision decide_plan(const world& w, const std::set<std::string>& stale, const deadline_rule& rule, const backfill_settings& s,
                     time_us now);
// What re-derives a recorded plan: its snapshot's inputs (the stale workers, the rule, the
// settings, planned_at, based_on).
struct recorded_plan_inputs {
  std::set<std::string> stale;
  deadline_rule rule;
  backfill_settings settings;
  time_us planned_at = 0;
  uint64_t based_on = 0;
};
recorded_plan_inputs plan_inputs_of(const ev::plan_made& payload);

// Applies scheduler.plan_made to the world's plan.
void record_plan(live_plan& plan, const ev::plan_made& payload, time_us at);

// The planned start waiting for this worker, if any ("" otherwise).
const std::string* planned_job_for(const world& w, const std::string& worker_id);
// The job's reservation from the last plan, if it was recorded.
const planned_slot* reservation_of(const world& w, const std::string& job_id);

}  // namespace baton::core
