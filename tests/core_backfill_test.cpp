// The backfill planner (core/planning/backfill.hpp) and its capacity profile: Palmetto's worked
// examples of the main and backfill loops, Lattice's step 2c, each bf_* limit,
// node windows with checkpointing jobs, and a property test over seeded random instances
// against a brute-force oracle of the earliest start.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/planning/backfill.hpp"
#include "core/planning/capacity_profile.hpp"

using namespace baton::core;

namespace {

constexpr time_us minute = 60'000'000;
constexpr time_us T0 = 19675LL * 86400 * 1'000'000;  // a midnight (2023-11-14 UTC) stands in for any day

time_us clock_at(int h, int m) { return T0 + (h * 60 + m) * minute; }

plan_node node(std::string id, int64_t capacity = 1, time_us from = 0, time_us until = time_never) {
  return {std::move(id), capacity, from, until};
}

plan_job job(std::string id, int64_t units, time_us duration, uint32_t klass = 0, std::string user = "u",
             std::string part = "p") {
  plan_job j;
  j.id = std::move(id);
  j.units = units;
  j.duration = duration;
  j.resource_class = klass;
  j.user = std::move(user);
  j.partition = std::move(part);
  return j;
}

// "job@node start-end" with times as minutes after now, for readable failures.
std::string show(const plan_input& in, const std::string& job, const std::string& node, time_us s, time_us e) {
  return job + "@" + node + " " + std::to_string((s - in.now) / minute) + "-" + std::to_string((e - in.now) / minute);
}
std::vector<std::string> starts_of(const plan_input& in, const plan& p) {
  std::vector<std::string> out;
  for (const auto& s : p.starts) out.push_back(show(in, s.job_id, s.node_id, s.start, s.end) + " " + to_string(s.why));
  return out;
}
std::vector<std::string> reservations_of(const plan_input& in, const plan& p) {
  std::vector<std::string> out;
  for (const auto& r : p.reservations) out.push_back(show(in, r.job_id, r.node_id, r.start, r.end));
  return out;
}
std::vector<std::string> skipped_of(const plan& p) {
  std::vector<std::string> out;
  for (const auto& s : p.skipped)
    out.push_back(s.job_id + " " + to_string(s.reason) + (s.blocked_by.empty() ? "" : " by " + s.blocked_by));
  return out;
}

using strings = std::vector<std::string>;

}  // namespace

// ---------------------------------------------------------------------------------------
// Capacity profile
// ---------------------------------------------------------------------------------------

TEST(CapacityProfile, WindowRunningJobsAndReservations) {
  // Capacity 2 from 10:30 to 14:00, now 10:00.
  capacity_profile p(clock_at(10, 0), 2, clock_at(10, 30), clock_at(14, 0));
  using st = capacity_profile::step;
  EXPECT_EQ(p.steps(), (std::vector<st>{{clock_at(10, 0), 0}, {clock_at(10, 30), 2}, {clock_at(14, 0), 0}}));
  p.occupy(1, clock_at(9, 0), clock_at(11, 0));  // clipped to now; nothing there before 10:30 but it counts
  EXPECT_EQ(p.free_at(clock_at(10, 45)), 1);
  EXPECT_EQ(p.free_at(clock_at(11, 0)), 2);
  EXPECT_EQ(p.free_at(clock_at(9, 0)), 0);

  // 2 units for an hour: from 11:00 (the running unit ends), not before the window opens.
  auto s = p.earliest({2, 60 * minute}, clock_at(10, 0));
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (time_slot{clock_at(11, 0), clock_at(12, 0)}));
  EXPECT_TRUE(p.reserve(2, clock_at(11, 0), clock_at(12, 0)));
  EXPECT_FALSE(p.reserve(1, clock_at(11, 30), clock_at(12, 30)));  // taken
  EXPECT_FALSE(p.reserve(1, clock_at(9, 0), clock_at(9, 30)));     // before now
  // 1 unit for 3 h: 12:00 + 3 h > 14:00, so none; 2 h fits from 12:00 exactly.
  EXPECT_FALSE(p.earliest({1, 180 * minute}, clock_at(10, 0)));
  EXPECT_EQ(p.earliest({1, 120 * minute}, clock_at(10, 0))->start, clock_at(12, 0));
  // A 1-unit, 45-minute job fits in 10:30-11:00? No: 30 min. With not_after 11:59 there is none.
  EXPECT_FALSE(p.earliest({1, 45 * minute}, clock_at(10, 0), clock_at(11, 59)));
  EXPECT_EQ(p.earliest({1, 30 * minute}, clock_at(10, 0))->start, clock_at(10, 30));
  // Three units never fit a node of two.
  EXPECT_FALSE(p.earliest({3, minute}, clock_at(10, 0)));
}

TEST(CapacityProfile, CheckpointingJobIsCutByTheWindowEnd) {
  capacity_profile p(clock_at(10, 0), 1, 0, clock_at(10, 10));
  EXPECT_FALSE(p.earliest({1, 60 * minute}, clock_at(10, 0)));
  auto s = p.earliest({1, 60 * minute, true, 5 * minute}, clock_at(10, 0));
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (time_slot{clock_at(10, 0), clock_at(10, 10)}));
  EXPECT_FALSE(p.earliest({1, 60 * minute, true, 15 * minute}, clock_at(10, 0)));
  // Not later than 10:05 either: from 10:06 less than 5 minutes remain.
  EXPECT_FALSE(p.earliest({1, 60 * minute, true, 5 * minute}, clock_at(10, 6)));
}

