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

// A secret the job reads at start, written on the target before the job is submitted: the
// pilot's one-time registration credential. Its directory is made 0700 and the file 0600
// (written aside and renamed, so a starting job never reads half of it).
struct secret_file {
  std::string path;     // absolute, as the compute nodes see it
  std::string content;  // one line, no newline
};

// sbatch --parsable with the script on stdin. log_dir (may be ""): created first, on the
// target, since Slurm fails a job whose output directory is missing. secret (may be null):
// written first, on the target (over ssh it travels on stdin ahead of the script, never in an
// argument); the local copy is removed again when sbatch fails.
submit_outcome submit(const target& t, const std::string& script, const std::string& log_dir = "",
                      const secret_file* secret = nullptr);
// squeue for these ids: alive jobs, or nullopt when the answer cannot be trusted.
std::optional<std::map<std::string, job_state>> query(const target& t, const std::vector<std::string>& ids);

// How submit() and query() run sbatch, squeue or ssh here: util::run without batond's secrets
// (BATON_API_TOKEN, BATON_PILOT_TOKEN, BATON_SALAD_API_KEY) in the child's environment, since
// sbatch's default --export=ALL would hand them to the batch job, and Slurm keeps a job's
// environment in its spool next to the script. Blocking: from a detached actor only.
util::run_result run_here(const std::vector<std::string>& argv, const std::string& stdin_text, std::chrono::milliseconds timeout);

}  // namespace baton::slurm
