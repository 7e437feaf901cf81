// core/util: hex, SHA-256 (whole and streamed), times as text (every form against the C
// library's rendering) and their parsing, and the process launcher.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/util/csv.hpp"
#include "core/util/hex.hpp"
#include "core/util/process.hpp"
#include "core/util/sha256.hpp"
#include "core/util/time.hpp"
#include "support/temp_dir.hpp"

using namespace baton::util;
using baton::test::temp_dir;
namespace fs = std::filesystem;

namespace {

constexpr int64_t s = 1'000'000;

}  // namespace

TEST(Hex, BytesRoundTripAndOnlyHexIsRead) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  const std::string h = to_hex(all);
  ASSERT_EQ(h.size(), 512u);
  EXPECT_EQ(h.substr(0, 8), "00010203");
  EXPECT_EQ(h.substr(504), "fcfdfeff");
  EXPECT_EQ(from_hex(h), all);
  EXPECT_EQ(from_hex("ABcdEF"), std::string("\xab\xcd\xef"));
  EXPECT_EQ(from_hex(""), std::string());
  for (const char* bad : {"a", "abc", "zz", "0g", " 1", "+1", "-1", "0x"}) EXPECT_FALSE(from_hex(bad)) << bad;
}

TEST(Hex, LowerHexOfALengthAndUuidText) {
  const std::string digest(64, 'a');
  EXPECT_TRUE(is_lower_hex(digest, 64));
  EXPECT_TRUE(is_sha256_hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(65, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a') + "A")) << "upper case names no blob";
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
  EXPECT_EQ(uuid_text(std::string("\x55\x0e\x84\x00\xe2\x9b\x41\xd4\xa7\x16\x44\x66\x55\x44\x00\x00", 16)),
            "550e8400-e29b-41d4-a716-446655440000");
  EXPECT_THROW(uuid_text("short"), std::invalid_argument);
}

// FIPS 180-4's examples, whole, in two parts, and streamed in every split and byte by byte.
TEST(Sha256, KnownDigestsWholeAndStreamed) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(two_blocks), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(to_hex(sha256("ab", "c")), sha256_hex("abc"));
  for (size_t split = 0; split <= two_blocks.size(); ++split) {
    sha256_stream h;
    h.update(two_blocks.substr(0, split));
    h.update(two_blocks.substr(split));
    EXPECT_EQ(h.hex(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") << split;
  }
  sha256_stream bytes;
  for (char c : two_blocks) bytes.update(&c, 1);
  EXPECT_EQ(bytes.digest(), sha256(two_blocks));
  unsigned char raw[sha256_size];
  sha256_into("a", "bc", raw);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(raw), sha256_size), sha256("abc"));
}

// A copy continues from where the original was (an upload resumed from a kept state), and
// reset() starts over.
TEST(Sha256, ACopyContinuesIndependentlyAndResetStartsOver) {
  std::string big(1 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>(i);
  sha256_stream a;
  a.update(big.substr(0, 300'000));
  sha256_stream b = a;
  a.update(big.substr(300'000));
  b.update("other");
  EXPECT_EQ(a.hex(), sha256_hex(big));
  EXPECT_EQ(b.hex(), sha256_hex(big.substr(0, 300'000) + "other"));
  a.reset();
  a.update("abc");
  EXPECT_EQ(a.hex(), sha256_hex("abc"));
}

namespace {

// The C library's rendering of each form, as the formatters it replaced wrote them (seconds
// rounded down, then the fraction the form keeps).
std::string c_library_time(int64_t us, time_form f) {
  int64_t secs = us / 1000000 - (us % 1000000 < 0 ? 1 : 0);
  int64_t frac = us % 1000000 + (us % 1000000 < 0 ? 1000000 : 0);
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, f == time_form::basic ? "%Y%m%dT%H%M%S" : "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  if (f == time_form::micros)
    std::snprintf(out, sizeof out, "%s.%06lldZ", buf, static_cast<long long>(frac));
  else if (f == time_form::millis)
    std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(frac / 1000));
  else
    std::snprintf(out, sizeof out, "%sZ", buf);
  return out;
}

}  // namespace

TEST(Time, EveryFormIsWrittenAsTheCLibraryWritesIt) {
  constexpr int64_t day = 86'400 * s;
  std::vector<int64_t> times = {0,
                                -1,
                                1,
                                999'999,
                                -999'999,
                                -1'000'000,
                                1'000'000,
                                day - 1,
                                -day,
                                -day - 1,
                                951'782'400 * s,              // 2000-02-29
                                4'107'542'400 * s,            // 2100-03-01 (2100 is no leap year)
                                1'798'761'600 * s + 123'456,  // 2027-01-01
                                -30'610'224'000 * s,          // 1000-01-01, the first written by hand
                                -30'610'224'000 * s - 1,      // the last before it (the C library's)
                                253'402'300'800 * s - 1,      // 9999-12-31T23:59:59.999999
                                253'402'300'800 * s,          // 10000-01-01 (the C library's)
                                -62'167'219'200 * s,          // 0000-01-01
                                std::numeric_limits<int64_t>::max(),
                                std::numeric_limits<int64_t>::min()};
  std::mt19937_64 rng(20261128);
  for (int i = 0; i < 100'000; ++i) {
    const int64_t span = 300'000'000'000LL * s;  // years -7500 to 11400 around 1970
    times.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * span)) - span);
  }
  for (time_form f : {time_form::micros, time_form::millis, time_form::seconds, time_form::basic})
    for (int64_t t : times) ASSERT_EQ(format_time_us(t, f), c_library_time(t, f)) << t << " form " << static_cast<int>(f);
}

TEST(Time, TheFormsSideBySide) {
  const int64_t t = 1'893'499'200 * s + 250'000;  // 2030-01-01T12:00:00.25Z
  EXPECT_EQ(format_time_us(t), "2030-01-01T12:00:00.250000Z");
  EXPECT_EQ(format_time_us(t, time_form::millis), "2030-01-01T12:00:00.250Z");
  EXPECT_EQ(format_time_us(t, time_form::seconds), "2030-01-01T12:00:00Z");
  EXPECT_EQ(format_time_us(t, time_form::basic), "20300101T120000Z");
}

TEST(Time, Rfc3339RoundTripsFormatTimeUs) {
  for (int64_t us : {int64_t{0}, int64_t{1'700'000'000'123'456}, int64_t{951'782'400'000'000} /* 2000-02-29 */})
    EXPECT_EQ(parse_time_us(format_time_us(us)), us) << format_time_us(us);
  for (time_form f : {time_form::millis, time_form::seconds})
    EXPECT_EQ(parse_time_us(format_time_us(1'700'000'000'123'000, f)),
              f == time_form::millis ? 1'700'000'000'123'000 : 1'700'000'000 * s);
  EXPECT_EQ(parse_time_us("2030-01-01T12:00:00Z"), 1'893'499'200 * s);
  EXPECT_EQ(parse_time_us("2030-01-01T14:00:00+02:00"), 1'893'499'200 * s);
  EXPECT_EQ(parse_time_us("2030-01-01 12:00:00.5z"), 1'893'499'200 * s + 500'000);
  EXPECT_EQ(parse_time_us("2030-01-01T12:00:00.1234567Z"), 1'893'499'200 * s + 123'456) << "beyond µs dropped";
  for (const char* bad :
       {"", "2030-01-01T12:00:00", "2030-01-01", "2030-13-01T00:00:00Z", "2030-02-29T00:00:00Z", "2030-01-01T24:00:00Z",
        "2030-01-01T12:00:00Zjunk", "soon", "2030-01-01T12:00:00.Z", "20300101T120000Z"})
    EXPECT_FALSE(parse_time_us(bad)) << bad;
}

TEST(Csv, FormulaCellsAreDefusedAndQuotedFieldsRoundTrip) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("=1+1"), "'=1+1");
  EXPECT_EQ(csv_text("'=1+1"), "=1+1");
  EXPECT_EQ(csv_text(csv_field("'quoted")), "'quoted");
}

// --- the process launcher ---

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Running (a zombie waiting for a reaper counts as gone: its parent, the payload's shell, died).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// Until pred() or ten seconds.
template <class Pred>
bool within_ten_seconds(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// The first line of a file a child writes, once it is there.
std::string line_of(const std::string& path) {
  std::string line;
  within_ten_seconds([&] {
    std::ifstream in(path);
    return static_cast<bool>(std::getline(in, line)) && !line.empty();
  });
  return line;
}

}  // namespace

TEST(Process, RunKillsTheWholeGroupAtTheTimeoutAndReportsMissingPrograms) {
  auto started = std::chrono::steady_clock::now();
  auto r = run({"sh", "-c", "sleep 30 & sleep 30"}, "", std::chrono::milliseconds(300), {});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  auto missing = run({"/nonexistent/sbatch"}, "", std::chrono::seconds(5), {});
  EXPECT_TRUE(missing.not_started);
  EXPECT_NE(missing.err.find("No such file"), std::string::npos) << missing.err;
  auto echo = run({"cat"}, std::string(200000, 'x'), std::chrono::seconds(10), {});  // larger than a pipe buffer
  EXPECT_EQ(echo.out.size(), 200000u);
  auto failing = run({"sh", "-c", "echo out; echo err >&2; exit 3"}, "", std::chrono::seconds(10), {});
  EXPECT_EQ(failing.exit_code, 3);
  EXPECT_EQ(failing.out, "out\n");
  EXPECT_EQ(failing.err, "err\n");
  EXPECT_EQ(run({"sh", "-c", "kill -9 $$"}, "", std::chrono::seconds(10), {}).exit_code, 128 + 9);
}

// Both ways of starting a child: it leads its own group (a timeout or a stop kills it all)
// and holds no descriptor of ours besides 0-2, even one opened without O_CLOEXEC.
TEST(Process, EveryChildLeadsItsOwnGroupAndGetsNoOtherDescriptorOfOurs) {
  int leaked = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC, as a library might leave one
  ASSERT_GE(leaked, 3);
  const std::string script = "echo $$; cut -d' ' -f5 /proc/$$/stat; ls /proc/$$/fd";
  auto r = run({"sh", "-c", script}, "", std::chrono::seconds(10), {});
  temp_dir dir;
  spawn_spec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.log_path = dir / "log";
  spec.supervised = true;
  process p(spec);
  const int status = p.wait();
  ::close(leaked);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(exit_code_of(status), 0);
  for (const std::string& out : {r.out, slurp(dir / "log")}) {
    std::istringstream lines(out);
    std::string pid, group, fd;
    std::getline(lines, pid);
    std::getline(lines, group);
    std::vector<std::string> fds;
    while (std::getline(lines, fd)) fds.push_back(fd);
    EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2"})) << out;
    if (&out == &r.out) {
      EXPECT_EQ(group, pid) << "run(): the child leads its group";
    }
  }
  std::istringstream supervised(slurp(dir / "log"));
  std::string pid, group;
  std::getline(supervised, pid);
  std::getline(supervised, group);
  EXPECT_EQ(group, std::to_string(p.pid())) << "the supervisor leads the payload's group";
}

TEST(Process, TheEnvironmentLosesWhatIsStrippedAndGetsWhatIsAdded) {
  setenv("UTIL_TEST_SECRET", "hunter2", 1);
  setenv("UTIL_TEST_KEPT", "kept", 1);
  setenv("UTIL_TEST_REPLACED", "old", 1);
  auto r = run({"env"}, "", std::chrono::seconds(10), {"UTIL_TEST_SECRET"});
  temp_dir dir;
  spawn_spec spec;
  spec.argv = {"/usr/bin/env"};
  spec.strip_env = {"UTIL_TEST_SECRET"};
  spec.extra_env = {"UTIL_TEST_REPLACED=new", "UTIL_TEST_ADDED=1"};
  spec.log_path = dir / "log";
  spec.supervised = true;
  process p(spec);
  EXPECT_EQ(exit_code_of(p.wait()), 0);
  for (const char* name : {"UTIL_TEST_SECRET", "UTIL_TEST_KEPT", "UTIL_TEST_REPLACED"}) unsetenv(name);
  const std::string payload = slurp(dir / "log");
  for (const std::string& out : {r.out, payload}) {
    EXPECT_EQ(out.find("hunter2"), std::string::npos) << out;
    EXPECT_NE(out.find("UTIL_TEST_KEPT=kept\n"), std::string::npos) << out;
  }
  EXPECT_NE(payload.find("UTIL_TEST_REPLACED=new\n"), std::string::npos) << payload;
  EXPECT_EQ(payload.find("UTIL_TEST_REPLACED=old"), std::string::npos) << payload;
  EXPECT_NE(payload.find("UTIL_TEST_ADDED=1\n"), std::string::npos) << payload;
}

// The payload's way: its working dir, its output appended to the log, stdin /dev/null, the
// exit code through the supervisor; stop() ends the whole group, and what a payload leaves
// behind in its group dies with it.
TEST(Process, ASupervisedChildRunsInItsDirAndStopEndsItsWholeGroup) {
  temp_dir dir;
  std::ofstream(dir / "log") << "before\n";
  spawn_spec spec;
  spec.argv = {"/bin/sh", "-c", "pwd; cat; echo done; exit 7"};
  spec.cwd = dir.path();
  spec.log_path = dir / "log";
  spec.supervised = true;
  {
    process p(spec);
    EXPECT_EQ(exit_code_of(p.wait()), 7);
  }
  EXPECT_EQ(slurp(dir / "log"), "before\n" + std::string(dir.path()) + "\ndone\n");

  spec.argv = {"/bin/sh", "-c", "sleep 60 & echo $! > left; trap '' TERM; sleep 60"};
  {
    process p(spec);
    const pid_t left = std::stoi(line_of(dir / "left"));
    EXPECT_TRUE(alive(left));
    const int status = p.stop(std::chrono::milliseconds(200));  // the shell ignores SIGTERM: SIGKILL after the grace
    EXPECT_EQ(exit_code_of(status), 128 + SIGKILL);
    EXPECT_TRUE(within_ten_seconds([&] { return !alive(left); })) << "the group's other process";
  }
  fs::remove(dir / "left");
  spec.argv = {"/bin/sh", "-c", "sleep 60 & echo $! > left; exit 0"};
  {
    process p(spec);
    const pid_t left = std::stoi(line_of(dir / "left"));
    ASSERT_TRUE(within_ten_seconds([&] { return p.poll().has_value(); }));
    EXPECT_EQ(exit_code_of(*p.poll()), 0);
    EXPECT_TRUE(within_ten_seconds([&] { return !alive(left); })) << "a straggler outlived the payload";
  }
  spec.cwd = dir / "missing";
  process p(spec);
  EXPECT_EQ(exit_code_of(p.wait()), 126);
}

// The guarantee the supervisor is for: the payload's whole group dies with the process that
// started it, even by SIGKILL (here a forked copy of the test, killed while the payload runs).
TEST(Process, ASupervisedGroupDiesWithItsParent) {
  temp_dir dir;
  const std::string left = dir / "left";
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    spawn_spec spec;
    spec.argv = {"/bin/sh", "-c", "sleep 60 & echo $! > " + left + "; sleep 60"};
    spec.log_path = dir / "log";
    spec.supervised = true;
    process p(spec);
    ::pause();
    _exit(0);
  }
  const pid_t sleeper = std::stoi(line_of(left));
  EXPECT_TRUE(alive(sleeper));
  ::kill(parent, SIGKILL);
  int st = 0;
  ::waitpid(parent, &st, 0);
  EXPECT_TRUE(within_ten_seconds([&] { return !alive(sleeper); })) << "the payload outlived its worker";
}

TEST(Process, ASupervisedProgramIsNamedByItsPath) {
  spawn_spec spec;
  spec.argv = {"sh", "-c", "true"};
  spec.supervised = true;
  EXPECT_THROW(process{spec}, std::invalid_argument);
  spec.argv.clear();
  EXPECT_THROW(process{spec}, std::invalid_argument);
  spec.argv = {"/bin/true"};
  spec.log_path = "/nonexistent/dir/log";
  try {
    process p(spec);
    FAIL() << "started without its log";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/log"), std::string::npos) << e.what();
  }
}
