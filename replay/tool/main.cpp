// baton-replay: the log and the scheduler, offline. Reads a data dir (beside a running batond:
// the log is opened read-only) or an SWF trace; never writes to either (simulate --log writes
// a new log of its own). docs/replay.md.
#include <CLI/CLI.hpp>

#include <iostream>

#include "baton/version.hpp"
#include "core/util/time.hpp"
#include "core/util/allocator.hpp"
#include "replay/tool/log_commands.hpp"
#include "replay/tool/simulate_command.hpp"
#include "replay/sim/whatif.hpp"

using namespace baton::replay;

namespace {

// --from/--to times for the export: RFC 3339 with an offset.
bool parse_time(const std::string& text, std::optional<int64_t>& out, const char* flag) {
  if (text.empty()) return true;
  out = baton::util::parse_time_us(text);
  if (!out) std::cerr << "baton-replay: " << flag << ": expected an RFC 3339 time with an offset, got '" << text << "'\n";
  return out.has_value();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"baton-replay: verify, re-derive, export and simulate schedules (docs/replay.md)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    return std::string("baton-replay ") + baton::version + " (malloc: " + baton::util::allocator_in_use() + ")";
  });
  log_options log;
  auto data_dir = [&](CLI::App* sub, bool required) {
    auto* opt = sub->add_option("--data-dir", log.data_dir, "batond's data dir (the log is read, never written)");
    if (required) opt->required();
    sub->add_flag("--json", log.json, "the result as JSON");
  };

  auto* verify_cmd = app.add_subcommand("verify", "check the log: gaps, hash chain, every payload, the chain anchors");
  data_dir(verify_cmd, true);

  uint64_t from = 1, to = 0;
  auto* rederive_cmd = app.add_subcommand("rederive", "decide every recorded decision again and compare");
  data_dir(rederive_cmd, true);
  rederive_cmd->add_option("--from", from, "first sequence whose decisions are checked (earlier ones are replayed)");
  rederive_cmd->add_option("--to", to, "last sequence replayed (default: the log's end)");

  std::string at_text;
  state_query state_q;
  auto* state_cmd = app.add_subcommand("state", "the world at one point of the log, as JSON");
  data_dir(state_cmd, true);
  state_cmd->add_option("--at", at_text, "a sequence number, or an RFC 3339 time (default: the log's end)");
  state_cmd->add_flag("--all-jobs", state_q.all_jobs, "finished jobs too");

  std::string history_job;
  auto* history_cmd =
      app.add_subcommand("history", "one job's events, each explained, and its place in the queue while it waited");
  history_cmd->add_option("job", history_job, "the job's id")->required();
  data_dir(history_cmd, true);

  export_filter filter;
  std::string format = "jsonl", output, since, until;
  auto* export_cmd = app.add_subcommand("export", "the audit export: events with their hashes, and a trailer");
  data_dir(export_cmd, true);
  export_cmd->add_option("--format", format, "jsonl | csv")->check(CLI::IsMember({"jsonl", "csv"}));
  export_cmd->add_option("--from", since, "only events recorded at or after this time (RFC 3339)");
  export_cmd->add_option("--to", until, "only events recorded at or before this time (RFC 3339)");
  export_cmd->add_option("--stream", filter.stream, "only this stream (job/<id>, worker/<id>, ...)");
  export_cmd->add_option("--type", filter.type, "only this event type");
  export_cmd->add_option("--actor", filter.actor, "only this actor (operator:<name>, worker:<id>, loop:<name>)");
  export_cmd->add_option("-o,--output", output, "file to write (default: standard output)");

  std::string export_file;
  auto* verify_export_cmd = app.add_subcommand("verify-export", "check an audit export on its own, or against the log");
  verify_export_cmd->add_option("file", export_file, "the export (JSON lines or CSV)")->required();
  data_dir(verify_export_cmd, false);

  whatif_options wi;
  std::string wi_from, wi_to;
  auto* whatif_cmd = app.add_subcommand("whatif", "the log's recorded workload under another policy, beside what happened");
  data_dir(whatif_cmd, true);
  whatif_cmd->add_option("--config", wi.config_path, "a batond config whose scheduling: and accounts: to simulate")->required();
  whatif_cmd->add_option("--policy", wi.policy,
                         "fifo | easy | conservative | multifactor | lattice:<profile> (default: the config's)");
  whatif_cmd->add_option("--from", wi_from, "only jobs submitted at or after this time (RFC 3339)");
  whatif_cmd->add_option("--to", wi_to, "only jobs submitted at or before this time (RFC 3339)");
  whatif_cmd->add_option("--gpus", wi.gpus, "GPUs of the simulated pool (default: the most registered at once)");

  simulate_options sim;
  auto* simulate_cmd = app.add_subcommand("simulate", "run an SWF trace through baton's planner and priority code");
  simulate_cmd->add_option("--swf", sim.swf_path, "SWF v2.2 trace (plain or .gz)")->required();
  simulate_cmd->add_option("--procs", sim.procs, "processors of the machine (default: the trace's MaxProcs)");
  simulate_cmd->add_option("--policy", sim.policy, "fifo | easy | conservative | multifactor | lattice:<profile>");
  simulate_cmd->add_option("--backfill", sim.backfill, "none | easy | conservative (default: the policy's)");
  simulate_cmd->add_option("--filter", sim.filter, "sc15 | batsim: which jobs of the trace run, and how");
  simulate_cmd->add_option("--config", sim.config_path, "batond config whose scheduling: section sets the weights");
  simulate_cmd->add_option("--log", sim.log_dir, "also write the simulation as a baton event log under this new data dir");
  simulate_cmd->add_flag("--lenient", sim.lenient,
                         "leave malformed trace lines out (counted, listed on stderr) instead of failing");
  simulate_cmd->add_flag("--json", sim.json, "the whole result as JSON");

  CLI11_PARSE(app, argc, argv);
  if (*verify_cmd) return verify_command(log);
  if (*rederive_cmd) return rederive_command(log, from, to);
  if (*export_cmd) {
    if (!parse_time(since, filter.from_us, "--from") || !parse_time(until, filter.to_us, "--to")) return 2;
    return export_command(log, filter, format == "csv" ? export_format::csv : export_format::jsonl, output);
  }
  if (*verify_export_cmd) return verify_export_command(log, export_file);
  if (*state_cmd) {
    if (!at_text.empty() && at_text.find_first_not_of("0123456789") == std::string::npos) {
      if (at_text.size() > 19) {
        std::cerr << "baton-replay: --at: sequence " << at_text << " is out of range\n";
        return 2;
      }
      state_q.seq = std::stoull(at_text);
    } else if (!parse_time(at_text, state_q.time, "--at"))
      return 2;
    return state_command(log, state_q);
  }
  if (*history_cmd) return history_command(log, history_job);
  if (*whatif_cmd) {
    if (!parse_time(wi_from, wi.from_us, "--from") || !parse_time(wi_to, wi.to_us, "--to")) return 2;
    return whatif_command(log, wi);
  }
  try {
    auto result = run_simulation(sim);
    print_trace_warnings(std::cerr, result);
    if (sim.json)
      std::cout << result.dump(2) << "\n";
    else
      print_simulation(std::cout, result);
  } catch (const swf_error& e) {  // the trace is not what it should be
    std::cerr << "baton-replay: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "baton-replay: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
