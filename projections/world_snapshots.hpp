#pragma once
// State snapshots: a log-fed projection that keeps its own copy of the scheduler's world (the
// same core::apply over the same durable events) and, every `every` events, writes it to the
// log's snapshot column (core/world_snapshot.hpp) with the hash of the event it was taken
// after, keeping the newest `keep`. Start-up then loads the newest one and replays only the
// events after it (replay/world_recovery.hpp). Its own copy is what keeps the scheduler from
// pausing to encode a large world: polls never wait for a snapshot. The price is a second
// world in memory; `event_log.snapshot_every_events: 0` turns snapshots off.
#include <memory>
#include <mutex>
#include <string>

#include "core/world.hpp"
#include "events/event_store.hpp"
#include "projections/projection.hpp"

namespace baton::projections {

class world_snapshots : public projection {
 public:
  static constexpr const char* projection_name = "world_snapshots";

  // start: the world after event start_seq (hash: that event's hash), as batond recovered it.
  world_snapshots(std::shared_ptr<events::event_store> store, core::world start, uint64_t start_seq,
                  std::string start_hash, uint64_t every, size_t keep);
  // At a clean stop: one more snapshot if any event was applied since the last.
  void write_now();
  uint64_t last_snapshot_seq() const;
  // Deletes all but the newest `keep` world snapshots.
  static void keep_newest(events::event_store& store, size_t keep);
  // Writes a world snapshot and keeps the newest `keep`, never holding more than `keep` at any
  // moment when keep > 1 (the older ones go first), so a kill between the writes leaves the
  // bound kept.
  static void put_keeping(events::event_store& store, const events::snapshot& s, size_t keep);

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  void write();  // with m_ held

  std::shared_ptr<events::event_store> store_;
  mutable std::mutex m_;
  core::world world_;
  uint64_t seq_ = 0, last_snapshot_ = 0;
  std::string hash_;
  uint64_t every_;
  size_t keep_;
};

}  // namespace baton::projections
