#pragma once
// What a simulated (or recorded) schedule achieved, with the formulas named so a figure is
// never read under the wrong definition.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "replay/sim/simulator.hpp"

namespace baton::replay {

struct sim_metrics {
  size_t jobs = 0;
  double mean_wait = 0, p95_wait = 0, max_wait = 0;  // seconds
  double mean_flow = 0;                              // wait + run, seconds
  // Bounded slowdown, two published forms: max(1, (wait+run)/max(10, run)) (SC'15's) and
  // (wait+run)/max(run, 60) (the Batsim comparison's).
  double mean_bsld_10 = 0, max_bsld_10 = 0;
  double mean_bsld_60 = 0, p95_bsld_60 = 0;
  double utilization = 0;  // Σ procs × run / (capacity × makespan)
  int64_t makespan = 0;    // last end − first submit, seconds
  // Per group (account): its share of processor-hours, and the share fair share aims at
  // (each group one share, as the simulator's tree has it).
  nlohmann::json per_account = nlohmann::json::object();
};

// Percentiles are nearest-rank: the value at position ceil(p × n) in ascending order.
sim_metrics measure(const std::vector<sim_job_result>& jobs, int64_t capacity);

nlohmann::json to_json(const sim_metrics& m);

}  // namespace baton::replay
