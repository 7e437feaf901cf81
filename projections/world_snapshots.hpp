#pragma once
// State snapshots: a log-fed projection that keeps its own copy of the scheduler's world (the
// same core::apply over the same durable events) and, every `every` events, writes it to the
// log's snapshot column (core/world_snapshot.hpp) with the hash of the event it was taken
// after, keeping the newest `keep`. Start-up then loads the newest one and replays only the
// events after it (replay/world_recovery.hpp). Its own copy is what keeps the scheduler from
// pausing to encode a large world: polls never wait for a snapshot. The price is a second
// world in memory, unless another projection already keeps one (the SQL view): then it
// snapshots that world, read under its lock, at the sequence that world is at, and applies
// nothing itself (it was 14 % of batond's CPU under a stress load of assigning polls).
// `event_log.snapshot_every_events: 0` turns snapshots off.
#include <functional>
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
  // A world kept by another projection: source(f) calls f(world, seq, hash) with it, under
  // that projection's lock. start_seq: the last snapshot batond wrote or found.
  using world_reader = std::function<void(const core::world&, uint64_t, const std::string&)>;
  using world_source = std::function<void(const world_reader&)>;
  world_snapshots(std::shared_ptr<events::event_store> store, world_source source, uint64_t start_seq, uint64_t every,
                  size_t keep);
  // At a clean stop: one more snapshot if any event was applied since the last.
  void write_now();
  uint64_t last_snapshot_seq() const;
  // Deletes all but the newest `keep` world snapshots.
  static void keep_newest(events::event_store& store, size_t keep);

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  void write();  // with m_ held
  void write(const core::world& w, uint64_t seq, const std::string& hash);  // with m_ held
  void write_from_source();  // with m_ held

  std::shared_ptr<events::event_store> store_;
  mutable std::mutex m_;
  core::world world_;  // its own, when it has no source
  world_source source_;
  uint64_t seq_ = 0, last_snapshot_ = 0;
  uint64_t last_attempt_ = 0;  // with a source: the log's sequence when it last wrote (or tried)
  std::string hash_;
  uint64_t every_;
  size_t keep_;
};

}  // namespace baton::projections