TEST(CapacityProfile, ResolutionRoundsPlannedEndsUp) {
  capacity_profile p(clock_at(10, 0), 1, 0, time_never, 5 * minute);
  p.occupy(1, clock_at(10, 0), clock_at(10, 7));  // held until 10:10
  EXPECT_EQ(p.earliest({1, minute}, clock_at(10, 0))->start, clock_at(10, 10));
  EXPECT_TRUE(p.reserve(1, clock_at(10, 10), clock_at(10, 11)));  // held until 10:15
  EXPECT_EQ(p.earliest({1, minute}, clock_at(10, 0))->start, clock_at(10, 15));
}

// ---------------------------------------------------------------------------------------
// Main loop
// ---------------------------------------------------------------------------------------

// Palmetto's main-loop example: four single-core nodes, three busy; job 1 (priority 5000)
// wants two nodes, jobs 2 (3000) and 3 (2000) one each. Multi-node jobs are not modelled, so
// the four nodes are one pool of 4 units and job 1 asks for 2 of them. The busy three end at
// 10:40, 11:00 and 11:30; now is 10:00; every job asks for 30 minutes, job 1 for an hour.
TEST(MainLoop, PalmettoExample) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("pool", 4)};
  in.running = {{"r1", 0, 1, clock_at(10, 40)}, {"r2", 0, 1, clock_at(11, 0)}, {"r3", 0, 1, clock_at(11, 30)}};
  in.pending = {job("1", 2, 60 * minute), job("2", 1, 30 * minute), job("3", 1, 30 * minute)};

  auto p = main_loop(in);
  EXPECT_EQ(starts_of(in, p), strings{});                       // the main loop starts none
  EXPECT_EQ(reservations_of(in, p), strings{"1@pool 40-100"});  // two units free from 10:40
  EXPECT_EQ(skipped_of(p), (strings{"2 priority by 1", "3 priority by 1"}));
  EXPECT_EQ(p.counters.jobs_tested, 1u);

  // The backfill loop then gives the lower jobs their chance: job 2 runs 10:00-10:30 on the
  // free unit and ends before job 1's start; job 3 would not (10:30-10:40 is 10 minutes), so
  // it is planned into the unit free 11:00-11:30 between r2's end and r3's.
  auto b = backfill(in);
  EXPECT_EQ(starts_of(in, b), strings{"2@pool 0-30 backfill"});
  EXPECT_EQ(reservations_of(in, b), (strings{"1@pool 40-100", "3@pool 60-90"}));
  EXPECT_EQ(skipped_of(b), strings{});
}

// An A100 job that waits holds up A100 jobs, not V100 ones; a job that may use either
// shares nodes with the waiting one and is held up too, though a V100 node is idle.
TEST(MainLoop, BlocksOnlyOverlappingClasses) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("a1"), node("v1"), node("v2")};
  in.running = {{"busy", 0, 1, clock_at(11, 0)}};
  in.classes = {{{0}}, {{1, 2}}, {{0, 1, 2}}};  // A100, V100, either
  in.pending = {job("A", 1, 60 * minute, 0), job("V", 1, 60 * minute, 1), job("A2", 1, 60 * minute, 0),
                job("any", 1, 60 * minute, 2), job("V2", 1, 60 * minute, 1)};
  auto p = main_loop(in);
  EXPECT_EQ(starts_of(in, p), (strings{"V@v1 0-60 main", "V2@v2 0-60 main"}));
  EXPECT_EQ(reservations_of(in, p), strings{"A@a1 60-120"});
  EXPECT_EQ(skipped_of(p), (strings{"A2 priority by A", "any priority by A"}));
}

// A pending Slurm allocation is a node whose window opens later: the waiting job is planned
// onto it when that is earlier than any busy worker frees up.
TEST(MainLoop, PlansOntoAPendingAllocation) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("w1"), node("placeholder", 1, clock_at(10, 30), clock_at(14, 0))};
  in.running = {{"busy", 0, 1, clock_at(12, 0)}};
  in.pending = {job("j", 1, 60 * minute)};
  auto p = main_loop(in);
  EXPECT_EQ(reservations_of(in, p), strings{"j@placeholder 30-90"});
}

TEST(MainLoop, MaxJobsIsTheQueueDepth) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("n1"), node("n2"), node("n3")};
  in.pending = {job("a", 1, minute), job("b", 1, minute), job("c", 1, minute)};
  main_limits lim;
  lim.max_jobs = 2;
  auto p = main_loop(in, lim);
  EXPECT_EQ(starts_of(in, p), (strings{"a@n1 0-1 main", "b@n2 0-1 main"}));
  EXPECT_EQ(skipped_of(p), strings{"c default_queue_depth"});
}

// ---------------------------------------------------------------------------------------
// Backfill loop
// ---------------------------------------------------------------------------------------

