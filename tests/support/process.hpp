#pragma once
// Runs a program as a child process for black-box tests: its stdout and stderr go to files
// in a temp dir, the environment can be extended, and it can be signalled and reaped.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace baton::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class child_process {
 public:
  child_process(const std::vector<std::string>& argv, const std::string& output_prefix,
                const std::vector<std::string>& extra_env = {})
      : out_(output_prefix + ".out"), err_(output_prefix + ".err") {
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      int o = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      for (const auto& kv : extra_env) putenv(const_cast<char*>(kv.c_str()));
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~child_process() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) {
    if (!reaped_) ::kill(pid_, sig);  // a reaped pid may already be another process's
  }

  // Waits for the child. The exit status (as waitpid gives it), or -1 when still running at the deadline. Once
  // reaped, the same status again on every call.
  int wait(std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    if (reaped_) return status_;
    auto end = std::chrono::steady_clock::now() + deadline;
    while (true) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        status_ = status;
        return status;
      }
      if (std::chrono::steady_clock::now() > end) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string out_, err_;
};

// Exit code of a normally exited child, or -1000 - signal for one killed by a signal.
inline int exit_code(int status) {
  if (status == -1) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -1000 - WTERMSIG(status);
  return -2000;
}

// A program run to its end: its exit code (as exit_code gives it) and what it printed.
struct tool_result {
  int code;
  std::string out, err;
};

}  // namespace baton::test
