#include "core/util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace baton::util {

const std::vector<std::string>& secret_env_names() {
  static const std::vector<std::string> names = {"BATON_API_TOKEN",
                                                 "BATON_API_TOKEN_FILE",
                                                 "APPTAINERENV_BATON_API_TOKEN",
                                                 "BATON_WORKER_TOKEN",
                                                 "BATON_PILOT_TOKEN",
                                                 "BATON_METRICS_TOKEN",
                                                 "BATON_SALAD_API_KEY",
                                                 "BATON_POSTGRES_PASSWORD",
                                                 "BATON_S3_SECRET_ACCESS_KEY",
                                                 "BATON_S3_UPLOAD_SECRET_ACCESS_KEY"};
  return names;
}

int exit_code_of(int status) {  // a supervisor already maps a signalled child to 128 + signal
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

void process::close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

namespace {

std::string name_of(const std::string& kv) { return kv.substr(0, kv.find('=')); }

// Ours minus strip_env and the names extra_env sets, then extra_env.
std::vector<std::string> child_env(const spawn_spec& s) {
  std::set<std::string> drop(s.strip_env.begin(), s.strip_env.end());
  for (const auto& kv : s.extra_env) drop.insert(name_of(kv));
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e)
    if (!drop.count(name_of(*e))) env.emplace_back(*e);
  env.insert(env.end(), s.extra_env.begin(), s.extra_env.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

std::runtime_error errno_error(const std::string& what) { return std::runtime_error(what + ": " + std::strerror(errno)); }

// The descriptors a child gets as 0, 1, 2, and ours; closed together.
struct child_fds {
  int in = -1, out = -1, err = -1;              // the child's ends
  int our_in = -1, our_out = -1, our_err = -1;  // the pipes' other ends
  ~child_fds() {
    for (int* fd : {&in, &out, &err, &our_in, &our_out, &our_err}) process::close_fd(*fd);
  }
};

void pipe_into(int& child_end, int& our_end, bool child_reads) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw errno_error("pipe");
  child_end = child_reads ? p[0] : p[1];
  our_end = child_reads ? p[1] : p[0];
}

void open_fds(const spawn_spec& s, child_fds& f) {
  if (s.stdin_pipe)
    pipe_into(f.in, f.our_in, true);
  else
    f.in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // (without it the child shares our stdin)
  if (s.log_path.empty()) {
    pipe_into(f.out, f.our_out, false);
    pipe_into(f.err, f.our_err, false);
  } else {
    f.out = ::open(s.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (f.out < 0) throw errno_error("cannot open " + s.log_path);
    f.err = ::dup(f.out);
    if (f.err < 0) throw errno_error("dup");
    ::fcntl(f.err, F_SETFD, FD_CLOEXEC);
  }
}

constexpr int reset_signals[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD};

// posix_spawn, not fork, where no code of ours runs in the child: the caller is a threaded
// daemon (or worker), and posix_spawn neither copies its page tables nor runs anything of ours
// in a copy whose other threads' locks are in whatever state they were.
pid_t spawn(const spawn_spec& s, const child_fds& f, char* const* argv, char* const* envp) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  if (f.in >= 0) posix_spawn_file_actions_adddup2(&fa, f.in, 0);
  posix_spawn_file_actions_adddup2(&fa, f.out, 1);
  posix_spawn_file_actions_adddup2(&fa, f.err, 2);
  if (!s.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, s.cwd.c_str());
  // Nothing of ours (log files, the listening socket, connections) leaks into the child.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  sigset_t none, defaults;
  sigemptyset(&none);  // batond and the worker block SIGTERM in all threads; the child starts with nothing blocked
  sigemptyset(&defaults);
  for (int sig : reset_signals) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group, so a timeout kills what it started too
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  int spawn_errno = posix_spawnp(&pid, argv[0], &fa, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (spawn_errno != 0)  // glibc reports a failed exec here (program not found, ...)
    throw std::runtime_error(std::string(argv[0]) + ": " + std::strerror(spawn_errno));
  return pid;
}

extern "C" void kill_own_group(int) { ::kill(0, SIGKILL); }

// The forked supervisor (no exec): leads the group, runs argv in it and exits with its status.
// Only async-signal-safe calls: the caller is multithreaded.
[[noreturn]] void run_supervisor(pid_t parent, char* const* argv, char* const* envp, const child_fds& f, const char* cwd) {
  ::setpgid(0, 0);
  struct sigaction sa {};
  sa.sa_handler = kill_own_group;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGHUP, &sa, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGHUP);
  if (::getppid() != parent) kill_own_group(0);  // we died before the line above
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  pid_t child = ::fork();
  if (child < 0) _exit(125);
  if (child == 0) {
    for (int sig : reset_signals) ::signal(sig, SIG_DFL);
    if (f.in >= 0) ::dup2(f.in, 0);
    ::dup2(f.out, 1);
    ::dup2(f.err, 2);
    ::closefrom(3);
    if (cwd && ::chdir(cwd) != 0) _exit(126);
    ::execve(argv[0], argv, envp);
    _exit(127);
  }
  // The group's SIGTERM is for the child; the supervisor waits for it and reports its status.
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  int st = 0;
  while (::waitpid(child, &st, 0) < 0)
    if (errno != EINTR) _exit(125);
  if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
  _exit(128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
}

}  // namespace

process::process(const spawn_spec& spec) : supervised_(spec.supervised) {
  if (spec.argv.empty()) throw std::invalid_argument("process: no program");
  if (spec.supervised && spec.argv[0].find('/') == std::string::npos)
    throw std::invalid_argument("process: a supervised program is named by its path, not '" + spec.argv[0] + "'");
  // Everything the child needs is prepared here: after a fork, only async-signal-safe calls.
  auto env = child_env(spec);
  auto envp = pointers(env);
  std::vector<std::string> args = spec.argv;
  auto argv = pointers(args);
  child_fds f;
  open_fds(spec, f);
  if (!spec.supervised) {
    pid_ = spawn(spec, f, argv.data(), envp.data());
  } else {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw errno_error("fork failed");
    if (pid == 0) run_supervisor(parent, argv.data(), envp.data(), f, spec.cwd.empty() ? nullptr : spec.cwd.c_str());
    ::setpgid(pid, pid);  // also from here, so kill(-pid) works even before the child ran
    pid_ = pid;
  }
  std::swap(in_, f.our_in);
  std::swap(out_, f.our_out);
  std::swap(err_, f.our_err);
}

process::~process() {
  if (pid_ > 0 && !status_) stop(std::chrono::milliseconds(0));
  close_in();
  close_out();
  close_err();
}

void process::exited(int status) {
  status_ = status;
  if (supervised_) kill_group(SIGKILL);  // stragglers the payload left behind
}

std::optional<int> process::poll() {
  if (status_) return status_;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) exited(st);
  return status_;
}

int process::wait() {
  if (status_) return *status_;
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  exited(st);
  return st;
}

void process::kill_group(int sig) {
  if (pid_ > 0) ::kill(-pid_, sig);
}

int process::stop(std::chrono::milliseconds grace) {
  if (poll()) return *status_;
  kill_group(SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (poll()) return *status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_group(SIGKILL);
  return wait();
}

run_result run(const std::vector<std::string>& argv, const std::string& stdin_text, std::chrono::milliseconds timeout,
               const std::vector<std::string>& strip_env) {
  run_result r;
  spawn_spec spec;
  spec.argv = argv;
  spec.strip_env = strip_env;
  spec.stdin_pipe = true;
  std::optional<process> p;
  try {
    p.emplace(spec);
  } catch (const std::exception& e) {
    r.not_started = true;
    r.err = e.what();
    return r;
  }
  if (stdin_text.empty())
    p->close_in();
  else
    fcntl(p->in_fd(), F_SETFL, O_NONBLOCK);
  size_t written = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (p->out_fd() >= 0 || p->err_fd() >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      p->kill_group(SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    int idx_out = -1, idx_err = -1, idx_in = -1;
    if (p->out_fd() >= 0) idx_out = n, fds[n++] = {p->out_fd(), POLLIN, 0};
    if (p->err_fd() >= 0) idx_err = n, fds[n++] = {p->err_fd(), POLLIN, 0};
    if (p->in_fd() >= 0) idx_in = n, fds[n++] = {p->in_fd(), POLLOUT, 0};
    if (::poll(fds, n, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    auto drain = [&](int idx, int fd, void (process::*close)(), std::string& into) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0)
        into.append(buf, static_cast<size_t>(got));
      else if (got == 0 || errno != EINTR)
        ((*p).*close)();
    };
    drain(idx_out, p->out_fd(), &process::close_out, r.out);
    drain(idx_err, p->err_fd(), &process::close_err, r.err);
    if (idx_in >= 0 && (fds[idx_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t put = ::write(p->in_fd(), stdin_text.data() + written, stdin_text.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if ((put < 0 && errno != EAGAIN && errno != EINTR) || written == stdin_text.size()) p->close_in();
    }
  }
  p->close_in();
  p->close_out();
  p->close_err();
  r.exit_code = exit_code_of(p->wait());
  return r;
}

}  // namespace baton::util
