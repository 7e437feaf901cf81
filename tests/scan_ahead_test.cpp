// events::scan_decoded: the log read and decoded on a second thread, visited in order on the
// caller's, with the plain scan's errors at the same place.
#include "events/scan_ahead.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <thread>

#include "events/envelope.hpp"
#include "support/store_tampering.hpp"
#include "support/commands.hpp"
#include "support/temp_dir.hpp"

using namespace baton::events;
using baton::test::command;
using baton::test::temp_dir;

namespace {

// More events than the reader may hold ahead (it must wait for the visitor, and recycle).
constexpr int many = 20'000;

std::unique_ptr<event_store> log_of(const temp_dir& dir, int n) {
  auto store = event_store::open(dir.path());
  std::vector<append_command> batch;
  for (int i = 1; i <= n; ++i) {
    // (Stream ids and types of two lengths each: a recycled batch's strings are overwritten in
    // place when the length repeats, assigned when it changes.)
    batch.push_back(command("job/" + std::to_string(i % 13), "t" + std::to_string(i % 11), {{"i", i}}));
    if (batch.size() == 1000 || i == n) {
      store->append(batch);
      batch.clear();
    }
  }
  return store;
}

}  // namespace

TEST(ScanAhead, VisitsEveryEventInOrderWithItsPayloadDecoded) {
  temp_dir dir;
  auto store = log_of(dir, many);
  uint64_t expected = 1;
  scan_decoded(*store, 1, 0, true, [&](decoded_event& e) {
    EXPECT_EQ(e.seq, expected);
    EXPECT_EQ(e.payload.at("i").get<int>(), static_cast<int>(expected));
    EXPECT_EQ(e.stream_id, "job/" + std::to_string(expected % 13));
    EXPECT_EQ(e.type, "t" + std::to_string(expected % 11));
    EXPECT_EQ(e.recorded_at_us, 1'700'000'000'000'000);
    ++expected;
    return true;
  });
  EXPECT_EQ(expected, static_cast<uint64_t>(many) + 1);

  // A range: from its first to its last, checked from the middle of the chain.
  std::vector<uint64_t> seen;
  scan_decoded(*store, 9'000, 9'002, true, [&](decoded_event& e) {
    seen.push_back(e.seq);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<uint64_t>{9'000, 9'001, 9'002}));
}

TEST(ScanAhead, PrepareRunsOnTheReadingThreadAndItsResultArrivesWithTheEvent) {
  temp_dir dir;
  auto store = log_of(dir, many);
  const auto visitor = std::this_thread::get_id();
  uint64_t expected = 1, prepared_here = 0, deferred = 0;
  scan_decoded(
      *store, 1, 0, true,
      [&](decoded_event& e) {
        auto* p = std::any_cast<std::pair<uint64_t, int>>(&e.prepared);
        if (e.seq % 5 == 0) {
          EXPECT_FALSE(e.prepared.has_value()) << "left empty by prepare";
          EXPECT_FALSE(e.payload_deferred);
          EXPECT_EQ(e.payload.at("i").get<uint64_t>(), e.seq) << "decoded as without prepare";
        } else {
          EXPECT_NE(p, nullptr);
          if (p) {
            EXPECT_EQ(*p, std::make_pair(e.seq, static_cast<int>(e.seq) * 2)) << "made from the payload's bytes";
          }
          if (e.seq % 5 == 1) {  // taken from its bytes: not decoded, until asked for
            ++deferred;
            EXPECT_TRUE(e.payload_deferred);
            EXPECT_TRUE(e.payload.is_null());
            EXPECT_EQ(payload_of(e).at("i").get<uint64_t>(), e.seq);
            EXPECT_FALSE(e.payload_deferred);
            EXPECT_EQ(e.payload.at("i").get<uint64_t>(), e.seq);
          } else {
            EXPECT_FALSE(e.payload_deferred);
            EXPECT_EQ(payload_of(e).at("i").get<uint64_t>(), e.seq);
          }
        }
        EXPECT_EQ(e.seq, expected++);
        return true;
      },
      [&](decoded_event& e, std::string_view cbor) {
        if (std::this_thread::get_id() == visitor) ++prepared_here;
        if (e.seq % 5 == 0) return false;
        e.prepared = std::make_pair(e.seq, from_payload(cbor).at("i").get<int>() * 2);
        return e.seq % 5 == 1;
      });
  EXPECT_EQ(expected, static_cast<uint64_t>(many) + 1);
  EXPECT_EQ(prepared_here, 0u) << "prepare ran on the visiting thread";
  EXPECT_EQ(deferred, static_cast<uint64_t>(many + 4) / 5);
}

TEST(ScanAhead, AnAlteredEventIsThrownAfterEveryEventBeforeItWasVisited) {
  temp_dir dir;
  auto store = log_of(dir, many);
  const uint64_t bad = 12'345;
  auto raw = *baton::test::raw_event(*store, bad);
  auto view = *decode(raw);
  raw[static_cast<size_t>(view.payload.data() - raw.data()) + view.payload.size() - 1] ^= 0x01;
  baton::test::overwrite_event(*store, bad, raw);
  uint64_t last = 0;
  try {
    scan_decoded(*store, 1, 0, true, [&](decoded_event& e) {
      last = e.seq;
      return true;
    });
    FAIL() << "the altered event was not reported";
  } catch (const store_error& e) {
    EXPECT_EQ(e.seq(), bad);
  }
  EXPECT_EQ(last, bad - 1);

  // Unchecked, the same scan goes through (the payload still decodes).
  last = 0;
  scan_decoded(*store, 1, 0, false, [&](decoded_event& e) {
    last = e.seq;
    return true;
  });
  EXPECT_EQ(last, static_cast<uint64_t>(many));
}

TEST(ScanAhead, APayloadThatIsNotCborIsThrownAtItsEvent) {
  temp_dir dir;
  auto store = log_of(dir, 3'000);
  auto c = command("job/x", "t");
  c.events[0].payload = std::string("\xff\xfe not cbor", 11);
  store->append({c});
  store->append({command("job/y", "t")});
  uint64_t last = 0;
  EXPECT_THROW(scan_decoded(*store, 1, 0, true,
                            [&](decoded_event& e) {
                              last = e.seq;
                              return true;
                            }),
               nlohmann::json::parse_error);
  EXPECT_EQ(last, 3'000u);
}

TEST(ScanAhead, TheVisitorStopsItEarlyOrByThrowing) {
  temp_dir dir;
  auto store = log_of(dir, many);
  uint64_t visited = 0;
  scan_decoded(*store, 1, 0, true, [&](decoded_event&) { return ++visited < 100; });
  EXPECT_EQ(visited, 100u);  // and the reader, blocked far ahead, was stopped and joined

  visited = 0;
  EXPECT_THROW(scan_decoded(*store, 1, 0, true,
                            [&](decoded_event& e) {
                              ++visited;
                              if (e.seq == 500) throw std::runtime_error("visitor gave up");
                              return true;
                            }),
               std::runtime_error);
  EXPECT_EQ(visited, 500u);

  // An empty range visits nothing.
  visited = 0;
  scan_decoded(*store, many + 1, 0, true, [&](decoded_event&) { return ++visited, true; });
  EXPECT_EQ(visited, 0u);
}

// The look-ahead hints (what a replay prefetches by): each event shown to each stage in
// stage order, before it is visited and never after, ahead by at most the stage's lead; and
// all but a batch's first few events shown to every stage.
TEST(ScanAhead, ShowsEachEventToEveryHintStageBeforeItIsVisited) {
  temp_dir dir;
  auto store = log_of(dir, many);
  const std::vector<size_t> leads{12, 5, 2};
  std::map<uint64_t, std::vector<size_t>> stages_seen;  // seq -> the stages it was shown to, in order
  uint64_t visited = 0;
  look_ahead ahead{leads, [&](const decoded_event& e, size_t stage) {
                     ASSERT_LT(stage, leads.size());
                     EXPECT_GT(e.seq, visited) << "a hint for an event already visited";
                     EXPECT_LE(e.seq, visited + 1 + leads[stage]) << "a hint further ahead than its stage's lead";
                     EXPECT_EQ(e.payload.at("i").get<uint64_t>(), e.seq) << "shown whole, as it will be visited";
                     stages_seen[e.seq].push_back(stage);
                   }};
  size_t shown_every_stage = 0;
  scan_decoded(
      *store, 1, 0, true,
      [&](decoded_event& e) {
        visited = e.seq;
        auto it = stages_seen.find(e.seq);
        if (it != stages_seen.end()) {
          EXPECT_TRUE(std::is_sorted(it->second.begin(), it->second.end())) << e.seq;
          if (it->second == std::vector<size_t>{0, 1, 2}) ++shown_every_stage;
          stages_seen.erase(it);
        }
        return true;
      },
      nullptr, &ahead);
  EXPECT_EQ(visited, static_cast<uint64_t>(many));
  EXPECT_TRUE(stages_seen.empty()) << "a hint for an event never visited";
  EXPECT_GT(shown_every_stage, static_cast<size_t>(many) * 9 / 10);
}
