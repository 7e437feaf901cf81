// Numbers in stored payloads (core/events/payload_numbers.hpp): a float outside an integer's range,
// a string, a missing key or a product that would overflow reads as the fallback, never as
// undefined behaviour. Run under UBSan in the debug-asan build; the fuzzer found the first
// case (a worker.registered whose gpu_count was 5.6e199).
#include <gtest/gtest.h>

#include "core/events/payload_numbers.hpp"
#include "core/world/world.hpp"

using namespace baton;
using nlohmann::json;

TEST(payload_numbers, OutOfRangeOrNotANumberReadsAsTheFallback) {
  const json p = {{"big", 5.6e199},      {"neg", -1},   {"huge", uint64_t{1} << 40}, {"ok", 7},
                  {"half", 2.5},         {"text", "7"}, {"nan_like", 1e308 * 10},    {"at_max", 9.3e18},
                  {"max_i64", INT64_MAX}};
  EXPECT_EQ(core::number_or(p, "big", 3), 3);
  EXPECT_EQ(core::number_or(p, "big", int64_t{3}), 3);
  EXPECT_EQ(core::number_or(p, "neg", 4u), 4u) << "a negative number is not an unsigned one";
  EXPECT_EQ(core::number_or(p, "neg", 4), -1);
  EXPECT_EQ(core::number_or(p, "huge", 5), 5) << "2^40 does not fit an int";
  EXPECT_EQ(core::number_or(p, "huge", int64_t{5}), int64_t{1} << 40);
  EXPECT_EQ(core::number_or(p, "ok", 0u), 7u);
  EXPECT_EQ(core::number_or(p, "half", 0), 2) << "an in-range float is truncated, as nlohmann does";
  EXPECT_EQ(core::number_or(p, "text", 6), 6);
  EXPECT_EQ(core::number_or(p, "missing", 8), 8);
  EXPECT_EQ(core::number_or(p, "nan_like", int64_t{9}), 9);
  EXPECT_EQ(core::number_or(p, "at_max", int64_t{10}), 10) << "past 2^63 as a double";
  EXPECT_EQ(core::number_or(p, "max_i64", int64_t{0}), INT64_MAX);
  EXPECT_EQ(core::number_or(json::array({1, 2}), "ok", 11), 11) << "not an object: no keys";
  EXPECT_DOUBLE_EQ(core::number_or(p, "big", 0.0), 5.6e199);
}

TEST(payload_numbers, AProductThatWouldOverflowReadsAsTheFallback) {
  const json p = {{"seconds", int64_t{1} << 50}, {"small", 3}};
  EXPECT_EQ(core::scaled_or(p, "seconds", 42'000'000, 1'000'000), 42'000'000);
  EXPECT_EQ(core::scaled_or(p, "small", 0, 1'000'000), 3'000'000);
  EXPECT_EQ(core::scaled_or(p, "missing", 5'000'000, 1'000'000), 5'000'000);
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
