#pragma once
// The simulated machine: the state a trace simulation keeps and its one decision, the
// scheduling pass. simulate() (replay/sim/simulator.hpp) feeds it the trace's facts (arrivals,
// ends) and puts each pass in force; rederive folds it again from a simulation's event log
// (replay/sim/sim_log.hpp) and decides every recorded pass a second time. The rules are those of
// simulator.hpp.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <vector>

#include "core/planning/backfill.hpp"
#include "replay/sim/simulator.hpp"

namespace baton::replay {

struct sim_reservation {
  uint32_t job = 0;   // machine index
  int64_t start = 0;  // seconds
};

// One scheduling pass that ran the planner.
struct sim_pass {
  int64_t at = 0;
  bool recalculated = false;     // priorities were recalculated first (multifactor, Lattice)
  std::vector<uint32_t> starts;  // jobs started now (machine indexes), in the plan's order
  std::vector<sim_reservation> reservations;
};

class sim_machine {
 public:
  explicit sim_machine(sim_settings s);
  ~sim_machine();
  sim_machine(const sim_machine&) = delete;
  sim_machine& operator=(const sim_machine&) = delete;

  const sim_settings& settings() const { return s_; }

  void reserve(size_t jobs);  // room for this many arrivals (a trace's size is known up front)
  // A job arrives (at its submit time, not before the last pass). Its machine index (the
  // arrival's rank), or nothing if it asks for more processors than the machine has: such a
  // job never runs and the machine does not keep it.
  std::optional<uint32_t> arrive(const sim_job& j);
  // The same for a caller that keeps `j` where it is for the machine's life (simulate(): its
  // input): the machine keeps a pointer to it, not a copy (a 200k-job trace's copies were
  // 10 MB of fresh pages, whose zeroing is a good part of a run).
  std::optional<uint32_t> arrive_kept(const sim_job& j);
  // A running job ends at `now`. False (nothing changes) if that job is not running.
  bool end(uint32_t job, int64_t now);

  // The pass at `now`, after that timestamp's ends and arrivals: what the planner starts and
  // reserves. Nothing when the planner need not run (no job waits, or none fits the free
  // processors: its plan would start nothing). Recalculates priorities first when they are
  // due (the machine keeps them: a pass's priorities are those of its last recalculation).
  std::optional<sim_pass> decide_pass(int64_t now);
  // The same pass, kept in the machine (valid until the next call): a simulation decides one
  // at nearly every event, and a fresh pass each time was an allocation or two per event.
  const sim_pass* next_pass(int64_t now);
  // Starts the pass's jobs at its time.
  void apply_pass(const sim_pass& p);

  const sim_job& job(uint32_t i) const { return *jobs_[i]; }
  int64_t start_of(uint32_t i) const { return start_[i]; }  // -1 while it waits
  bool running(uint32_t i) const;
  uint64_t recalculations() const { return recalculations_; }
  // Multifactor recalculations that ranked the whole tree (core::decayed_fair_tree could not
  // certify its answer, or the settings ask for exact_fair_share).
  uint64_t full_rankings() const;

 private:
  class share_book;
  void recalculate(int64_t now);

  sim_settings s_;
  std::unique_ptr<share_book> shares_;
  std::vector<const sim_job*> jobs_;  // arrive's copies in owned_, or arrive_kept's caller's
  std::deque<sim_job> owned_;         // (a deque: its elements stay where they are)
  std::vector<int64_t> start_;
  std::vector<int64_t> procs_;         // each job's, packed: a pass walks the queue by them (a job is 56 bytes)
  std::vector<uint32_t> association_;  // multifactor and Lattice only: each job's (group, user)
  std::vector<int64_t> priority_;      // multifactor and Lattice only
  std::vector<uint32_t> running_;      // any order: usage and backlog sums, the planner's list when a job is overdue
  std::vector<uint32_t> running_at_;   // each job's place in running_ while it runs
  // Waiting jobs in arrival order; a job that starts stays until the next compaction (it is
  // skipped: start_ >= 0), so a pass costs what it looks at, not the whole queue.
  std::vector<uint32_t> pending_;
  // Beside each pending_ entry its job's processors, or -1 once it started: EASY's pass walks
  // the queue through these alone, in order, rather than reaching into each job's state.
  std::vector<int64_t> pending_procs_at_;
  std::vector<uint32_t> pending_pos_;  // each waiting job's place in pending_
  size_t pending_head_ = 0;            // pending_[0, head) have all started
  size_t pending_live_ = 0;            // jobs still waiting
  std::vector<bool> is_running_;
  std::multiset<int64_t> pending_procs_;
  int64_t used_ = 0;
  // The machine's capacity profile with the running jobs in, kept from pass to pass (each
  // start occupies its span, each end releases what is left of it) rather than rebuilt from
  // every running job at each pass; handed to the planner, which plans on a copy.
  std::vector<core::capacity_profile> occupied_;
  // The running jobs' expected ends (start + estimate) with the job, earliest first; ended
  // jobs are dropped when they reach the top. A job still running at its expected end
  // (possible in a hand-made log, never in a trace) is planned as the planner plans it from a
  // list of running jobs: to end at the next instant.
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>, std::greater<>> due_;
  int64_t calculated_at_;
  bool calculated_ = false;
  uint64_t recalculations_ = 0;
  // Scratch kept between passes (no allocation per pass).
  std::vector<uint32_t> order_, subset_;
  std::vector<std::tuple<int64_t, int64_t, int64_t, uint32_t>> keyed_;  // (-priority, submit, id, job)
  std::vector<std::tuple<size_t, int64_t, int64_t>> open_;
  std::vector<uint32_t> wanted_;             // multifactor: the waiting jobs' associations
  std::vector<uint64_t> association_stamp_;  // the recalculation that last put one in wanted_
  core::plan_input plan_in_;
  core::plan_workspace plan_ws_;
  sim_pass pass_;

  core::capacity_profile& occupied_at(int64_t now);
  template <class F>
  void for_each_waiting(F&& f) const;  // in arrival order; f returns false to stop
};

}  // namespace baton::replay
