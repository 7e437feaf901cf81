// Payload supervision (worker/supervision.hpp) with time driven by the test: the rules from
// baton-job.json, and when payload_watch ends an attempt (and when it must not).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "support/temp_dir.hpp"
#include "worker/bundle.hpp"
#include "worker/supervision.hpp"

using namespace baton::worker;
using nlohmann::json;
using std::chrono::seconds;

namespace {

void append(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::app) << text; }

std::string error_of(const json& j) {
  try {
    parse_supervision(j);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

}  // namespace

TEST(Supervision, RulesAreReadFromTheJobSpecAndBadOnesNamed) {
  auto spec = parse_job_spec(
      R"({"command": "sh run.sh", "supervision": {"max_run_seconds": 86400, "no_progress_seconds": 1800,
          "fatal_log_patterns": ["CUDA error", "NaN detected at step [0-9]+"]}})");
  EXPECT_EQ(spec.supervision.max_run_seconds, 86400);
  EXPECT_EQ(spec.supervision.no_progress_seconds, 1800);
  EXPECT_EQ(spec.supervision.fatal_log_patterns.size(), 2u);
  EXPECT_FALSE(parse_job_spec(R"({"command": "x"})").supervision.any());
  EXPECT_NE(error_of({{"max_run_seconds", -1}}).find("supervision.max_run_seconds"), std::string::npos);
  EXPECT_NE(error_of({{"no_progress_seconds", "soon"}}).find("supervision.no_progress_seconds"), std::string::npos);
  EXPECT_NE(error_of({{"fatal_log_patterns", {"(unclosed"}}}).find("'(unclosed' is not a valid regular expression"),
            std::string::npos);
  EXPECT_NE(error_of({{"fatal_log_patterns", "CUDA"}}).find("must be a list"), std::string::npos);
  EXPECT_NE(error_of({{"max_runtime", 5}}).find("'supervision.max_runtime' is not a supervision rule"), std::string::npos);
  EXPECT_NE(error_of(json::array()).find("must be an object"), std::string::npos);
}

TEST(Supervision, AMaximumRunTimeEndsTheAttemptAtItsEndAndNotBefore) {
  baton::test::temp_dir dir;
  payload_watch w({10, 0, {}}, dir / "log", "", t0);
  EXPECT_FALSE(w.check(t0 + seconds(9)));
  auto v = w.check(t0 + seconds(10));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "payload_max_run_time");
  EXPECT_NE(v->detail.find("max_run_seconds = 10 s"), std::string::npos) << v->detail;
}

TEST(Supervision, NoSignOfLifeForTooLongIsAStallAndOutputOrProgressResetsTheCount) {
  baton::test::temp_dir dir;
  const std::string log = dir / "log", progress = dir / "progress.txt";
  std::ofstream(progress) << "0.25";  // a resumed job's progress: not new
  payload_watch w({0, 30, {}}, log, progress, t0);
  EXPECT_FALSE(w.check(t0 + seconds(29)));
  append(log, "step 1\n");
  EXPECT_FALSE(w.check(t0 + seconds(29)));  // the log grew: alive at 29
  EXPECT_FALSE(w.check(t0 + seconds(58)));
  std::ofstream(progress) << "0.30";
  EXPECT_FALSE(w.check(t0 + seconds(58)));  // progress changed: alive at 58
  EXPECT_FALSE(w.check(t0 + seconds(87)));
  auto v = w.check(t0 + seconds(88));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "payload_stalled");
  EXPECT_NE(v->detail.find("for 30 s"), std::string::npos) << v->detail;
}

TEST(Supervision, AFatalLineEndsTheAttemptEvenWhenItArrivesInPieces) {
  baton::test::temp_dir dir;
  const std::string log = dir / "log";
  payload_watch w({0, 0, {"CUDA error", "NaN detected at step [0-9]+"}}, log, "", t0);
  EXPECT_FALSE(w.check(t0));  // no log yet
  append(log, "step 1 ok\nstep 2: NaN detec");
  EXPECT_FALSE(w.check(t0 + seconds(1)));  // half a line is not matched yet
  append(log, "ted at step 2\nstep 3\n");
  auto v = w.check(t0 + seconds(2));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "payload_fatal_log");
  EXPECT_NE(v->detail.find("'NaN detected at step [0-9]+': step 2: NaN detected at step 2"), std::string::npos) << v->detail;
}

TEST(Supervision, ALogTheProgramTruncatesIsReadAgainFromItsStart) {
  baton::test::temp_dir dir;
  const std::string log = dir / "log";
  payload_watch w({0, 0, {"FATAL"}}, log, "", t0);
  append(log, std::string(5000, 'x') + "\n");
  EXPECT_FALSE(w.check(t0 + seconds(1)));
  std::ofstream(log, std::ios::trunc) << "FATAL: out of memory\n";  // shorter than before
  auto v = w.check(t0 + seconds(2));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "payload_fatal_log");
}

TEST(Supervision, WithoutRulesNothingEverEndsTheAttempt) {
  baton::test::temp_dir dir;
  payload_watch w({}, dir / "log", "", t0);
  append(dir / "log", "FATAL CUDA error\n");
  EXPECT_FALSE(w.check(t0 + std::chrono::hours(1000)));
}

// A payload that writes one enormous line (a progress bar without newlines, a binary dump)
// cannot make the matcher run out of stack: lines are matched on their first 4 KiB.
TEST(Supervision, AnEnormousLineIsMatchedOnItsStartWithoutExhaustingTheStack) {
  baton::test::temp_dir dir;
  const std::string log = dir / "log";
  payload_watch w({0, 0, {"(a|b)*c", "^FATAL"}}, log, "", t0);
  append(log, std::string(size_t{1} << 20, 'a') + "\n");
  EXPECT_FALSE(w.check(t0 + seconds(1)));
  append(log, "FATAL: disk quota exceeded\n");
  auto v = w.check(t0 + seconds(2));
  ASSERT_TRUE(v);
  EXPECT_NE(v->detail.find("disk quota exceeded"), std::string::npos);
}
