// Preloaded (LD_PRELOAD) into batond by storage_faults_test, to make the disk fail the way
// real ones do, at a chosen point:
//   BATON_TEST_FAIL_SYNC_WHILE=FILE  while FILE exists, fsync and fdatasync of a RocksDB
//                                     write-ahead log file (NNNNNN.log) fail with EIO;
//   BATON_TEST_STALL_SYNC_WHILE=FILE while FILE exists, they wait (a slow disk: decisions
//                                     written but not yet durable);
//   BATON_TEST_KILL_AT_WRITE=SUFFIX:MIN_BYTES:N
//                                     the Nth write (write, pwrite) of at least MIN_BYTES to
//                                     a file whose path ends with SUFFIX puts down half its
//                                     bytes, then the process is killed (SIGKILL): a kill -9
//                                     in the middle of that write.
// Everything else passes through.
#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::string path_of(int fd) {
  char link[64], path[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool sync_failing(int fd) {
  static const char* trigger = std::getenv("BATON_TEST_FAIL_SYNC_WHILE");
  struct stat st;
  return trigger && *trigger && stat(trigger, &st) == 0 && ends_with(path_of(fd), ".log");
}

void stall_sync(int fd) {
  static const char* trigger = std::getenv("BATON_TEST_STALL_SYNC_WHILE");
  struct stat st;
  if (!trigger || !*trigger || !ends_with(path_of(fd), ".log")) return;
  while (stat(trigger, &st) == 0) usleep(5000);  // (the test removes the file to end the stall)
}

struct kill_rule {
  bool on = false;
  std::string suffix;
  size_t min_bytes = 0;
  long nth = 0;
};

const kill_rule& rule() {
  static const kill_rule r = [] {
    kill_rule k;
    const char* spec = std::getenv("BATON_TEST_KILL_AT_WRITE");
    if (!spec) return k;
    std::string s(spec);
    auto a = s.find(':'), b = s.rfind(':');
    if (a == std::string::npos || a == b) return k;
    k.suffix = s.substr(0, a);
    k.min_bytes = std::stoul(s.substr(a + 1, b - a - 1));
    k.nth = std::stol(s.substr(b + 1));
    k.on = true;
    return k;
  }();
  return r;
}

// Whether this write is the one to die in.
bool dies_in(int fd, size_t count) {
  static std::atomic<long> seen{0};
  const auto& r = rule();
  if (!r.on || count < r.min_bytes || !ends_with(path_of(fd), r.suffix)) return false;
  return ++seen == r.nth;
}

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

[[noreturn]] void die() {
  kill(getpid(), SIGKILL);
  for (;;) pause();
}

}  // namespace

extern "C" {

int fdatasync(int fd) {
  static auto real = next<int (*)(int)>("fdatasync");
  stall_sync(fd);
  if (sync_failing(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

int fsync(int fd) {
  static auto real = next<int (*)(int)>("fsync");
  stall_sync(fd);
  if (sync_failing(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

ssize_t write(int fd, const void* buf, size_t count) {
  static auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
  if (dies_in(fd, count)) {
    real(fd, buf, count / 2);
    die();
  }
  return real(fd, buf, count);
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off64_t offset) {
  static auto real = next<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64");
  if (dies_in(fd, count)) {
    real(fd, buf, count / 2, offset);
    die();
  }
  return real(fd, buf, count, offset);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) { return pwrite64(fd, buf, count, offset); }
}
