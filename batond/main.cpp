// batond: the baton daemon. With no arguments it runs on built-in defaults
// (127.0.0.1:36158, data under ./var/baton); see docs/architecture.md.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <baton/version.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "batond/daemon.hpp"
#include "batond/log_repair.hpp"
#include "core/util/allocator.hpp"
#include "batond/log_tools.hpp"
#include "config/config.hpp"

int main(int argc, char** argv) {
  CLI::App app{"batond: event-sourced orchestrator for long-running GPU jobs"};
  std::string config_path, data_dir, listen, port_file;
  bool verify = false, dump = false, version = false, rederive = false;
  uint64_t from = 1, limit = 0;
  app.add_option("-c,--config", config_path, "YAML config file (default: $BATON_CONFIG or ~/.config/baton/config.yaml)");
  app.add_option("--data-dir", data_dir, "data directory (overrides config and BATON_DATA_DIR)");
  app.add_option("--listen", listen, "HOST:PORT to listen on; port 0 picks a free port (overrides config)");
  app.add_option("--port-file", port_file, "write the bound port to this file once serving");
  app.add_flag("--verify", verify, "check the event log (no gaps, hash chain) and exit");
  app.add_flag("--dump", dump, "print the event log as JSON lines and exit");
  app.add_flag("--rederive", rederive, "re-derive every assignment decision from the log and exit");
  app.add_option("--from", from, "with --dump: first sequence to print")->check(CLI::PositiveNumber);
  app.add_option("--limit", limit, "with --dump: at most this many events (0 = all)");
  app.add_flag("--version", version, "print the version and exit");
  baton::daemon::truncate_options repair;
  auto* truncate_opt = app.add_option("--truncate-after", repair.keep_through,
                                      "repair a damaged tail: back the log up, remove every event after this one, record "
                                      "it, and exit (batond stopped; docs/operator-guide.md)");
  app.add_option("--backup-dir", repair.backup_dir,
                 "with --truncate-after: where the copy goes (default: "
                 "<data dir>/eventlog.backup-<UTC time>)");
  app.add_option("--reason", repair.reason, "with --truncate-after: why, recorded with the event");
  std::string rebuild_projection;
  app.add_option("--rebuild-projection", rebuild_projection,
                 "empty this projection and rebuild it from event 1 (views: the SQLite view; postgres: the PostgreSQL view)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "batond: " << e.what() << " (see --help)\n";
    return 2;
  }
  if (version) {
    std::cout << "batond " << baton::version << " (malloc: " << baton::util::allocator_in_use() << ")\n";
    return 0;
  }

  auto env = baton::config::process_env();
  auto loaded = baton::config::load(baton::config::choose_config(config_path, env), env);
  if (loaded.error) {
    std::cerr << "batond: " << loaded.error->what() << "\n";
    return 2;
  }
  auto settings = *loaded.value;
  if (!data_dir.empty()) settings.data_dir = data_dir;
  if (!listen.empty()) {
    auto l = baton::config::parse_listen(listen);
    if (!l) {
      std::cerr << "batond: --listen: expected HOST:PORT with PORT in 0..65535, got '" << listen << "'\n";
      return 2;
    }
    settings.listen = *l;
  }

  if (verify) return baton::daemon::verify_log(settings.data_dir);
  if (dump) return baton::daemon::dump_log(settings.data_dir, from, limit);
  if (rederive) return baton::daemon::rederive_log(settings.data_dir);
  if (truncate_opt->count()) {
    repair.data_dir = settings.data_dir;
    repair.operator_name = std::getenv("USER") ? std::getenv("USER") : "";
    auto now = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch());
    return baton::daemon::truncate_log(repair, now.count());
  }

  auto logger = spdlog::stderr_color_mt("batond");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(settings.log_level));
  for (const auto& w : settings.warnings) spdlog::warn("{}", w);
  if (!rebuild_projection.empty() && rebuild_projection != "views" && rebuild_projection != "postgres") {
    std::cerr << "batond: --rebuild-projection: no projection named '" << rebuild_projection
              << "' (those kept in a database: views, postgres)\n";
    return 2;
  }
  baton::daemon::run_options run_opts;
  run_opts.port_file = port_file;
  run_opts.rebuild_views = rebuild_projection == "views";
  run_opts.rebuild_postgres = rebuild_projection == "postgres";
  return baton::daemon::run(settings, run_opts);
}