// Palmetto's backfill example: nodes A and B of 2 cores each. The seed calls jobs 1-4
// "currently running" when job 8 is submitted at 10:20, but job 1 (9:00, 2 cores, 1 h) and
// jobs 2-4 (one core each) do not fit four cores at once, and job 8 needs a free core. A
// timeline that agrees with every time given:
//   09:00 job 1 starts on A (2 cores) and ends at 10:00;
//   09:30 job 2 starts on B (1 core), until 11:30;   09:45 job 3 on B (1 core), until 10:45;
//   09:55 job 4 is submitted, A is full until 10:00: it runs on A 10:00-11:00 (1 core);
//   10:10-10:13 jobs 5, 6, 7 are submitted; 10:20 job 8; now = 10:20.
// Plan: job 5 (2 cores, 90 min) on A when job 4 ends, 11:00-12:30; job 6 (1 core, 75 min) on
// B when job 3 ends, 10:45-12:00; job 7 (2 cores, 60 min) on B when jobs 2 and 6 are done,
// 12:00-13:00 (A is only free at 12:30); job 8 (1 core, 30 min) takes A's free core now,
// 10:20-10:50, and ends before job 5's planned start.
TEST(Backfill, PalmettoExample) {
  plan_input in;
  in.now = clock_at(10, 20);
  in.nodes = {node("A", 2), node("B", 2)};
  in.running = {{"2", 1, 1, clock_at(11, 30)}, {"3", 1, 1, clock_at(10, 45)}, {"4", 0, 1, clock_at(11, 0)}};
  in.pending = {job("5", 2, 90 * minute), job("6", 1, 75 * minute), job("7", 2, 60 * minute), job("8", 1, 30 * minute)};
  auto p = backfill(in);
  EXPECT_EQ(starts_of(in, p), strings{"8@A 0-30 backfill"});
  EXPECT_EQ(reservations_of(in, p), (strings{"5@A 40-130", "6@B 25-100", "7@B 100-160"}));
  EXPECT_EQ(skipped_of(p), strings{});
  ASSERT_EQ(p.starts.size(), 1u);
  EXPECT_LE(p.starts[0].end, p.reservations[0].start);  // job 8 ends before job 5 starts
  EXPECT_EQ(p.counters.jobs_tested, 4u);

  // The main loop alone starts nothing here: job 5 waits and everything else shares its nodes.
  auto m = main_loop(in);
  EXPECT_EQ(starts_of(in, m), strings{});
  EXPECT_EQ(reservations_of(in, m), strings{"5@A 40-130"});
  EXPECT_EQ(skipped_of(m), (strings{"6 priority by 5", "7 priority by 5", "8 priority by 5"}));
}

// Lattice step 2c: a pool of 4 units, 2 busy until 11:00; H (4 units, 1 h) is reserved at
// 11:00. L (2 units, 30 min) fits the gap before it and starts; L2 (2 units, 90 min) would
// still run at 11:00 and delay H, so it is not started but planned after H, at 12:00.
TEST(Backfill, LatticeStep2cFillsTheGapBeforeAReservation) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("pool", 4)};
  in.running = {{"r", 0, 2, clock_at(11, 0)}};
  in.pending = {job("H", 4, 60 * minute), job("L", 2, 30 * minute)};
  auto p = backfill(in);
  EXPECT_EQ(starts_of(in, p), strings{"L@pool 0-30 backfill"});
  EXPECT_EQ(reservations_of(in, p), strings{"H@pool 60-120"});
  // A job that ends exactly when H starts fills the whole gap; one a microsecond longer does not.
  in.pending[1].duration = 60 * minute;
  EXPECT_EQ(starts_of(in, backfill(in)), strings{"L@pool 0-60 backfill"});
  in.pending[1].duration = 60 * minute + 1;
  EXPECT_EQ(starts_of(in, backfill(in)), strings{});
}

TEST(Backfill, LatticeStep2cDoesNotStartAJobThatWouldDelayAReservation) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("pool", 4)};
  in.running = {{"r", 0, 2, clock_at(11, 0)}};
  in.pending = {job("H", 4, 60 * minute), job("L2", 2, 90 * minute)};
  auto p = backfill(in);
  EXPECT_EQ(starts_of(in, p), strings{});
  EXPECT_EQ(reservations_of(in, p), (strings{"H@pool 60-120", "L2@pool 120-210"}));
  // Without H, L2 starts at once: it is H's reservation that holds it back.
  in.pending.erase(in.pending.begin());
  EXPECT_EQ(starts_of(in, backfill(in)), strings{"L2@pool 0-90 backfill"});
}

// EASY backfilling (max_reservations 1), as the trace simulator runs it: only the first job
// that cannot start is reserved for; a later job starts if it fits now without delaying that
// reservation (ending exactly at its start is fine: intervals are half-open), else it waits
// with no reservation, where Slurm's loop would give it one.
TEST(Backfill, EasyReservesOnlyTheFirstJobThatCannotStart) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("m", 10)};
  in.running = {{"r", 0, 6, clock_at(11, 40)}};
  in.pending = {job("A", 8, 60 * minute),    // needs 8: waits for r (11:40), reserved then
                job("B", 4, 200 * minute),   // fits now, but would hold 4 of A's 8 at 11:40
                job("C", 2, 100 * minute),   // ends exactly at 11:40: does not delay A
                job("D", 2, 1000 * minute),  // still runs at 11:40, on the 2 processors A leaves spare
                job("E", 9, 30 * minute)};   // cannot start now
  backfill_limits easy;
  easy.max_reservations = 1;
  auto p = backfill(in, easy);
  EXPECT_EQ(starts_of(in, p), (strings{"C@m 0-100 backfill", "D@m 0-1000 backfill"}));
  EXPECT_EQ(reservations_of(in, p), strings{"A@m 100-160"});
  EXPECT_EQ(skipped_of(p), (strings{"B max_reservations", "E max_reservations"}));
  // Slurm's way reserves every job it tests.
  auto all = backfill(in);
  EXPECT_EQ(starts_of(in, all), (strings{"C@m 0-100 backfill", "D@m 0-1000 backfill"}));
  EXPECT_EQ(reservations_of(in, all), (strings{"A@m 100-160", "B@m 160-360", "E@m 1000-1030"}));
}

