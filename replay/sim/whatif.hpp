#pragma once
// `baton-replay whatif`: the workload a log recorded (who submitted what and when, the GPUs
// and time limit asked for, the run time each job really needed), run through the simulator
// under another policy or other weights, beside what really happened.
//
// The recorded machine is the most GPUs registered at once (pilots and cloud workers alike,
// placeholders not counted), one pool: the simulator knows no GPU models, clusters or
// allocation ends. A job's run time is the sum of its run segments (handoffs included); a
// job that never ran, or is running again at the log's end, is left out (counted). The config's accounts are the fair-share groups,
// each with its raw shares (nested accounts are flattened under root); users keep their shares.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/policy/priority_policy.hpp"
#include "events/event_store.hpp"
#include "replay/sim/simulator.hpp"

namespace baton::replay {

struct recorded_workload {
  std::vector<sim_job> jobs;                           // seconds from the first submit in the window
  std::vector<sim_job_result> happened;                // the same jobs as they really ran
  std::vector<std::string> account_names, user_names;  // by group and user id
  int64_t capacity_gpus = 0;                           // most GPUs registered at once
  int64_t origin_us = 0;                               // the first submit (time 0)
  size_t never_ran = 0;                                // jobs of the window left out: no run finished
  size_t still_running = 0;                            // left out: running again when the log ends
  uint64_t preemptions = 0;                            // job.preempted of the window's jobs
  uint64_t reservations = 0, reservations_kept = 0;    // jobs started after a reservation; by its time
};

// Jobs submitted within [from, to] (recorded times, µs; unset: open).
recorded_workload workload_of(const events::event_store& store, std::optional<int64_t> from_us, std::optional<int64_t> to_us);

struct whatif_options {
  std::string config_path;
  std::string policy;  // "" : the config's scheduling.policy
  std::optional<int64_t> from_us, to_us;
  int64_t gpus = 0;  // 0: the recorded capacity
};

// Both schedules' metrics, side by side, with the rules they rest on.
nlohmann::json run_whatif(const events::event_store& store, const core::priority_policy& policy, const std::string& policy_name,
                          const whatif_options& o);
void print_whatif(std::ostream& out, const nlohmann::json& r);

}  // namespace baton::replay
