#include "slurm/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace baton::slurm {
namespace {

// batond's secrets never reach a child: sbatch's default --export=ALL would hand them to the
// batch job, and Slurm keeps a job's environment in its spool next to the script.
bool secret(const char* kv) {
  for (const char* name : {"BATON_API_TOKEN=", "BATON_PILOT_TOKEN=", "BATON_SALAD_API_KEY="})
    if (std::strncmp(kv, name, std::strlen(name)) == 0) return true;
  return false;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

run_result run(const std::vector<std::string>& argv, const std::string& stdin_text, std::chrono::milliseconds timeout) {
  run_result r;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    r.not_started = true;
    r.err = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; e && *e; ++e)
    if (!secret(*e)) envp.push_back(*e);
  envp.push_back(nullptr);

  // posix_spawn, not fork: the caller is a threaded daemon (or worker), and a forked copy of
  // it would hold every other thread's locks in whatever state they were.
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // Nothing of the parent's (log files, the listening socket) leaks into ssh or sbatch.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  sigset_t none, defaults;
  sigemptyset(&none);  // batond blocks SIGTERM in all threads; the child starts with nothing blocked
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group, so a timeout kills what it started too
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  int spawn_errno = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (spawn_errno != 0) {  // glibc reports a failed exec here (program not found, ...)
    r.not_started = true;
    r.err = argv[0] + ": " + std::strerror(spawn_errno);
    close_fd(in[1]), close_fd(out[0]), close_fd(err[0]);
    return r;
  }

  fcntl(in[1], F_SETFL, O_NONBLOCK);
  size_t written = 0;
  if (stdin_text.empty()) close_fd(in[1]);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (out[0] >= 0 || err[0] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    int idx_out = -1, idx_err = -1, idx_in = -1;
    if (out[0] >= 0) idx_out = n, fds[n++] = {out[0], POLLIN, 0};
    if (err[0] >= 0) idx_err = n, fds[n++] = {err[0], POLLIN, 0};
    if (in[1] >= 0) idx_in = n, fds[n++] = {in[1], POLLOUT, 0};
    if (poll(fds, n, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    auto drain = [&](int idx, int& fd, std::string& into) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t got = read(fd, buf, sizeof buf);
      if (got > 0)
        into.append(buf, static_cast<size_t>(got));
      else if (got == 0 || errno != EINTR)
        close_fd(fd);
    };
    drain(idx_out, out[0], r.out);
    drain(idx_err, err[0], r.err);
    if (idx_in >= 0 && (fds[idx_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t put = write(in[1], stdin_text.data() + written, stdin_text.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if (put < 0 && errno != EAGAIN && errno != EINTR) close_fd(in[1]);
      if (written == stdin_text.size()) close_fd(in[1]);
    }
  }
  close_fd(in[1]), close_fd(out[0]), close_fd(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  return r;
}

}  // namespace baton::slurm