// The same with baton workers (capacity 1): H may use w1 or w2, both busy, and is planned on
// w1 when it frees at 10:30; L may use any worker and starts on the idle w3. L3 may only use
// w1: it cannot go before H (w1 is busy until H's start), so it is planned after H.
TEST(Backfill, WorkersKeepReservations) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("w1"), node("w2"), node("w3")};
  in.running = {{"r1", 0, 1, clock_at(10, 30)}, {"r2", 1, 1, clock_at(11, 0)}};
  in.classes = {{{0, 1}}, {{0, 1, 2}}, {{0}}};
  in.pending = {job("H", 1, 60 * minute, 0), job("L", 1, 120 * minute, 1), job("L3", 1, 20 * minute, 2)};
  auto p = backfill(in);
  EXPECT_EQ(starts_of(in, p), strings{"L@w3 0-120 backfill"});
  EXPECT_EQ(reservations_of(in, p), (strings{"H@w1 30-90", "L3@w1 90-110"}));
}

// ---------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------

namespace {
plan_input three_idle_nodes(std::vector<plan_job> jobs) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("n1"), node("n2"), node("n3")};
  in.pending = std::move(jobs);
  return in;
}
}  // namespace

TEST(BackfillLimits, MaxJobTest) {
  auto in = three_idle_nodes({job("a", 1, minute), job("b", 1, minute), job("c", 1, minute)});
  backfill_limits lim;
  lim.bf_max_job_test = 2;
  auto p = backfill(in, lim);
  EXPECT_EQ(starts_of(in, p), (strings{"a@n1 0-1 backfill", "b@n2 0-1 backfill"}));
  EXPECT_EQ(skipped_of(p), strings{"c bf_max_job_test"});
  EXPECT_EQ(p.counters.jobs_tested, 2u);
}

TEST(BackfillLimits, MaxJobUser) {
  auto in =
      three_idle_nodes({job("a1", 1, minute, 0, "alice"), job("a2", 1, minute, 0, "alice"), job("b1", 1, minute, 0, "bob")});
  backfill_limits lim;
  lim.bf_max_job_user = 1;
  auto p = backfill(in, lim);
  EXPECT_EQ(starts_of(in, p), (strings{"a1@n1 0-1 backfill", "b1@n2 0-1 backfill"}));
  EXPECT_EQ(skipped_of(p), strings{"a2 bf_max_job_user"});
}

TEST(BackfillLimits, MaxJobPart) {
  auto in = three_idle_nodes(
      {job("g1", 1, minute, 0, "u", "gpu"), job("g2", 1, minute, 0, "v", "gpu"), job("c1", 1, minute, 0, "u", "cpu")});
  backfill_limits lim;
  lim.bf_max_job_part = 1;
  auto p = backfill(in, lim);
  EXPECT_EQ(starts_of(in, p), (strings{"g1@n1 0-1 backfill", "c1@n2 0-1 backfill"}));
  EXPECT_EQ(skipped_of(p), strings{"g2 bf_max_job_part"});
}

TEST(BackfillLimits, Window) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("n1")};
  in.running = {{"r", 0, 1, clock_at(13, 0)}};
  in.pending = {job("j", 1, 60 * minute)};
  backfill_limits lim;
  lim.bf_window = 120 * minute;
  auto p = backfill(in, lim);
  EXPECT_EQ(reservations_of(in, p), strings{});
  EXPECT_EQ(skipped_of(p), strings{"j bf_window"});
  lim.bf_window = 180 * minute;  // a start exactly at the window's end is within it
  EXPECT_EQ(reservations_of(in, backfill(in, lim)), strings{"j@n1 180-240"});
}

// Three busy nodes: each job probes them in id order for a start earlier than the best so
// far. a: n1 11:00, n2 (none before), n3 (none): 3 probes. With a budget of 3 b is not
// tested; with 4 it is (a job once begun is finished): n1 12:00, n2 11:30, n3 none before.
TEST(BackfillLimits, WorkBudget) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("n1"), node("n2"), node("n3")};
  in.running = {{"r1", 0, 1, clock_at(11, 0)}, {"r2", 1, 1, clock_at(11, 30)}, {"r3", 2, 1, clock_at(12, 0)}};
  in.pending = {job("a", 1, 60 * minute), job("b", 1, 60 * minute), job("c", 1, 60 * minute)};
  backfill_limits lim;
  lim.work_budget = 3;
  auto p = backfill(in, lim);
  EXPECT_EQ(reservations_of(in, p), strings{"a@n1 60-120"});
  EXPECT_EQ(skipped_of(p), (strings{"b work_budget", "c work_budget"}));
  EXPECT_EQ(p.counters.probes, 3u);
  lim.work_budget = 4;
  p = backfill(in, lim);
  EXPECT_EQ(reservations_of(in, p), (strings{"a@n1 60-120", "b@n2 90-150"}));
  EXPECT_EQ(skipped_of(p), strings{"c work_budget"});
  EXPECT_EQ(p.counters.probes, 6u);
  // The main loop spends the same budget the same way.
  main_limits ml;
  ml.work_budget = 3;
  EXPECT_EQ(skipped_of(main_loop(in, ml)), (strings{"b work_budget", "c work_budget"}));
}

