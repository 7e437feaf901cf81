// Kills a process that appends through the log writer with SIGKILL at a random moment, 20
// times over one data dir, and checks after each kill that every acknowledged append is
// there at the sequence it was acknowledged with, with no gaps and an intact hash chain.
// Half the rounds count their random delay from the appender's first acknowledgement, so
// appends are acknowledged however long its start-up takes (under the sanitizer build on a
// loaded machine it outlasted every delay of all 20 rounds once); the other half count from
// its start, so a kill may also land in start-up.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "events/event_store.hpp"
#include "support/process.hpp"
#include "support/store_tampering.hpp"
#include "support/temp_dir.hpp"

using namespace baton;

namespace {

// Whether the appender printed its first acknowledgement before the deadline (false when it
// exited first).
bool first_ack_printed(test::child_process& child, std::chrono::seconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (child.out().find('\n') != std::string::npos) return true;
    if (child.wait(std::chrono::milliseconds(0)) != -1) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace

TEST(Crash, EveryAcknowledgedAppendSurvivesSigkill) {
  test::temp_dir dir;
  std::string data = dir / "log";
  std::random_device rd;
  unsigned seed = rd();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(20, 400);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  uint64_t total_acked = 0;
  for (int round = 0; round < 20; ++round) {
    test::child_process child({CRASH_APPENDER_PATH, data, "r" + std::to_string(round)}, dir / "appender");
    const bool from_first_ack = round % 2 == 0;
    if (from_first_ack) {
      ASSERT_TRUE(first_ack_printed(child, std::chrono::seconds(60))) << "round " << round << ": " << child.err();
    }
    int wait_ms = delay_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    child.signal(SIGKILL);
    ASSERT_EQ(test::exit_code(child.wait()), -1000 - SIGKILL) << child.err();

    auto store = events::event_store::open(data);
    auto report = store->verify();
    ASSERT_TRUE(report.ok) << "round " << round << ": " << report.reason;
    EXPECT_EQ(report.events_checked, store->last_seq());
    std::istringstream acks(child.out());
    std::string command_id;
    uint64_t seq = 0, acked = 0;
    while (acks >> command_id >> seq) {
      auto found = store->find_command(command_id);
      ASSERT_TRUE(found) << "round " << round << ": acknowledged " << command_id << " is missing";
      ASSERT_EQ(found->first_seq, seq) << command_id;
      auto raw = baton::test::raw_event(*store, seq);
      ASSERT_TRUE(raw);
      EXPECT_EQ(events::decode(*raw)->command_id, command_id);
      ++acked;
    }
    total_acked += acked;
    RecordProperty("round_" + std::to_string(round), std::to_string(acked) + " acks after " + std::to_string(wait_ms) + " ms" +
                                                         (from_first_ack ? " from the first ack" : " from start"));
  }
  EXPECT_GT(total_acked, 0u) << "the appender never got an append acknowledged before the kill";
}
