// projections::world_snapshots on a real RocksDB log in a temp dir: with a world of its own,
// and lent another projection's world (the SQL view's), where it must write the same
// snapshots at the same points.
#include "projections/world_snapshots.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "core/jobs/job.hpp"
#include "core/world/world_snapshot.hpp"
#include "events/payload.hpp"
#include "support/commands.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using projections::world_snapshots;

namespace {

// A log of n events: jobs created, some of them assigned (enough to change the world each time).
std::shared_ptr<events::event_store> log_of(const test::temp_dir& dir, int n) {
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  for (int i = 1; i <= n; ++i) {
    const std::string id = "00000000-0000-4000-8000-" + std::string(12 - std::to_string(i).size(), '0') + std::to_string(i);
    auto c = i % 3 == 0 ? test::command(core::job_stream(id), "job.created",
                                        {{"title", "t"}, {"input_bundle_path", "/b"}, {"worker_image_key", "default"}})
                        : test::command("worker/w" + std::to_string(i), "worker.registered", {{"platform", "hpc"}});
    c.recorded_at_us += i;
    store->append({c});
  }
  return store;
}

std::vector<events::event_envelope> events_between(const events::event_store& store, uint64_t from, uint64_t to) {
  return store.read(from, to - from + 1);
}

// The owner's side: applies a batch to its world, as the SQL view does before it lends it.
void owner_applies(core::world& w, const std::vector<events::event_envelope>& batch) {
  for (const auto& e : batch) core::apply(w, e.stream_id, e.type, events::from_payload(e.payload), e.recorded_at_us);
}

// The snapshot at seq must be the owner's world there, with the log's hash of event seq.
void expect_snapshot_of(const events::event_store& store, uint64_t seq, const core::world& w) {
  auto snap = store.snapshot_at_or_before(core::world_snapshot_name, seq);
  ASSERT_TRUE(snap);
  ASSERT_EQ(snap->seq, seq);
  auto decoded = core::decode_world_snapshot(snap->data);
  EXPECT_EQ(decoded.event_hash, store.read(seq, 1).front().hash);
  EXPECT_EQ(core::encode_world(decoded.w), core::encode_world(w));
}

}  // namespace

TEST(WorldSnapshots, LentTheyPassOverTheOwnersCatchUpAndSnapshotItsWorldEveryNEvents) {
  test::temp_dir dir;
  auto store = log_of(dir, 30);
  core::world owner;
  // They start at event 6 (where batond found the log); the owner catches up from 1.
  auto snaps = std::make_shared<world_snapshots>(store, world_snapshots::lent, 6, store->read(6, 1).front().hash, 4, 2);
  EXPECT_TRUE(snaps->is_lent());
  auto batch = events_between(*store, 1, 8);
  owner_applies(owner, batch);
  ASSERT_TRUE(snaps->follow(owner, batch));
  EXPECT_EQ(snaps->applied_seq(), 8u);
  EXPECT_TRUE(store->snapshot_seqs(core::world_snapshot_name).empty()) << "2 events after 6: not yet";

  batch = events_between(*store, 9, 10);
  owner_applies(owner, batch);
  ASSERT_TRUE(snaps->follow(owner, batch));
  EXPECT_EQ(snaps->last_snapshot_seq(), 10u);
  expect_snapshot_of(*store, 10, owner);

  // Events the owner applied before handing them on (it began to lend later): its world holds them.
  owner_applies(owner, events_between(*store, 11, 13));
  batch = events_between(*store, 14, 15);
  owner_applies(owner, batch);
  ASSERT_TRUE(snaps->follow(owner, batch));
  EXPECT_EQ(snaps->applied_seq(), 15u);
  expect_snapshot_of(*store, 15, owner);

  // A batch already seen is passed over; the clean stop's snapshot is the owner's world.
  EXPECT_TRUE(snaps->follow(owner, events_between(*store, 12, 15)));
  batch = events_between(*store, 16, 17);
  owner_applies(owner, batch);
  ASSERT_TRUE(snaps->follow(owner, batch));
  snaps->write_now(owner);
  expect_snapshot_of(*store, 17, owner);
  EXPECT_EQ(store->snapshot_seqs(core::world_snapshot_name), (std::vector<uint64_t>{15, 17})) << "the newest two kept";
  EXPECT_FALSE(snaps->failure());
  EXPECT_THROW(snaps->write_now(), std::logic_error) << "lent: only from the owner's world";
}

TEST(WorldSnapshots, WithAWorldOfTheirOwnTheyWriteTheSameSnapshotsAsLent) {
  test::temp_dir own_dir, lent_dir;
  auto own_store = log_of(own_dir, 20), lent_store = log_of(lent_dir, 20);
  world_snapshots own(own_store, core::world{}, 0, "", 5, 10);
  auto lent = std::make_shared<world_snapshots>(lent_store, world_snapshots::lent, 0, "", 5, 10);
  core::world owner;
  for (uint64_t from = 1; from <= 20; from += 3) {
    const uint64_t to = std::min<uint64_t>(from + 2, 20);
    ASSERT_TRUE(own.apply_batch(events_between(*own_store, from, to)));
    auto batch = events_between(*lent_store, from, to);
    owner_applies(owner, batch);
    ASSERT_TRUE(lent->follow(owner, batch));
  }
  EXPECT_EQ(own_store->snapshot_seqs(core::world_snapshot_name), lent_store->snapshot_seqs(core::world_snapshot_name));
  EXPECT_EQ(own_store->snapshot_seqs(core::world_snapshot_name), (std::vector<uint64_t>{6, 12, 18}));
  for (uint64_t seq : {6, 12, 18})
    EXPECT_EQ(own_store->snapshot_at_or_before(core::world_snapshot_name, seq)->data,
              lent_store->snapshot_at_or_before(core::world_snapshot_name, seq)->data);
  EXPECT_THROW(own.follow(owner, events_between(*own_store, 20, 20)), std::logic_error);
}
