#pragma once
#include <string>

#include "config/config.hpp"

namespace baton::daemon {

struct run_options {
  std::string port_file;          // if set, the bound port is written here once serving (for tests/scripts)
  bool rebuild_postgres = false;  // --rebuild-projection postgres: the same for the PostgreSQL view
  bool rebuild_views = false;     // --rebuild-projection views: empty the SQL view and rebuild it from event 1
};

// Runs batond until SIGTERM/SIGINT. Returns the process exit code:
// 0 after a clean stop, 2 when the data dir or listen address is unusable.
int run(const config::settings& settings, const run_options& opts);

}  // namespace baton::daemon
