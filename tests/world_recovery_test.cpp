// Recovery from state snapshots against a real RocksDB: the world recovered from the newest
// snapshot plus the events after it is the world a replay from sequence 1 gives; a snapshot
// whose chain hash is not the log's, or whose bytes are damaged, is skipped for an older one;
// `upto` takes the nearest snapshot at or before it.
#include <gtest/gtest.h>

#include "core/app/decide.hpp"
#include "core/world/world_snapshot.hpp"
#include "replay/audit/rederive.hpp"
#include "replay/recovery/world_recovery.hpp"
#include "support/core_log.hpp"

using namespace baton;
namespace C = core::commands;

namespace {

std::string uuid_of(char kind, size_t n) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08zx-0000-4000-8000-%012zx", n, static_cast<size_t>(kind));
  return buf;
}

// A log written through the core, one decision per append, with the world kept beside it.
struct logged : test::core_log {
  core::time_us now = 1'700'000'000'000'000;

  core::outcome run(core::principal who, core::command cmd) {
    now += 1'000'000;
    return core_log::run(who, std::move(cmd), now);
  }
  // Some work: jobs, a worker taking and finishing them, a recalculation.
  void work(size_t jobs, size_t& next) {
    C::register_worker reg;
    reg.new_id = uuid_of('w', next++);
    reg.gpu_model = "A100";
    reg.credential_sha256 = "00";
    run(core::principal::operator_named("admin"), reg);
    auto me = core::principal::of_worker(reg.new_id);
    for (size_t i = 0; i < jobs; ++i) {
      C::create_job c;
      c.id = uuid_of('j', next++);
      c.title = "t";
      c.input_bundle_path = "/b";
      run(core::principal::operator_named("ann"), c);
    }
    for (size_t i = 0; i + 1 < jobs; ++i) {
      leases.touch(reg.new_id, now);
      auto o = run(me, C::request_job{reg.new_id});
      auto* a = std::get_if<core::results::poll_answer>(&o.answer.value);
      ASSERT_TRUE(a && a->assigned);
      run(me, C::start_job{a->assigned->job_id});
      run(me, C::complete_job{a->assigned->job_id});
    }
    run(core::principal::loop(), C::recalculate_priorities{});
  }
  void snapshot_now() {
    auto head = store->read(store->last_seq(), 1).front();
    store->put_snapshot(core::world_snapshot_name, {head.seq, core::encode_world_snapshot(w, head.hash)});
  }
};

std::string world_bytes(const core::world& w) { return core::encode_world(w); }

}  // namespace

TEST(WorldRecovery, TheNewestSnapshotPlusTheTailIsTheWorldAReplayGives) {
  logged log;
  size_t next = 0;
  log.work(5, next);
  log.snapshot_now();
  const uint64_t first = log.store->last_seq();
  const std::string at_first = world_bytes(log.w);
  log.work(5, next);
  log.snapshot_now();
  const uint64_t second = log.store->last_seq();
  log.work(4, next);

  auto r = replay::recover_world(*log.store);
  EXPECT_EQ(r.snapshot_seq, second);
  EXPECT_EQ(r.last_seq, log.store->last_seq());
  EXPECT_EQ(r.events_applied, log.store->last_seq() - second);
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(world_bytes(r.world), world_bytes(log.w));

  // Up to a point between the snapshots: the first snapshot and the events after it.
  auto between = replay::recover_world(*log.store, first + 3);
  EXPECT_EQ(between.snapshot_seq, first);
  EXPECT_EQ(between.last_seq, first + 3);
  auto exact = replay::recover_world(*log.store, first);
  EXPECT_EQ(exact.events_applied, 0u);
  EXPECT_EQ(world_bytes(exact.world), at_first);
}

TEST(WorldRecovery, ASnapshotThatDoesNotCheckOutIsSkippedForAnOlderOne) {
  logged log;
  size_t next = 0;
  log.work(4, next);
  log.snapshot_now();
  const uint64_t good = log.store->last_seq();
  log.work(4, next);
  // A snapshot claiming another chain: the right world, a wrong hash.
  auto head = log.store->read(log.store->last_seq(), 1).front();
  std::string wrong = head.hash;
  wrong[0] ^= 0x01;
  log.store->put_snapshot(core::world_snapshot_name, {head.seq, core::encode_world_snapshot(log.w, wrong)});
  auto r = replay::recover_world(*log.store);
  EXPECT_EQ(r.snapshot_seq, good);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].find("chain hash"), std::string::npos) << r.skipped[0];
  EXPECT_EQ(world_bytes(r.world), world_bytes(log.w));

  // Damaged bytes: skipped too, and with nothing older, the log is replayed from sequence 1.
  log.store->delete_snapshot(core::world_snapshot_name, good);
  auto bytes = core::encode_world_snapshot(log.w, head.hash);
  log.store->put_snapshot(core::world_snapshot_name, {head.seq, bytes.substr(0, bytes.size() / 2)});
  auto again = replay::recover_world(*log.store);
  EXPECT_EQ(again.snapshot_seq, 0u);
  ASSERT_EQ(again.skipped.size(), 1u);
  EXPECT_EQ(world_bytes(again.world), world_bytes(log.w));
}

TEST(WorldRecovery, TheLastEventAtATimeIsFoundByItsRecordedTime) {
  logged log;
  size_t next = 0;
  log.work(3, next);
  auto e5 = log.store->read(5, 1).front();
  EXPECT_EQ(replay::last_seq_at_or_before(*log.store, e5.recorded_at_us), 5u);
  EXPECT_EQ(replay::last_seq_at_or_before(*log.store, e5.recorded_at_us - 1), 4u);
  EXPECT_EQ(replay::last_seq_at_or_before(*log.store, 0), 0u);
  EXPECT_EQ(replay::last_seq_at_or_before(*log.store, INT64_MAX), log.store->last_seq());
}

// A job payload that does not read stops a replay at its event, after every event before it
// was applied: recovery, and a re-derivation, whose reading thread reads job payloads ahead
// (replay/recovery/prepared_event.hpp) and leaves one it cannot read to the applying thread.
TEST(WorldRecovery, AJobPayloadThatDoesNotReadStopsAReplayAtItsEvent) {
  logged log;
  size_t next = 0;
  log.work(3, next);
  const uint64_t good = log.store->last_seq();
  const std::string job = "job/" + uuid_of('j', 1);  // created and completed by work()
  events::append_command bad;
  bad.stream_id = job;
  bad.recorded_at_us = log.now + 1'000'000;
  bad.events.push_back({"job.assigned", 1, events::to_payload({{"worker_id", 42}, {"decision", nlohmann::json::object()}})});
  for (const auto& r : log.store->append({bad})) ASSERT_TRUE(r.ok());
  log.work(2, next);  // more after it

  uint64_t last_seen = 0;
  auto seen = [&](uint64_t seq) { last_seen = seq; };
  EXPECT_THROW(replay::recover_world(*log.store, 0, seen), baton::events::payload_error);
  EXPECT_EQ(last_seen, good + 1) << "every event before the bad one was applied first";
  auto upto = replay::recover_world(*log.store, good);
  EXPECT_EQ(upto.last_seq, good);

  last_seen = 0;
  EXPECT_THROW(replay::rederive_decisions(*log.store, {}, seen), baton::events::payload_error);
  EXPECT_EQ(last_seen, good + 1);
  auto before = replay::rederive_decisions(*log.store, {1, good});
  EXPECT_EQ(before.mismatches, 0u);
  EXPECT_GT(before.assignments, 0u);
}
