#pragma once
// Talks to one Slurm cluster: locally (sbatch/squeue as direct subprocesses on the login
// node) or, when ssh_host is set, through ssh with key auth (BatchMode: never a prompt).
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "slurm/squeue.hpp"

namespace baton::slurm {

struct target {
  std::string ssh_host;  // "" = local
  std::string ssh_user;
  int ssh_port = 22;
  std::string ssh_key_file;
  std::vector<std::string> ssh_options;  // extra -o values (tests: UserKnownHostsFile=...)
  std::chrono::milliseconds submit_timeout{120'000};
  std::chrono::milliseconds query_timeout{30'000};
};

struct submit_outcome {
  std::optional<std::string> slurm_id;  // set on success
  std::string stage;                    // on failure: not_started, timeout, nonzero_exit, bad_output
  int exit_code = 0;
  std::string stderr_text;
};

// The argv that runs `program args...` on the target.
std::vector<std::string> command_for(const target& t, const std::string& program, const std::vector<std::string>& args);

// sbatch --parsable with the script on stdin. log_dir (may be ""): created first, on the
// target, since Slurm fails a job whose output directory is missing.
submit_outcome submit(const target& t, const std::string& script, const std::string& log_dir = "");
// squeue for these ids: alive jobs, or nullopt when the answer cannot be trusted.
std::optional<std::map<std::string, job_state>> query(const target& t, const std::vector<std::string>& ids);

}  // namespace baton::slurm
