#pragma once
// The time batond records in its events and decides with (leases, ages, rate limits). The
// wall clock read once at start, then advanced by the monotonic clock, and never earlier than
// the last time the log recorded: a wall clock stepped backwards (or forwards) while batond
// runs, by an operator or a confused NTP, changes nothing that batond records or decides: a
// recorded time never goes back, and a lease never expires because the clock jumped. The
// next start takes up the wall clock again (after the log's last recorded time).
#include <chrono>
#include <cstdint>
#include <functional>

namespace baton::daemon {

class daemon_clock {
 public:
  using source = std::function<int64_t()>;  // microseconds

  // floor_us: the log's last recorded time (0 for an empty log).
  explicit daemon_clock(int64_t floor_us, source wall = system_wall_us, source steady = steady_us);

  int64_t now_us() const;
  // How far the wall clock is from the daemon's time now (positive: the wall clock is ahead),
  // for the log line that tells an operator their clock moved.
  int64_t wall_offset_us() const { return wall_() - now_us(); }

  static int64_t system_wall_us();
  static int64_t steady_us();

 private:
  source wall_, steady_;
  int64_t base_us_ = 0;  // the daemon's time at start
  int64_t steady_start_us_ = 0;
};

}  // namespace baton::daemon
