// batond's clock (batond/daemon_clock.hpp) with both clocks it reads driven by the test.
#include <gtest/gtest.h>

#include "batond/daemon_clock.hpp"

using baton::daemon::daemon_clock;

namespace {

struct clocks {
  int64_t wall = 1'800'000'000'000'000, steady = 5'000'000;
  daemon_clock make(int64_t floor) {
    return daemon_clock(
        floor, [this] { return wall; }, [this] { return steady; });
  }
};

}  // namespace

TEST(DaemonClock, StartsAtTheWallClockAndAdvancesWithTheMonotonicOne) {
  clocks c;
  auto clock = c.make(0);
  EXPECT_EQ(clock.now_us(), c.wall);
  c.steady += 1'500'000;
  c.wall += 1'500'000;
  EXPECT_EQ(clock.now_us(), 1'800'000'001'500'000);
  EXPECT_EQ(clock.wall_offset_us(), 0);
}

TEST(DaemonClock, AWallClockSteppedBackOrForwardChangesNothing) {
  clocks c;
  auto clock = c.make(0);
  c.steady += 10'000'000;
  c.wall -= 7'200'000'000;  // set back two hours while running
  EXPECT_EQ(clock.now_us(), 1'800'000'010'000'000);
  EXPECT_EQ(clock.wall_offset_us(), -7'210'000'000);
  c.wall += 14'400'000'000;  // then two hours ahead
  EXPECT_EQ(clock.now_us(), 1'800'000'010'000'000) << "a lease measured with it does not expire";
}

TEST(DaemonClock, AStartOnAClockSetBackGoesOnFromTheLogsLastTime) {
  clocks c;
  const int64_t last_recorded = c.wall + 3'600'000'000;  // the log has a time an hour ahead of this wall clock
  auto clock = c.make(last_recorded);
  EXPECT_EQ(clock.now_us(), last_recorded + 1);
  c.steady += 2;
  EXPECT_EQ(clock.now_us(), last_recorded + 3);
  EXPECT_LT(clock.wall_offset_us(), 0);
}
