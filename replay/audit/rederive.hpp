#pragma once
// Re-derives every scheduling decision in the log: replays the events in order and, at
// each job.assigned, runs the same pure choice (core/world/scheduling.hpp) on the state as it
// was, with the stale workers the decision recorded left out. The choice and its whole
// record must come out identical. Each priority recalculation is decided again, under the
// policy it recorded, on the state as it was: its fair-share figures must come out identical
// (the queue order follows from them). Each planning cycle is re-planned on the snapshot it
// names; each preemption decision is decided again on the state as it was, and its job events
// must follow it exactly as re-derived. Provisioning decisions (a Slurm submission plan, a
// Salad replica target) are decided again on the world at the point their basis names; each
// reap is decided again from the lease facts it recorded, and the job events it caused must
// follow it as re-derived. A simulation's log (replay/sim/sim_log.hpp) has its passes decided
// again on the simulated machine folded from its facts.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/world/world.hpp"
#include "events/event_store.hpp"
#include "replay/recovery/progress.hpp"

namespace baton::replay {

// One decision that did not re-derive: where, what, and recorded against re-derived field by
// field (`diff`: a JSON Patch, RFC 6902, turning the recorded value into the re-derived one).
struct divergence {
  uint64_t seq = 0;
  std::string stream, type;
  std::string what;  // one line for people
  nlohmann::json recorded, rederived, diff;
};
nlohmann::json to_json(const divergence& d);

// Which decisions to check: those recorded at sequences from..to (0: to the end). Events
// before `from` are replayed unchecked; the replay stops after `to`.
struct rederive_range {
  uint64_t from = 1, to = 0;
};

struct rederive_report {
  uint64_t events = 0;
  uint64_t decisions = 0;             // assignments, recalculations, plans and preemption decisions
  uint64_t assignments = 0;           // of which assignments
  uint64_t recalculations = 0;        // of which priority recalculations
  uint64_t plans = 0;                 // of which planning cycles (starts and reservations)
  uint64_t preemption_decisions = 0;  // of which preemption decisions (each may preempt several jobs)
  uint64_t preemptions = 0;           // jobs preempted, and grace periods that ended, in them
  uint64_t provisioning_plans = 0;    // of which Slurm submission plans (one per placeholder made)
  uint64_t salad_targets = 0;         // of which Salad replica targets
  uint64_t reaps = 0;                 // of which reaps
  uint64_t storage_decisions = 0;     // of which storage decisions: checkpoints released, blobs removed
  uint64_t sim_passes = 0;            // of which passes of a simulation (a log written by simulate --log)
  uint64_t unchecked = 0;             // recorded before their basis was (older logs): replayed, not re-derived
  uint64_t mismatches = 0;
  std::vector<std::string> problems;    // the first few mismatches, one line each
  std::vector<divergence> divergences;  // the same, in full
  // The world after the last event replayed. Handed back rather than freed inside the pass:
  // freeing a replay's world (a quarter of a million jobs at 1,000,000 events) took about a
  // tenth of the pass, and baton-replay, which exits after printing the report, leaves that
  // to the kernel instead.
  std::unique_ptr<core::world> world;
};

rederive_report rederive_decisions(const events::event_store& store, rederive_range range = {}, const progress_fn& progress = {});

// For a program about to exit: keeps the report's world, never freed, where a leak checker
// still sees it (the kernel takes its pages back at exit at once).
void leave_world_to_exit(rederive_report& r);

}  // namespace baton::replay
