#pragma once
// The one way baton starts another program: batond's sbatch, squeue and ssh and the worker's
// squeue and nvidia-smi (run(): blocking, output collected, killed at a timeout), and the
// worker's payloads (process with supervised: long-running, output appended to a log, dying
// with the worker). Every child leads its own process group, so a timeout or a stop kills
// what it started too; it starts with no signal blocked and SIGPIPE, SIGTERM, SIGINT, SIGHUP
// and SIGCHLD at their defaults, holds descriptors 0-2 only, and gets our environment minus
// the names the caller strips (secret_env_names(), every credential a baton program reads).
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace baton::util {

// Every environment variable a baton program (batond, baton-worker, baton) takes a credential
// or the path to one from. No child gets them: batond's sbatch passes its environment on to the
// job (--export=ALL), and a payload runs untrusted code. One list, so a new secret is added once.
const std::vector<std::string>& secret_env_names();

struct spawn_spec {
  std::vector<std::string> argv;       // argv[0] looked up on PATH, unless supervised (then a path)
  std::string cwd;                     // "" = ours
  std::vector<std::string> strip_env;  // names never passed on
  std::vector<std::string> extra_env;  // "NAME=value", added (replacing ours of that name)
  std::string log_path;                // stdout and stderr appended here (created 0644); "" = pipes we read
  bool stdin_pipe = false;             // stdin a pipe we write; else /dev/null
  // A forked supervisor (no exec, so only async-signal-safe calls) leads the group and runs
  // argv in it. If we die, even by SIGKILL, the kernel sends it SIGHUP (PR_SET_PDEATHSIG) and
  // it kills the whole group, so nothing of an untrusted payload outlives its worker; once
  // argv has exited, poll() kills what it left in the group. Start it from a long-lived
  // thread: PR_SET_PDEATHSIG fires when the forking *thread* ends.
  bool supervised = false;
};

class process {
 public:
  // Starts the child; throws std::runtime_error (naming the program, the log or the call that
  // failed) when it cannot. A program that cannot be executed is reported here unless
  // supervised, where the supervisor exits with 127 instead (126: cwd is not there).
  explicit process(const spawn_spec& spec);
  // Still running: SIGTERM then at once SIGKILL to the group, then reaped.
  ~process();
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  pid_t pid() const { return pid_; }
  // Our ends of the pipes (-1 when not piped or closed); close them with close_fd().
  int in_fd() const { return in_; }
  int out_fd() const { return out_; }
  int err_fd() const { return err_; }
  static void close_fd(int& fd);
  void close_in() { close_fd(in_); }
  void close_out() { close_fd(out_); }
  void close_err() { close_fd(err_); }

  // Non-blocking: the wait status once the child has exited.
  std::optional<int> poll();
  // Blocking: the wait status.
  int wait();
  // SIGTERM to the whole group, SIGKILL after grace; the wait status.
  int stop(std::chrono::milliseconds grace);
  void kill_group(int sig);

 private:
  void exited(int status);
  pid_t pid_ = -1;
  bool supervised_ = false;
  int in_ = -1, out_ = -1, err_ = -1;
  std::optional<int> status_;
};

// Exit code of a wait status: the code, or 128 + signal for a signalled process.
int exit_code_of(int wait_status);

struct run_result {
  int exit_code = -1;        // the program's exit status; 128+N when killed by signal N
  bool timed_out = false;    // killed by us
  bool not_started = false;  // exec failed (program not found, ...): see err
  std::string out, err;
};

// Runs argv with stdin_text, collects stdout and stderr, and kills its whole group when the
// timeout passes. Blocking: call it from a detached actor or a thread of its own.
run_result run(const std::vector<std::string>& argv, const std::string& stdin_text, std::chrono::milliseconds timeout,
               const std::vector<std::string>& strip_env);

}  // namespace baton::util
