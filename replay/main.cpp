// baton-replay: the log and the scheduler, offline. Reads a data dir (beside a running batond:
// the log is opened read-only) or an SWF trace; never writes to either. docs/replay.md.
#include <CLI/CLI.hpp>

#include <iostream>

#include "replay/simulate_command.hpp"

using namespace baton::replay;

int main(int argc, char** argv) {
  CLI::App app{"baton-replay: verify, re-derive and simulate schedules (docs/replay.md)"};
  app.require_subcommand(1);

  simulate_options sim;
  auto* simulate_cmd = app.add_subcommand("simulate", "run an SWF trace through baton's planner and priority code");
  simulate_cmd->add_option("--swf", sim.swf_path, "SWF v2.2 trace (plain or .gz)")->required();
  simulate_cmd->add_option("--procs", sim.procs, "processors of the machine (default: the trace's MaxProcs)");
  simulate_cmd->add_option("--policy", sim.policy, "fifo | easy | conservative | multifactor | lattice:<profile>");
  simulate_cmd->add_option("--backfill", sim.backfill, "none | easy | conservative (default: the policy's)");
  simulate_cmd->add_option("--filter", sim.filter, "sc15 | batsim: which jobs of the trace run, and how");
  simulate_cmd->add_option("--config", sim.config_path, "batond config whose scheduling: section sets the weights");
  simulate_cmd->add_flag("--json", sim.json, "the whole result as JSON");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*simulate_cmd) {
      auto result = run_simulation(sim);
      if (sim.json)
        std::cout << result.dump(2) << "\n";
      else
        print_simulation(std::cout, result);
    }
  } catch (const std::exception& e) {
    std::cerr << "baton-replay: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