TEST(BackfillLimits, NoEligibleNode) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("small", 2), node("big", 8)};
  in.classes = {{{}}, {{0}}};
  in.pending = {job("nowhere", 1, minute, 0), job("too-big", 4, minute, 1), job("bad-class", 1, minute, 7)};
  auto p = backfill(in);
  EXPECT_EQ(skipped_of(p), (strings{"nowhere no_eligible_node", "too-big no_eligible_node", "bad-class no_eligible_node"}));
}

// ---------------------------------------------------------------------------------------
// Windows and checkpointing
// ---------------------------------------------------------------------------------------

// Worker w's allocation ends in 10 minutes; worker x is busy for 2 hours. A one-hour job that
// does not checkpoint never goes to w; a checkpointing one with min_useful 5 min may take w
// now (until the window's end); with min_useful 15 min it may not, and waits for x.
TEST(Backfill, WindowEndAndCheckpointing) {
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("w", 1, 0, clock_at(10, 10)), node("x")};
  in.running = {{"r", 1, 1, clock_at(12, 0)}};
  auto hour_job = [](bool checkpoints, time_us min_useful) {
    auto j = job("j", 1, 60 * minute);
    j.checkpoints = checkpoints;
    j.min_useful = min_useful;
    return j;
  };
  in.pending = {hour_job(false, 0)};
  EXPECT_EQ(reservations_of(in, backfill(in)), strings{"j@x 120-180"});
  EXPECT_EQ(starts_of(in, main_loop(in)), strings{});

  in.pending = {hour_job(true, 5 * minute)};
  EXPECT_EQ(starts_of(in, backfill(in)), strings{"j@w 0-10 backfill"});
  EXPECT_EQ(starts_of(in, main_loop(in)), strings{"j@w 0-10 main"});

  in.pending = {hour_job(true, 15 * minute)};
  EXPECT_EQ(reservations_of(in, backfill(in)), strings{"j@x 120-180"});

  // Only w: the plain job can never run.
  in.nodes.pop_back();
  in.running.clear();
  in.pending = {hour_job(false, 0)};
  EXPECT_EQ(skipped_of(backfill(in)), strings{"j no_eligible_node"});
}

// ---------------------------------------------------------------------------------------
// Properties over random instances
// ---------------------------------------------------------------------------------------

