#include "batond/daemon_clock.hpp"

#include <algorithm>

namespace baton::daemon {

int64_t daemon_clock::system_wall_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t daemon_clock::steady_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

daemon_clock::daemon_clock(int64_t floor_us, source wall, source steady) : wall_(std::move(wall)), steady_(std::move(steady)) {
  // One microsecond past the log's last time: a start on a clock set back still records after it.
  base_us_ = std::max(wall_(), floor_us + 1);
  steady_start_us_ = steady_();
}

int64_t daemon_clock::now_us() const { return base_us_ + (steady_() - steady_start_us_); }

}  // namespace baton::daemon
