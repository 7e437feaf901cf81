#pragma once
// A discrete-event simulation of one machine of N processors running a workload (an SWF
// trace, or the jobs recorded in a baton log), scheduled by the core's own code: the planner
// (core/planning/backfill.hpp: main loop, EASY or Slurm-style backfill) over one node of capacity N,
// and for multifactor and Lattice the core's priority math (multifactor_priority, fair_tree,
// lattice_score, decayed usage) with the trace's groups as accounts and users under them.
//
// Rules, fixed and recorded with every result (docs/replay.md): at one timestamp completions,
// then arrivals, then one scheduling pass; a running job's reservation end is its start plus
// its estimate (the requested time); the queue's ties break on submit time, then job id;
// a later job backfills if it ends by a reservation's start (<=) or fits in the processors
// spare after it. A pass that cannot start anything (no waiting job fits the free
// processors) is skipped: its plan would start nothing. Priorities are recalculated at a pass
// once the policy's period has passed since the last, and only when two jobs or more wait
// (one alone needs no order).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/policy/priority_policy.hpp"
#include "replay/sim/swf.hpp"

namespace baton::replay {

enum class sim_order { fifo, multifactor, lattice };
enum class sim_backfill { none, easy, conservative };
const char* to_string(sim_backfill b);
// "none", "easy", "conservative"; false for another name.
bool sim_backfill_from(std::string_view name, sim_backfill& b);

struct sim_settings {
  int64_t capacity = 1;
  sim_order order = sim_order::fifo;
  sim_backfill backfill = sim_backfill::easy;
  // multifactor and lattice: weights, max age, decay half-life, calculation period, profile.
  core::priority_policy policy;
  uint32_t bf_max_job_test = 0;  // conservative backfill: jobs tested per pass (0: all)
  // Fair share's raw shares: of each group (an account under root) and each (group, user);
  // absent ones have one share, as a trace's groups and users do (whatif gives its config's).
  std::map<int64_t, uint32_t> group_shares;
  std::map<std::pair<int64_t, int64_t>, uint32_t> user_shares;
  // Multifactor: rank the whole fair-share tree at every recalculation (core::fair_tree), as
  // the reference that the incremental ranking (core::decayed_fair_tree) must match (tests).
  bool exact_fair_share = false;
  // EASY in arrival order: the queue walked for the jobs that fit as with a priority order, the
  // reference for the walk through the packed processor counts (tests).
  bool plain_queue_walk = false;
};

// "fifo" (no backfill), "easy", "conservative", "multifactor", "lattice:<profile>": the order
// and the backfill that name stands for (multifactor and Lattice backfill EASY-style unless
// told otherwise). False if the name means nothing.
bool sim_policy_from(const std::string& name, sim_settings& s);

struct sim_job_result {
  int64_t id = 0, submit = 0, start = 0, end = 0, procs = 0, run = 0, estimate = 0, user = -1, group = -1;
  int64_t wait() const { return start - submit; }
};

struct sim_result {
  std::vector<sim_job_result> jobs;  // in the input's order
  uint64_t passes = 0;               // scheduling passes that called the planner
  uint64_t recalculations = 0;       // priority recalculations (multifactor, lattice)
  uint64_t full_rankings = 0;        // multifactor recalculations that ranked the whole tree
  std::vector<std::string> notes;    // jobs that could never run (more processors than the machine)
};

struct sim_pass;
class sim_machine;

// What a simulation did, fact by fact, for whoever records it (replay/sim/sim_log.hpp).
class sim_observer {
 public:
  virtual ~sim_observer() = default;
  virtual void arrived(const sim_job&) {}
  virtual void refused(const sim_job&, const std::string& /*why*/) {}
  virtual void ended(const sim_job&, int64_t /*at*/) {}
  // A pass that ran the planner, already in force; `m` maps its machine indexes to jobs.
  virtual void passed(const sim_pass&, const sim_machine& /*m*/) {}
};

// Jobs need not be sorted; a job asking for more than the capacity never runs (noted).
sim_result simulate(const std::vector<sim_job>& jobs, const sim_settings& s, sim_observer* observer = nullptr);

}  // namespace baton::replay
