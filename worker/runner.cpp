#include "worker/runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace baton::worker {

int exit_code_of(int status) {  // the supervisor already maps a signalled shell to 128 + signal
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

namespace {

std::string name_of(const std::string& kv) { return kv.substr(0, kv.find('=')); }

std::vector<std::string> build_env(const launch_spec& s) {
  std::set<std::string> drop(s.strip_env.begin(), s.strip_env.end());
  for (const auto& kv : s.extra_env) drop.insert(name_of(kv));
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e)
    if (!drop.count(name_of(*e))) env.emplace_back(*e);
  env.insert(env.end(), s.extra_env.begin(), s.extra_env.end());
  return env;
}

extern "C" void kill_own_group(int) { ::kill(0, SIGKILL); }

// The forked child (no exec): leads the payload's process group, runs the shell in it and
// exits with the shell's status. If the worker dies (even by SIGKILL) the kernel sends it
// SIGHUP (PR_SET_PDEATHSIG) and it kills the whole group, so no payload outlives its worker.
// Only async-signal-safe calls: the worker is multithreaded.
[[noreturn]] void run_supervisor(pid_t parent, char* const* argv, char* const* envp, int log, int devnull,
                                 const char* cwd) {
  ::setpgid(0, 0);
  struct sigaction sa {};
  sa.sa_handler = kill_own_group;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGHUP, &sa, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGHUP);
  if (::getppid() != parent) kill_own_group(0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the worker blocks SIGTERM/SIGINT for sigwait
  pid_t shell = ::fork();
  if (shell < 0) _exit(125);
  if (shell == 0) {
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    if (::chdir(cwd) != 0) _exit(126);
    ::execve(argv[0], argv, envp);
    _exit(127);
  }
  // The group's SIGTERM is for the shell; the supervisor waits for it and reports its status.
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  int st = 0;
  while (::waitpid(shell, &st, 0) < 0)
    if (errno != EINTR) _exit(125);
  if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
  _exit(128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
}

}  // namespace

payload::payload(const launch_spec& spec) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  auto env = build_env(spec);
  std::vector<char*> envp;
  for (auto& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = spec.command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  int log = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) throw std::runtime_error("cannot open payload log " + spec.log_path + ": " + std::strerror(errno));
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    if (devnull >= 0) ::close(devnull);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) run_supervisor(parent, argv, envp.data(), log, devnull, spec.cwd.c_str());
  ::setpgid(pid, pid);  // also from the parent, so kill(-pid) works even before the child ran
  ::close(log);
  if (devnull >= 0) ::close(devnull);
  pid_ = pid;
}

payload::~payload() {
  if (pid_ > 0 && !status_) stop(std::chrono::milliseconds(0));
}

std::optional<int> payload::poll() {
  if (status_) return status_;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = st;
    kill_group(SIGKILL);  // stragglers the shell left behind
  }
  return status_;
}

void payload::kill_group(int sig) {
  if (pid_ > 0) ::kill(-pid_, sig);
}

int payload::stop(std::chrono::milliseconds grace) {
  if (poll()) return *status_;
  kill_group(SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (poll()) return *status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_group(SIGKILL);
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  status_ = st;
  return st;
}

}  // namespace baton::worker
