#include "slurm/cluster_client.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "slurm/secret_file.hpp"
#include "slurm/shell_quote.hpp"

namespace baton::slurm {

util::run_result run_here(const std::vector<std::string>& argv, const std::string& stdin_text,
                          std::chrono::milliseconds timeout) {
  return util::run(argv, stdin_text, timeout, util::secret_env_names());
}

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

namespace {

// The secret's file on this machine, in a directory of its own (0700); "" or why not.
std::string write_local_secret(const secret_file& s) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto dir = fs::path(s.path).parent_path();
  fs::create_directories(dir, ec);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec) return "cannot make the directory " + dir.string() + " (mode 0700): " + ec.message();
  try {
    write_secret_file(s.path, s.content);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

submit_outcome submit(const target& t, const std::string& script, const std::string& log_dir, const secret_file* secret) {
  submit_outcome o;
  auto argv = command_for(t, "sbatch", {"--parsable"});
  std::string stdin_text = script;
  if (!log_dir.empty()) {
    if (t.ssh_host.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(log_dir, ec);
    } else {
      argv.back() = "mkdir -p " + shell_quote(log_dir) + " && " + argv.back();
    }
  }
  if (secret && t.ssh_host.empty()) {
    if (auto why = write_local_secret(*secret); !why.empty()) {
      o.stage = "not_started";
      o.stderr_text = why;
      return o;
    }
  } else if (secret) {
    // The remote shell reads the secret's line from stdin (read takes one byte at a time from
    // a pipe, so sbatch gets the script that follows it whole) and writes it before sbatch runs.
    const auto dir = shell_quote(std::filesystem::path(secret->path).parent_path().string());
    const auto file = shell_quote(secret->path), tmp = shell_quote(secret->path + ".tmp");
    argv.back() = "umask 077 && mkdir -p " + dir + " && IFS= read -r c && printf '%s\\n' \"$c\" > " + tmp + " && mv " + tmp +
                  " " + file + " && " + argv.back();
    stdin_text = secret->content + "\n" + script;
  }
  auto r = run_here(argv, stdin_text, t.submit_timeout);
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
  if (!o.slurm_id && secret && t.ssh_host.empty()) std::remove(secret->path.c_str());  // no job will read it
  return o;
}

std::optional<std::map<std::string, job_state>> query(const target& t, const std::vector<std::string>& ids) {
  if (ids.empty()) return std::map<std::string, job_state>{};
  return alive_from(ids, run_here(command_for(t, "squeue", squeue_args(ids)), "", t.query_timeout));
}

}  // namespace baton::slurm
