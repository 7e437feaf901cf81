#include "slurm/cluster_client.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "slurm/shell_quote.hpp"
#include "slurm/subprocess.hpp"

namespace baton::slurm {

std::vector<std::string> command_for(const target& t, const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> local{program};
  local.insert(local.end(), args.begin(), args.end());
  if (t.ssh_host.empty()) return local;
  std::vector<std::string> argv{"ssh", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-p", std::to_string(t.ssh_port)};
  for (const auto& o : t.ssh_options) argv.insert(argv.end(), {"-o", o});
  if (!t.ssh_key_file.empty()) argv.insert(argv.end(), {"-i", t.ssh_key_file});
  argv.push_back(t.ssh_user.empty() ? t.ssh_host : t.ssh_user + "@" + t.ssh_host);
  argv.push_back(shell_join(local));  // the remote side runs it through a shell: quote every word
  return argv;
}

submit_outcome submit(const target& t, const std::string& script, const std::string& log_dir) {
  submit_outcome o;
  auto argv = command_for(t, "sbatch", {"--parsable"});
  if (!log_dir.empty()) {
    if (t.ssh_host.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(log_dir, ec);
    } else {
      argv.back() = "mkdir -p " + shell_quote(log_dir) + " && " + argv.back();
    }
  }
  auto r = run(argv, script, t.submit_timeout);
  o.exit_code = r.exit_code;
  o.stderr_text = r.err.substr(0, 4000);
  if (r.not_started) {
    o.stage = "not_started";
  } else if (r.timed_out) {
    o.stage = "timeout";
  } else if (r.exit_code != 0) {
    o.stage = "nonzero_exit";
  } else {
    // "<id>" or "<id>;<cluster>"
    std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
    if (id.empty() || !std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); })) {
      o.stage = "bad_output";
      o.stderr_text = "sbatch printed " + r.out.substr(0, 200) + (o.stderr_text.empty() ? "" : "; " + o.stderr_text);
    } else {
      o.slurm_id = id;
    }
  }
  return o;
}

std::optional<std::map<std::string, job_state>> query(const target& t, const std::vector<std::string>& ids) {
  if (ids.empty()) return std::map<std::string, job_state>{};
  return alive_from(ids, run(command_for(t, "squeue", squeue_args(ids)), "", t.query_timeout));
}

}  // namespace baton::slurm