namespace {

struct occupation {
  int64_t units;
  time_us start, end;
};

// The earliest start on one node by brute force: free units only rise where an occupation
// ends or the window opens, so those (and now) are the only candidates.
std::optional<time_slot> oracle_earliest(const plan_node& n, const std::vector<occupation>& occ, const plan_job& j, time_us now,
                                         time_us not_after) {
  const time_us until = n.available_until == 0 ? time_never : n.available_until;
  const time_us dur = std::max<time_us>(j.duration, 1);
  const time_us need = j.checkpoints ? std::clamp<time_us>(j.min_useful, 1, dur) : dur;
  std::vector<time_us> candidates{now, n.available_from};
  for (const auto& o : occ) candidates.push_back(o.end);
  std::sort(candidates.begin(), candidates.end());
  for (time_us s : candidates) {
    if (s < now || s < n.available_from || s > not_after) continue;
    time_us e = s + dur;
    if (e > until) {
      if (!j.checkpoints) continue;
      e = until;
    }
    if (e - s < need) continue;
    if (j.units > n.capacity) return std::nullopt;
    // Load at s and wherever an occupation begins inside [s, e).
    std::vector<time_us> points{s};
    for (const auto& o : occ)
      if (o.start > s && o.start < e) points.push_back(o.start);
    bool fits = true;
    for (time_us t : points) {
      int64_t used = 0;
      for (const auto& o : occ)
        if (o.start <= t && t < o.end) used += o.units;
      if (used + j.units > n.capacity) fits = false;
    }
    if (fits) return time_slot{s, e};
  }
  return std::nullopt;
}

struct instance {
  plan_input in;
  backfill_limits limits;
};

instance random_instance(std::mt19937_64& rng, bool with_resolution) {
  auto pick = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  instance x;
  auto& in = x.in;
  in.now = clock_at(10, 0);
  const int nodes = static_cast<int>(pick(1, 6));
  // Ids out of index order, so that ties on id are not ties on position.
  std::vector<int> names(nodes);
  for (int i = 0; i < nodes; ++i) names[i] = i;
  std::shuffle(names.begin(), names.end(), rng);
  for (int i = 0; i < nodes; ++i) {
    plan_node n = node("n" + std::to_string(names[i]), pick(1, 4));
    if (pick(0, 9) < 3) n.available_from = in.now + pick(1, 12) * 15 * minute;
    if (pick(0, 9) < 4) n.available_until = std::max(in.now, n.available_from) + pick(0, 24) * 15 * minute;
    if (n.available_from <= in.now) {
      int64_t used = 0;
      for (int r = static_cast<int>(pick(0, 3)); r > 0; --r) {
        int64_t u = pick(1, 2);
        if (used + u > n.capacity) break;
        used += u;
        in.running.push_back(
            {"r" + std::to_string(in.running.size()), static_cast<uint32_t>(i), u, in.now + pick(-1, 16) * 15 * minute});
      }
    }
    in.nodes.push_back(n);
  }
  if (pick(0, 3) > 0) {
    for (int c = static_cast<int>(pick(1, 3)); c > 0; --c) {
      resource_class k;
      for (int i = 0; i < nodes; ++i)
        if (pick(0, 3) > 0) k.nodes.push_back(static_cast<uint32_t>(i));
      in.classes.push_back(k);
    }
  }
  for (int j = static_cast<int>(pick(1, 12)); j > 0; --j) {
    plan_job pj = job("j" + std::to_string(in.pending.size()), pick(1, 4), pick(1, 16) * 15 * minute + (pick(0, 3) == 0),
                      static_cast<uint32_t>(in.classes.empty() ? 0 : pick(0, static_cast<int64_t>(in.classes.size()) - 1)),
                      "u" + std::to_string(pick(0, 2)), "p" + std::to_string(pick(0, 1)));
    if (pick(0, 3) == 0) {
      pj.checkpoints = true;
      pj.min_useful = pick(1, 12) * 5 * minute;
    }
    in.pending.push_back(pj);
  }
  x.limits.bf_window = pick(1, 8) * 60 * minute;
  x.limits.bf_max_job_test = pick(0, 1) ? static_cast<uint32_t>(pick(3, 12)) : 0;
  x.limits.bf_max_job_user = pick(0, 2) == 0 ? static_cast<uint32_t>(pick(2, 5)) : 0;
  x.limits.bf_max_job_part = pick(0, 2) == 0 ? static_cast<uint32_t>(pick(2, 5)) : 0;
  x.limits.work_budget = pick(0, 2) == 0 ? static_cast<uint64_t>(pick(5, 40)) : 0;
  if (with_resolution) x.limits.bf_resolution = pick(1, 3) * 5 * minute;
  return x;
}

// Occupations per node as the plan leaves them: running jobs from now, then every start and
// reservation.
std::vector<std::vector<occupation>> running_occupations(const plan_input& in) {
  std::vector<std::vector<occupation>> occ(in.nodes.size());
  for (const auto& r : in.running) occ[r.node].push_back({r.units, in.now, std::max(r.expected_end, in.now + 1)});
  return occ;
}

// No node holds more than its capacity at any time, and nothing placed lies outside its window.
void expect_no_overcommit(const plan_input& in, const plan& p, const std::string& what) {
  auto occ = running_occupations(in);
  auto placed = [&](uint32_t node, time_us s, time_us e, int64_t units) {
    const auto& n = in.nodes[node];
    EXPECT_GE(s, std::max(in.now, n.available_from)) << what;
    if (n.available_until != time_never) {
      EXPECT_LE(e, n.available_until) << what;
    }
    occ[node].push_back({units, s, e});
  };
  for (const auto& s : p.starts) placed(s.node, s.start, s.end, in.pending[s.job].units);
  for (const auto& r : p.reservations) placed(r.node, r.start, r.end, in.pending[r.job].units);
  for (size_t n = 0; n < in.nodes.size(); ++n)
    for (const auto& at : occ[n]) {
      int64_t used = 0;
      for (const auto& o : occ[n])
        if (o.start <= at.start && at.start < o.end) used += o.units;
      EXPECT_LE(used, in.nodes[n].capacity) << what << " node " << in.nodes[n].id;
    }
}

// Every placement is exactly the oracle's earliest over the job's nodes (ties: lowest id),
// given what running jobs and earlier placements hold; a job skipped for bf_window or for
// lack of a node has no start within the window.
void expect_earliest_starts(const plan_input& in, const plan& p, time_us not_after, const std::string& what) {
  auto occ = running_occupations(in);
  std::map<uint32_t, std::pair<uint32_t, time_slot>> placed;
  for (const auto& s : p.starts) placed[s.job] = {s.node, {s.start, s.end}};
  for (const auto& r : p.reservations) placed[r.job] = {r.node, {r.start, r.end}};
  std::map<uint32_t, skip_reason> skipped;
  for (const auto& s : p.skipped) skipped[s.job] = s.reason;
  for (uint32_t i = 0; i < in.pending.size(); ++i) {
    const auto& j = in.pending[i];
    auto sk = skipped.find(i);
    if (sk != skipped.end() && sk->second != skip_reason::bf_window && sk->second != skip_reason::no_eligible_node) continue;
    std::vector<uint32_t> nodes;
    if (in.classes.empty()) {
      for (uint32_t n = 0; n < in.nodes.size(); ++n) nodes.push_back(n);
    } else if (j.resource_class < in.classes.size()) {
      nodes = in.classes[j.resource_class].nodes;
    }
    std::optional<std::pair<uint32_t, time_slot>> best;
    for (uint32_t n : nodes) {
      auto s = oracle_earliest(in.nodes[n], occ[n], j, in.now, not_after);
      if (!s) continue;
      if (!best || s->start < best->second.start || (s->start == best->second.start && in.nodes[n].id < in.nodes[best->first].id))
        best = std::make_pair(n, *s);
    }
    auto pl = placed.find(i);
    if (pl == placed.end()) {
      EXPECT_FALSE(best) << what << " job " << j.id << " skipped but fits at "
                         << (best ? (best->second.start - in.now) / minute : 0);
      continue;
    }
    ASSERT_TRUE(best) << what << " job " << j.id;
    EXPECT_EQ(in.nodes[pl->second.first].id, in.nodes[best->first].id) << what << " job " << j.id;
    EXPECT_EQ(pl->second.second, best->second) << what << " job " << j.id;
    occ[pl->second.first].push_back({j.units, pl->second.second.start, pl->second.second.end});
  }
}

// The same instance with its nodes (and the running jobs and classes naming them) in reverse
// order: ties break on id, so the plan must name the same nodes.
plan_input reversed_nodes(plan_input in) {
  const uint32_t n = static_cast<uint32_t>(in.nodes.size());
  std::reverse(in.nodes.begin(), in.nodes.end());
  for (auto& r : in.running) r.node = n - 1 - r.node;
  for (auto& c : in.classes)
    for (auto& x : c.nodes) x = n - 1 - x;
  return in;
}

strings by_id(const plan_input& in, const plan& p) {
  strings out = starts_of(in, p);
  for (auto& r : reservations_of(in, p)) out.push_back(r);
  for (auto& s : skipped_of(p)) out.push_back(s);
  return out;
}

}  // namespace

