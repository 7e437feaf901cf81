#include "replay/recover.hpp"

#include <gtest/gtest.h>

#include <map>

#include "events/payload.hpp"
#include "support/commands.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using test::command;

namespace {

// A toy state: sum of "n" per stream, serialised as JSON for snapshots.
using sums = std::map<std::string, int64_t>;

sums replay_sums(const events::event_store& store, replay::recovery_result* out = nullptr) {
  sums s;
  auto r = replay::recover(
      store, "sums",
      [&](const events::snapshot& snap) { s = nlohmann::json::parse(snap.data).get<sums>(); },
      [&](const events::event_view& e) { s[std::string(e.stream_id)] += events::from_payload(e.payload)["n"].get<int64_t>(); });
  if (out) *out = r;
  return s;
}

}  // namespace

TEST(Recover, SnapshotPlusTailEqualsFullReplay) {
  test::temp_dir dir;
  auto store = events::event_store::open(dir.path());
  for (int i = 1; i <= 100; ++i) store->append({command("s" + std::to_string(i % 4), "add", {{"n", i}})});
  replay::recovery_result r;
  auto full = replay_sums(*store, &r);
  EXPECT_EQ(r.snapshot_seq, 0u);
  EXPECT_EQ(r.events_applied, 100u);

  store->put_snapshot("sums", {100, nlohmann::json(full).dump()});
  for (int i = 101; i <= 130; ++i) store->append({command("s" + std::to_string(i % 4), "add", {{"n", i}})});
  auto with_snapshot = replay_sums(*store, &r);
  EXPECT_EQ(r.snapshot_seq, 100u);
  EXPECT_EQ(r.events_applied, 30u);
  EXPECT_EQ(r.last_seq, 130u);

  store->put_snapshot("sums", {0, "{}"});  // older snapshot does not win
  auto snap = store->latest_snapshot("sums");
  EXPECT_EQ(snap->seq, 100u);
  int64_t total = 0;
  for (auto& [k, v] : with_snapshot) total += v;
  EXPECT_EQ(total, 130 * 131 / 2);
}

TEST(Recover, RefusesASnapshotNewerThanTheLog) {
  test::temp_dir dir;
  auto store = events::event_store::open(dir.path());
  store->append({command("s", "add", {{"n", 1}})});
  store->put_snapshot("sums", {5, "{}"});
  EXPECT_THROW(replay_sums(*store), events::store_error);
}

TEST(Recover, StopsAtATamperedEventAfterTheSnapshot) {
  test::temp_dir dir;
  auto store = events::event_store::open(dir.path());
  for (int i = 1; i <= 10; ++i) store->append({command("s", "add", {{"n", i}})});
  store->put_snapshot("sums", {4, "{\"s\":10}"});
  auto raw = *store->read_raw(7);
  raw[raw.size() - 40] ^= 0x20;
  store->overwrite_raw_for_test(7, raw);
  try {
    replay_sums(*store);
    FAIL() << "tampering not detected";
  } catch (const events::store_error& e) {
    EXPECT_EQ(e.seq(), 7u) << e.what();
  }
}
