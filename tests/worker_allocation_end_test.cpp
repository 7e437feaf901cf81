// baton-worker's reading of squeue's end time (%e): the node's local time, or no end.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <string>

#include "core/util/time.hpp"
#include "worker/slurm_deadline.hpp"

using namespace baton::worker;

namespace {

// Runs the body with TZ set (POSIX TZ strings need no zone database), then restores it.
struct time_zone {
  std::string old;
  bool had = false;
  explicit time_zone(const char* tz) {
    if (const char* v = std::getenv("TZ")) {
      old = v;
      had = true;
    }
    setenv("TZ", tz, 1);
    tzset();
  }
  ~time_zone() {
    if (had)
      setenv("TZ", old.c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }
};

}  // namespace

TEST(SlurmEndTime, LocalTimeInUtc) {
  time_zone utc("UTC0");
  auto t = parse_slurm_end_time("2030-01-01T12:00:00\n");
  ASSERT_EQ(t.kind, slurm_end_time::time);
  EXPECT_EQ(t.epoch_seconds, 1'893'499'200);
  EXPECT_EQ(baton::util::format_time_us(t.epoch_seconds * 1'000'000, baton::util::time_form::seconds), "2030-01-01T12:00:00Z");
}

TEST(SlurmEndTime, LocalTimeIsTheNodesZone) {
  time_zone cet("CET-1");  // UTC+1, no DST rule
  auto t = parse_slurm_end_time("2030-01-01T13:00:00");
  ASSERT_EQ(t.kind, slurm_end_time::time);
  EXPECT_EQ(t.epoch_seconds, 1'893'499'200) << "13:00 at UTC+1 is 12:00Z";
}

TEST(SlurmEndTime, NoEndWords) {
  for (const char* none : {"Unknown", "NONE", "N/A", "  Unknown \n"})
    EXPECT_EQ(parse_slurm_end_time(none).kind, slurm_end_time::none) << none;
}

TEST(SlurmEndTime, MalformedTexts) {
  time_zone utc("UTC0");
  for (const char* bad :
       {"", "2030-01-01", "2030-01-01 12:00:00", "2030-01-01T12:00", "2030-13-01T00:00:00", "2030-02-30T00:00:00",
        "2030-01-01T24:00:00", "2030-01-01T12:00:00Z", "soon", "slurm_load_jobs error: Invalid job id specified"})
    EXPECT_EQ(parse_slurm_end_time(bad).kind, slurm_end_time::malformed) << bad;
}
