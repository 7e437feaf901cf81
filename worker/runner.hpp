#pragma once
// The payload: `/bin/sh -c <command>` in its own process group, in the job's working dir,
// stdout and stderr appended to <working dir>/baton-payload.log. A small forked supervisor
// leads the group and kills all of it if the worker dies, even by SIGKILL.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace baton::worker {

struct launch_spec {
  std::string command;
  std::string cwd;
  std::vector<std::string> extra_env;   // "KEY=value", added to (and overriding) the worker's environment
  std::vector<std::string> strip_env;   // names removed (the API token never reaches the payload)
  std::string log_path;
};

// Exit code of a wait status: the code, or 128 + signal for a signalled process.
int exit_code_of(int wait_status);

class payload {
 public:
  // Forks and execs; throws std::runtime_error if it cannot. Call from a long-lived thread:
  // the supervisor's PR_SET_PDEATHSIG fires when the forking *thread* ends.
  explicit payload(const launch_spec& spec);
  ~payload();
  payload(const payload&) = delete;
  payload& operator=(const payload&) = delete;

  pid_t pid() const { return pid_; }
  // Non-blocking: the wait status once the shell has exited.
  std::optional<int> poll();
  // SIGTERM to the whole group, SIGKILL after grace; returns the wait status.
  int stop(std::chrono::milliseconds grace);

 private:
  void kill_group(int sig);
  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace baton::worker
