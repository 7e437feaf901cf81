#pragma once
// The backfill planner: Slurm's two scheduling loops (sched_config's bf_* limits)
// over plain structs, so that the live scheduler (nodes are baton workers) and a trace
// simulator (one node of N processors) feed it alike. Pure and deterministic: no clock (the
// work budget is a count of node probes, not seconds), no randomness, no hash-map iteration;
// ties break on node id, then on the order of the pending jobs.
//
// Model. A job runs on one node (multi-node jobs are not modelled: a request for k nodes of a
// pool is k units of one node standing for the pool). Each node is a capacity_profile: its
// capacity within its availability window, less running jobs and what the plan has placed.
// Nodes a job may use come from its resource class: a caller-built list of nodes per class
// (e.g. "image X, at least 4 GPUs, cluster Y"), shared by all jobs of that class, so 10,000
// jobs over 2,000 nodes cost one node list per distinct request, not one per job.
#include <cstdint>
#include <string>
#include <vector>

#include "core/planning/capacity_profile.hpp"

namespace baton::core {

struct plan_node {
  std::string id;                        // ties break on it (string order)
  int64_t capacity = 1;                  // a baton worker runs one job at a time
  time_us available_from = 0;            // later than now: a pending allocation (placeholder)
  time_us available_until = time_never;  // 0 or time_never: none; a pilot's allocation end
};

struct plan_running {
  std::string job_id;
  uint32_t node = 0;  // index into plan_input::nodes (an unknown index is ignored)
  int64_t units = 1;
  time_us expected_end = 0;  // already past: taken to end at the next instant (it still runs now)
};

struct plan_job {
  std::string id;
  int64_t units = 1;
  time_us duration = 0;         // the time limit; at least 1 µs is assumed
  uint32_t resource_class = 0;  // index into plan_input::classes (unused when there are none)
  std::string user;             // for bf_max_job_user
  std::string partition;        // for bf_max_job_part
  bool checkpoints = false;     // may start where the window ends before start + duration ...
  time_us min_useful = 0;       // ... if at least this much remains; it then holds the node to the window's end
};

// The nodes a class of jobs may run on: indices into plan_input::nodes, any order (unknown
// indices are ignored). An empty list means no node at all.
struct resource_class {
  std::vector<uint32_t> nodes;
};

struct plan_input {
  time_us now = 0;
  std::vector<plan_node> nodes;
  std::vector<plan_running> running;
  std::vector<resource_class> classes;  // empty: every job may use every node (one class)
  std::vector<plan_job> pending;        // already in evaluation order (tier, priority, submit, id)
};

// The main loop's limits (Slurm: default_queue_depth, max_sched_time).
struct main_limits {
  uint32_t max_jobs = 500;   // jobs walked; 0: all
  uint64_t work_budget = 0;  // node probes; 0: unlimited (stands in for max_sched_time)
};

// The backfill loop's limits, Slurm's names. 0 means "no limit" for the counts.
struct backfill_limits {
  time_us bf_window = 2880LL * 60 * 1'000'000;  // plan starts this far ahead (GWDG's 2 days)
  uint32_t bf_max_job_test = 2000;              // jobs tested in one cycle (GWDG; Slurm's default is 500)
  uint32_t bf_max_job_user = 0;                 // jobs tested per user
  uint32_t bf_max_job_part = 0;                 // jobs tested per partition
  uint64_t work_budget = 0;                     // node probes; 0: unlimited (stands in for bf_max_time)
  time_us bf_resolution = 0;                    // > 0: planned ends round up to a multiple of it
  // Reservations made before later jobs may only start now (0: every job tested gets one,
  // Slurm's way; 1: EASY backfilling, only the first job that cannot start is reserved for).
  uint32_t max_reservations = 0;
};

enum class start_why : uint8_t { main, backfill };

enum class skip_reason : uint8_t {
  priority,     // main loop: a higher job waiting for overlapping nodes holds this one back
  queue_depth,  // main loop: beyond max_jobs
  bf_max_job_test,
  bf_max_job_user,
  bf_max_job_part,
  bf_window,         // no start within bf_window
  work_budget,       // the budget of probes was spent before this job
  no_eligible_node,  // no node of its class could ever hold it (units, window)
  max_reservations,  // it cannot start now, and the reservations allowed are made (EASY)
};
const char* to_string(start_why w);    // "main", "backfill"
const char* to_string(skip_reason r);  // the limit's name, "priority", "no_eligible_node", ...

struct plan_start {
  std::string job_id;
  uint32_t job = 0;  // index into plan_input::pending
  std::string node_id;
  uint32_t node = 0;  // index into plan_input::nodes
  time_us start = 0;  // always now
  time_us end = 0;    // start + duration, or the window's end for a checkpointing job cut short
  start_why why = start_why::main;
  bool operator==(const plan_start& o) const;
};

struct plan_reservation {
  std::string job_id;
  uint32_t job = 0;
  std::string node_id;
  uint32_t node = 0;
  time_us start = 0;  // the earliest start the plan allows; later jobs cannot delay it
  time_us end = 0;
  bool operator==(const plan_reservation& o) const;
};

struct plan_skip {
  std::string job_id;
  uint32_t job = 0;
  skip_reason reason = skip_reason::priority;
  std::string blocked_by;  // reason priority: the waiting job that holds this one back
  bool operator==(const plan_skip& o) const;
};

struct plan_counters {
  uint32_t jobs_tested = 0;  // jobs whose nodes were probed
  uint64_t probes = 0;       // node profiles searched
  bool operator==(const plan_counters& o) const { return jobs_tested == o.jobs_tested && probes == o.probes; }
};

// Every pending job appears in exactly one of starts, reservations, skipped; each list in
// evaluation order.
struct plan {
  std::vector<plan_start> starts;
  std::vector<plan_reservation> reservations;
  std::vector<plan_skip> skipped;
  plan_counters counters;
  bool operator==(const plan& o) const;
};

// Slurm's main loop: walks the pending jobs in order and starts each that fits
// now. A job that does not gets a reservation on the node where it can start earliest and
// blocks its nodes: every later job whose class shares a node with them is skipped
// (`priority`), while jobs of disjoint classes go on (an A100 job does not hold up a V100
// job). Reservations here are not bounded by bf_window.
plan main_loop(const plan_input& in, const main_limits& limits = {});

// Slurm's backfill loop: walks the pending jobs in order within the limits; each gets its
// earliest start over the capacity profiles (running jobs' expected ends, node windows and
// every earlier start and reservation). A start of now starts the job (it delays no
// reservation, since those are in the profiles); a later start within bf_window becomes a
// reservation that later jobs cannot delay. With max_reservations (EASY: 1), once that many
// are made a later job starts only if it can start now without delaying them (a job ending
// exactly at a reservation's start does not delay it: intervals are half-open).
plan backfill(const plan_input& in, const backfill_limits& limits = {});

// The same two loops over profiles the caller keeps: `occupied[i]` is node i's profile at
// in.now holding its running jobs, as the planner would build it (capacity_profile(in.now,
// capacity, available_from, available_until, the loop's resolution: 0 for the main loop,
// bf_resolution for backfill), then occupy(units, in.now, max(expected_end, in.now + 1)) for
// each); in.running is not read. The trace simulator keeps its machine's profile from pass to
// pass (capacity_profile::advance, release) instead of occupying every running job again.
// Throws std::invalid_argument when there is not one profile per node, or one is not at in.now.
plan main_loop(const plan_input& in, const std::vector<capacity_profile>& occupied, const main_limits& limits = {});
plan backfill(const plan_input& in, const std::vector<capacity_profile>& occupied, const backfill_limits& limits = {});

// The planner's working storage, for a caller that plans again and again (the trace simulator
// plans at every event, hundreds of thousands of times a run): handed back at each call, so
// the copies of the profiles, the loops' bookkeeping and the plan's lists keep their capacity
// instead of being allocated and freed each time (a tenth of a simulation's instructions).
// Nothing in it carries over into the next plan: the plan returned (a reference into the
// workspace, valid until its next use) is the one the functions above return (tests).
struct plan_workspace {
  std::vector<capacity_profile> profiles;
  std::vector<uint32_t> by_id;
  std::vector<std::vector<uint32_t>> class_nodes;
  std::vector<int64_t> node_blocker, class_blocker;
  std::vector<uint64_t> class_seen;
  plan out;
};
const plan& main_loop(const plan_input& in, const std::vector<capacity_profile>& occupied, const main_limits& limits,
                      plan_workspace& ws);
const plan& backfill(const plan_input& in, const std::vector<capacity_profile>& occupied, const backfill_limits& limits,
                     plan_workspace& ws);

}  // namespace baton::core
