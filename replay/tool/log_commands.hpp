#pragma once
// baton-replay's subcommands on a data dir: each opens the log read-only (it works beside a
// running batond, or on a copy) and prints JSON or text. Each returns the process exit code:
// 0 all well, 1 the log or file is not what it should be, 2 the command could not run.
#include <cstdint>
#include <string>

#include "replay/audit/audit_export.hpp"
#include "replay/tool/state_at.hpp"
#include "replay/sim/whatif.hpp"

namespace baton::replay {

struct log_options {
  std::string data_dir;
  bool json = false;
};

int verify_command(const log_options& o);
int rederive_command(const log_options& o, uint64_t from, uint64_t to);
// out_path "" or "-": standard output.
int export_command(const log_options& o, const export_filter& f, export_format format, const std::string& out_path);
// The world at a point (always JSON: it is for tools and for reading with jq).
int state_command(const log_options& o, const state_query& q);
int history_command(const log_options& o, const std::string& job_id);
int whatif_command(const log_options& o, const whatif_options& w);
// data_dir "" : the file on its own.
int verify_export_command(const log_options& o, const std::string& path);

}  // namespace baton::replay