TEST(BackfillProperties, RandomInstances) {
  std::mt19937_64 rng(20240611);
  // What the instances exercised, so that a generator gone dull shows up as a failure.
  size_t starts = 0, reservations = 0, cut_short = 0, on_placeholders = 0;
  std::map<skip_reason, size_t> skips;
  for (int k = 0; k < 500; ++k) {
    auto x = random_instance(rng, false);
    const std::string what = "instance " + std::to_string(k);
    auto p = backfill(x.in, x.limits);
    starts += p.starts.size();
    reservations += p.reservations.size();
    for (const auto& s : p.starts) cut_short += s.end - s.start < x.in.pending[s.job].duration;
    for (const auto& r : p.reservations) on_placeholders += x.in.nodes[r.node].available_from > x.in.now;
    for (const auto& s : p.skipped) ++skips[s.reason];
    EXPECT_EQ(p.starts.size() + p.reservations.size() + p.skipped.size(), x.in.pending.size()) << what;
    expect_no_overcommit(x.in, p, what);
    expect_earliest_starts(x.in, p, x.in.now + x.limits.bf_window, what);
    for (const auto& s : p.starts) EXPECT_EQ(s.start, x.in.now) << what;
    for (const auto& r : p.reservations) {
      EXPECT_GT(r.start, x.in.now) << what;
      EXPECT_LE(r.start, x.in.now + x.limits.bf_window) << what;
    }
    // On a worker (capacity 1) a backfilled start ends before any reservation there begins.
    for (const auto& s : p.starts)
      for (const auto& r : p.reservations)
        if (s.node == r.node && x.in.nodes[s.node].capacity == 1) {
          EXPECT_LE(s.end, r.start) << what;
        }
    EXPECT_TRUE(backfill(x.in, x.limits) == p) << what;  // the same input, the same plan
    auto rev = reversed_nodes(x.in);
    EXPECT_EQ(by_id(rev, backfill(rev, x.limits)), by_id(x.in, p)) << what;

    auto m = main_loop(x.in);
    expect_no_overcommit(x.in, m, what + " main");
    expect_earliest_starts(x.in, m, time_never, what + " main");
    for (const auto& s : m.starts) EXPECT_EQ(s.start, x.in.now) << what;
    EXPECT_TRUE(main_loop(x.in) == m) << what;
    EXPECT_EQ(by_id(rev, main_loop(rev)), by_id(x.in, m)) << what;
  }
  EXPECT_GT(starts, 100u);
  EXPECT_GT(reservations, 100u);
  EXPECT_GT(cut_short, 5u);  // checkpointing jobs cut by a window's end
  EXPECT_GT(on_placeholders, 50u);
  for (auto r : {skip_reason::bf_max_job_test, skip_reason::bf_max_job_user, skip_reason::bf_max_job_part, skip_reason::bf_window,
                 skip_reason::work_budget, skip_reason::no_eligible_node})
    EXPECT_GT(skips[r], 20u) << to_string(r);
}

// With bf_resolution ends are held longer than asked: still no overcommit, still deterministic.
TEST(BackfillProperties, RandomInstancesWithResolution) {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 200; ++k) {
    auto x = random_instance(rng, true);
    const std::string what = "instance " + std::to_string(k);
    auto p = backfill(x.in, x.limits);
    expect_no_overcommit(x.in, p, what);
    EXPECT_TRUE(backfill(x.in, x.limits) == p) << what;
  }
}

