// Numbers in stored payloads (events/described.hpp's integer_of, core/events/payload_numbers.hpp):
// a float outside an integer's range, a string or a product that would overflow reads as the
// default, never as undefined behaviour. Run under UBSan in the debug-asan build; the fuzzer found the first
// case (a worker.registered whose gpu_count was 5.6e199).
#include <gtest/gtest.h>

#include "core/events/payload_numbers.hpp"
#include "events/described.hpp"
#include "core/world/world.hpp"

using namespace baton;
using nlohmann::json;

TEST(payload_numbers, OutOfRangeOrNotANumberReadsAsNothing) {
  const json p = {{"big", 5.6e199},      {"neg", -1},   {"huge", uint64_t{1} << 40}, {"ok", 7},
                  {"half", 2.5},         {"text", "7"}, {"nan_like", 1e308 * 10},    {"at_max", 9.3e18},
                  {"max_i64", INT64_MAX}};
  using events::described_detail::integer_of;
  EXPECT_FALSE(integer_of<int>(p["big"]));
  EXPECT_FALSE(integer_of<int64_t>(p["big"]));
  EXPECT_FALSE(integer_of<unsigned>(p["neg"])) << "a negative number is not an unsigned one";
  EXPECT_EQ(integer_of<int>(p["neg"]), -1);
  EXPECT_FALSE(integer_of<int>(p["huge"])) << "2^40 does not fit an int";
  EXPECT_EQ(integer_of<int64_t>(p["huge"]), int64_t{1} << 40);
  EXPECT_EQ(integer_of<unsigned>(p["ok"]), 7u);
  EXPECT_EQ(integer_of<int>(p["half"]), 2) << "an in-range float is truncated, as nlohmann does";
  EXPECT_FALSE(integer_of<int>(p["text"]));
  EXPECT_FALSE(integer_of<int64_t>(p["nan_like"]));
  EXPECT_FALSE(integer_of<int64_t>(p["at_max"])) << "past 2^63 as a double";
  EXPECT_EQ(integer_of<int64_t>(p["max_i64"]), INT64_MAX);
}

TEST(payload_numbers, AProductThatWouldOverflowReadsAsTheFallback) {
  EXPECT_EQ(core::scaled_or(int64_t{1} << 50, 42'000'000, 1'000'000), 42'000'000);
  EXPECT_EQ(core::scaled_or(-(int64_t{1} << 50), 42'000'000, 1'000'000), 42'000'000);
  EXPECT_EQ(core::scaled_or(3, 0, 1'000'000), 3'000'000);
  EXPECT_EQ(core::scaled_or(std::nullopt, 5'000'000, 1'000'000), 5'000'000);
}

TEST(payload_numbers, ADamagedWorkerRegistrationAppliesWithDefaults) {
  core::world w;
  core::apply(w, "worker/w1", "worker.registered",
              {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 5.6e199}, {"wall_time_seconds", -1e300}}, 1'000);
  const core::worker* wk = w.find_worker("w1");
  ASSERT_TRUE(wk);
  EXPECT_EQ(wk->gpu_count, 0);
  core::apply(w, "job/j1", "job.created",
              {{"title", "t"}, {"gpu_count", -3.0e12}, {"nice", 1e40}, {"time_limit_seconds", "soon"}}, 2'000);
  const core::job* j = w.find_job("j1");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->gpu_count, 1u);
  EXPECT_EQ(j->nice, 0);
  EXPECT_FALSE(j->time_limit_seconds);
}
