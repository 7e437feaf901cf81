#pragma once
// `baton-replay simulate`: an SWF trace through the simulator, the result as JSON or text.
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

#include "core/policy/priority_policy.hpp"
#include "replay/sim/swf.hpp"

namespace baton::replay {

struct simulate_options {
  std::string swf_path;
  int64_t procs = 0;              // 0: the trace's MaxProcs
  std::string policy = "easy";    // fifo | easy | conservative | multifactor | lattice:<profile>
  std::string backfill;           // "": the policy's own; none | easy | conservative
  std::string filter = "batsim";  // sc15 | batsim
  std::string config_path;        // batond's config: the scheduling weights for multifactor and Lattice
  std::string log_dir;            // "": no log; else the simulation is written as <log_dir>/eventlog
  bool lenient = false;           // malformed trace lines are left out and counted, not an error
  bool json = false;
};

// The scheduling: and accounts: sections of a batond config named on the command line
// (simulate and whatif --config). Throws std::runtime_error naming the file when it does not
// exist or does not load.
core::priority_policy load_policy(const std::string& config_path);

// The whole result, as recorded: the trace (path, sha256, lines left out), capacity, filter,
// the formulas and the tie-break rule beside the metrics. Throws swf_error when the trace is
// malformed (strict reading), std::runtime_error with a message for people otherwise.
nlohmann::json run_simulation(const simulate_options& o);

// Text for people, one figure a line.
void print_simulation(std::ostream& out, const nlohmann::json& result);

// What a lenient read left out (a count, the first lines and why) and a stream that ended
// early, for stderr; nothing when the trace was whole.
void print_trace_warnings(std::ostream& err, const nlohmann::json& result);

}  // namespace baton::replay
