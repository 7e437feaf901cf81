// Preloaded (LD_PRELOAD) into batond by clock_step_test to step its wall clock while it runs,
// as an operator's `date -s` or a confused NTP would:
//   BATON_TEST_WALL_CLOCK_OFFSET_FILE=FILE  FILE holds a signed number of seconds ("-7200",
//                                           "+0"), added to every reading of the wall clock
//                                           (CLOCK_REALTIME and its coarse form, gettimeofday,
//                                           time); read again at every reading.
// Other clocks pass through unchanged.
//
// Why not libfaketime: batond runs on jemalloc, whose start-up reads the monotonic clock while
// holding its initialisation lock; libfaketime's first clock call looks up symbols that do not
// exist (an allocation in the dynamic loader's error path) and so re-enters jemalloc under
// that lock: the process deadlocks before main. This shim reads the clocks by system call and
// never allocates, so it cannot re-enter the allocator.
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace {

int real_clock_gettime(clockid_t clock, timespec* ts) { return static_cast<int>(syscall(SYS_clock_gettime, clock, ts)); }

// The offset in seconds, read from the file each time (so a step is seen at once); 0 when unset.
int64_t offset_seconds() {
  static const char* file = std::getenv("BATON_TEST_WALL_CLOCK_OFFSET_FILE");
  if (!file) return 0;
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = buf;
  bool negative = *p == '-';
  if (*p == '-' || *p == '+') ++p;
  int64_t v = 0;
  for (; *p >= '0' && *p <= '9' && v < 10'000'000'000; ++p) v = v * 10 + (*p - '0');
  return negative ? -v : v;
}

bool is_wall(clockid_t clock) { return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE; }

}  // namespace

extern "C" {

int clock_gettime(clockid_t clock, timespec* ts) {
  int rc = real_clock_gettime(clock, ts);
  if (rc == 0 && is_wall(clock)) ts->tv_sec += offset_seconds();
  return rc;
}

int gettimeofday(timeval* tv, void* /*tz*/) {
  timespec ts{};
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

time_t time(time_t* out) {
  timespec ts{};
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return static_cast<time_t>(-1);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}

}  // extern "C"
