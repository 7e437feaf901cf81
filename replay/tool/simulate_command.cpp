#include "replay/tool/simulate_command.hpp"

#include <chrono>
#include <filesystem>
#include <memory>
#include <ostream>
#include <stdexcept>

#include "config/config.hpp"
#include "replay/sim/sim_metrics.hpp"
#include "replay/sim/sim_log.hpp"
#include "replay/sim/simulator.hpp"

namespace baton::replay {

using nlohmann::json;

core::priority_policy load_policy(const std::string& config_path) {
  if (!std::filesystem::exists(config_path)) throw std::runtime_error("--config: no such file " + config_path);
  auto loaded = config::load(config_path, config::process_env());
  if (!loaded.value) throw std::runtime_error(loaded.error->what());
  return loaded.value->priority;
}

json run_simulation(const simulate_options& o) {
  swf_filter filter;
  if (!swf_filter_from(o.filter, filter)) throw std::runtime_error("--filter: expected sc15 or batsim, got '" + o.filter + "'");
  sim_settings s;
  if (!o.config_path.empty()) s.policy = load_policy(o.config_path);
  if (!sim_policy_from(o.policy, s))
    throw std::runtime_error("--policy: expected fifo, easy, conservative, multifactor or lattice:<profile>, got '" + o.policy +
                             "'");
  if (!o.backfill.empty() && !sim_backfill_from(o.backfill, s.backfill))
    throw std::runtime_error("--backfill: expected none, easy or conservative, got '" + o.backfill + "'");

  // The jobs straight from the file: the records are never kept (their pages, touched fresh,
  // were a tenth of a 200k-job run's time).
  swf_trace trace;
  auto jobs = read_swf_jobs(o.swf_path, o.lenient, filter, o.procs, trace);
  s.capacity = o.procs > 0 ? o.procs : trace.max_procs;
  if (s.capacity <= 0) throw std::runtime_error(o.swf_path + " names no MaxProcs: give --procs");
  const size_t records = trace.record_count;
  json about = {{"trace", {{"path", o.swf_path}, {"sha256", trace.sha256}}}, {"filter", to_string(filter)}, {"policy", o.policy}};
  std::unique_ptr<events::event_store> store;
  std::unique_ptr<sim_log_writer> writer;
  if (!o.log_dir.empty()) {
    const auto dir = std::filesystem::path(o.log_dir) / "eventlog";
    if (std::filesystem::exists(dir) && !std::filesystem::is_empty(dir))
      throw std::runtime_error("--log: " + dir.string() + " already holds a log; name a new directory");
    std::filesystem::create_directories(o.log_dir);
    events::store_options fast;
    fast.sync = false;  // made durable once, at the end
    store = events::event_store::open(dir.string(), fast);
    writer = std::make_unique<sim_log_writer>(*store, s, about);
  }
  auto t0 = std::chrono::steady_clock::now();
  auto result = simulate(jobs, s, writer.get());
  const uint64_t logged = writer ? writer->finish() : 0;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto m = measure(result.jobs, s.capacity);

  json out;
  out["trace"] = {{"path", o.swf_path},
                  {"sha256", trace.sha256},
                  {"records", records},
                  {"max_procs", trace.max_procs},
                  {"lenient", o.lenient},
                  {"malformed_lines", trace.malformed_lines},
                  {"first_malformed", json::array()},
                  {"damaged", trace.damaged.empty() ? json(nullptr) : json(trace.damaged)}};
  for (const auto& bad : trace.first_malformed) out["trace"]["first_malformed"].push_back({{"line", bad.line}, {"why", bad.why}});
  out["capacity"] = s.capacity;
  out["filter"] = {{"name", to_string(filter)}, {"rule", describe(filter)}, {"jobs", jobs.size()}};
  out["policy"] = o.policy;
  out["backfill"] = to_string(s.backfill);
  out["rules"] = {
      {"event_order", "at one timestamp: completions, then arrivals, then one scheduling pass"},
      {"tie_break", s.order == sim_order::fifo ? "submit time, then job id" : "priority, then submit time, then job id"},
      {"estimates", "a job's requested time; a running job is planned to end at its start plus it"},
      {"backfill_test",
       "a later job may start now if it ends no later than a reservation's start (<=) or fits in the processors "
       "spare after it"},
      {"bounded_slowdown", {{"tau10", "max(1, (wait + run) / max(10, run))"}, {"tau60", "(wait + run) / max(run, 60)"}}},
      {"percentiles", "nearest rank"},
      {"recalculation", "priorities at a pass once priority_calc_period has passed since the last, when two jobs or more wait"},
      {"utilization", "sum of procs x run / (capacity x (last end - first submit))"}};
  if (s.order != sim_order::fifo) out["priority_policy"] = core::to_json(s.policy);
  out["metrics"] = to_json(m);
  out["simulation"] = {{"passes", result.passes}, {"recalculations", result.recalculations}, {"seconds", seconds}};
  if (!result.notes.empty()) out["notes"] = result.notes;
  if (writer) out["log"] = {{"dir", o.log_dir}, {"events", logged}};
  return out;
}

void print_simulation(std::ostream& out, const json& r) {
  const auto& m = r["metrics"];
  out << "trace      " << r["trace"]["path"].get<std::string>() << " (sha256 " << r["trace"]["sha256"].get<std::string>() << ")\n"
      << "machine    " << r["capacity"] << " processors; filter " << r["filter"]["name"].get<std::string>() << ": "
      << r["filter"]["jobs"] << " jobs\n"
      << "policy     " << r["policy"].get<std::string>() << ", backfill " << r["backfill"].get<std::string>() << "\n"
      << "wait       mean " << m["mean_wait_seconds"] << " s, p95 " << m["p95_wait_seconds"] << " s, max "
      << m["max_wait_seconds"] << " s\n"
      << "slowdown   bounded (tau 10): mean " << m["mean_bounded_slowdown_tau10"] << ", max " << m["max_bounded_slowdown_tau10"]
      << "; (tau 60): mean " << m["mean_bounded_slowdown_tau60"] << ", p95 " << m["p95_bounded_slowdown_tau60"] << "\n"
      << "flow       mean " << m["mean_flow_seconds"] << " s\n"
      << "machine    utilization " << m["utilization"] << ", makespan " << m["makespan_seconds"] << " s\n"
      << "simulated  in " << r["simulation"]["seconds"] << " s (" << r["simulation"]["passes"] << " planner passes)\n";
  if (r.contains("log"))
    out << "log        " << r["log"]["events"] << " events in " << r["log"]["dir"].get<std::string>()
        << "/eventlog (baton-replay rederive --data-dir " << r["log"]["dir"].get<std::string>() << ")\n";
}

void print_trace_warnings(std::ostream& err, const json& r) {
  const auto& t = r["trace"];
  const std::string path = t["path"].get<std::string>();
  if (!t["damaged"].is_null()) err << "baton-replay: warning: " << path << ": " << t["damaged"].get<std::string>() << "\n";
  const auto malformed = t["malformed_lines"].get<size_t>();
  if (malformed == 0) return;
  err << "baton-replay: warning: " << path << ": " << malformed << " malformed line" << (malformed == 1 ? "" : "s")
      << " left out (--lenient); first at line";
  const auto& first = t["first_malformed"];
  for (size_t i = 0; i < first.size(); ++i) err << (i ? ", " : " ") << first[i]["line"].get<size_t>();
  err << "\n";
  for (const auto& bad : first)
    err << "baton-replay: warning:   line " << bad["line"].get<size_t>() << ": " << bad["why"].get<std::string>() << "\n";
}

}  // namespace baton::replay