// A profile kept up to date (advance to each event, release what an ending job had left,
// occupy for a starting one) has, at every point, exactly the steps of one built afresh from
// the jobs then running: the trace simulator keeps one instead of rebuilding it at each pass.
TEST(CapacityProfile, KeptUpToDateItIsTheProfileBuiltAfresh) {
  std::mt19937_64 rng(58);
  auto pick = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  size_t compared = 0, released_early = 0;
  for (int k = 0; k < 300; ++k) {
    const int64_t capacity = pick(0, 6);
    const time_us now0 = clock_at(10, 0);
    const time_us from = pick(0, 3) == 0 ? now0 + pick(1, 20) * 15 * minute : 0;
    const time_us until = pick(0, 3) == 0 ? now0 + pick(0, 60) * 15 * minute : time_never;
    const time_us resolution = pick(0, 2) == 0 ? 15 * minute : 0;
    struct run {
      int64_t units;
      time_us start, expected_end, end;
    };
    std::vector<run> runs;
    for (int r = static_cast<int>(pick(1, 25)); r > 0; --r) {
      const time_us start = now0 + pick(0, 40) * 5 * minute;
      const time_us expected = start + pick(1, 24) * 5 * minute + pick(0, 1);
      runs.push_back({pick(1, 3), start, expected, std::min(expected, start + pick(0, 24) * 5 * minute)});
    }
    std::vector<time_us> times{now0};
    for (const auto& r : runs) times.insert(times.end(), {r.start, r.end});
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    capacity_profile kept(now0, capacity, from, until, resolution);
    for (time_us t : times) {
      kept.advance(t);
      for (const auto& r : runs)  // ends first, as the simulator orders its facts
        if (r.end == t && r.start < t) {
          kept.release(r.units, t, r.expected_end);
          released_early += r.end < r.expected_end;
        }
      for (const auto& r : runs)
        if (r.start == t && r.end > t) kept.occupy(r.units, t, r.expected_end);
      capacity_profile fresh(t, capacity, from, until, resolution);
      for (const auto& r : runs)
        if (r.start <= t && r.end > t) fresh.occupy(r.units, t, std::max(r.expected_end, t + 1));
      ASSERT_EQ(kept.steps(), fresh.steps()) << "instance " << k << " at +" << (t - now0) / minute << " min";
      ++compared;
    }
  }
  EXPECT_GT(compared, 3000u);
  EXPECT_GT(released_early, 1000u);
}

// Both loops over profiles the caller keeps plan exactly as over the list of running jobs.
// Each node's profile with the instance's running jobs in, as a caller that keeps profiles
// from pass to pass hands them to the planner.
static std::vector<capacity_profile> occupied_profiles(const plan_input& in, time_us resolution) {
  std::vector<capacity_profile> out;
  for (const auto& n : in.nodes) out.emplace_back(in.now, n.capacity, n.available_from, n.available_until, resolution);
  for (const auto& r : in.running) out[r.node].occupy(r.units, in.now, std::max(r.expected_end, in.now + 1));
  return out;
}

TEST(BackfillProperties, PlansOverKeptProfilesAreThePlansOverRunningJobs) {
  std::mt19937_64 rng(5858);
  for (int k = 0; k < 300; ++k) {
    auto x = random_instance(rng, k % 2 == 1);
    const std::string what = "instance " + std::to_string(k);
    auto profiles = [&](time_us resolution) { return occupied_profiles(x.in, resolution); };
    plan_input without_running = x.in;
    without_running.running.clear();  // not read when the profiles are given
    EXPECT_TRUE(backfill(without_running, profiles(x.limits.bf_resolution), x.limits) == backfill(x.in, x.limits)) << what;
    EXPECT_TRUE(main_loop(without_running, profiles(0)) == main_loop(x.in)) << what;
  }
  plan_input in;
  in.now = clock_at(10, 0);
  in.nodes = {node("a"), node("b")};
  EXPECT_THROW(backfill(in, std::vector<capacity_profile>{capacity_profile(in.now, 1)}), std::invalid_argument);
  EXPECT_THROW(main_loop(in, {capacity_profile(in.now, 1), capacity_profile(in.now - 1, 1)}), std::invalid_argument);
}

// One workspace handed back plan after plan (as the trace simulator does) gives each time the
// plan a fresh planner gives: nothing of an earlier plan (more nodes, more classes, longer
// lists) leaks into a later one.
TEST(BackfillProperties, AReusedWorkspacePlansAsAFreshOne) {
  std::mt19937_64 rng(1258);
  plan_workspace ws;
  size_t compared = 0, nonempty = 0;
  for (int k = 0; k < 400; ++k) {
    auto x = random_instance(rng, k % 3 == 1);
    const std::string what = "instance " + std::to_string(k);
    auto profiles = [&](time_us resolution) { return occupied_profiles(x.in, resolution); };
    // Both loops, in either order, through the same workspace.
    const plan fresh_bf = backfill(x.in, x.limits), fresh_main = main_loop(x.in);
    const auto bf_profiles = profiles(x.limits.bf_resolution), main_profiles = profiles(0);
    if (k % 2) {
      EXPECT_TRUE(backfill(x.in, bf_profiles, x.limits, ws) == fresh_bf) << what;
      EXPECT_TRUE(main_loop(x.in, main_profiles, main_limits{}, ws) == fresh_main) << what;
    } else {
      EXPECT_TRUE(main_loop(x.in, main_profiles, main_limits{}, ws) == fresh_main) << what;
      EXPECT_TRUE(backfill(x.in, bf_profiles, x.limits, ws) == fresh_bf) << what;
    }
    compared += 2;
    nonempty += !fresh_bf.starts.empty() && !fresh_bf.skipped.empty();
  }
  EXPECT_EQ(compared, 800u);
  EXPECT_GT(nonempty, 50u);  // plans with both starts and skips, so that stale entries would show
}
