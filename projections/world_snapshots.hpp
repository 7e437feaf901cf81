#pragma once
// State snapshots: a log-fed projection that keeps its own copy of the scheduler's world (the
// same core::apply over the same durable events) and, every `every` events, writes it to the
// log's snapshot column (core/world/world_snapshot.hpp) with the hash of the event it was taken
// after, keeping the newest `keep`. Start-up then loads the newest one and replays only the
// events after it (replay/recovery/world_recovery.hpp). Its own copy is what keeps the scheduler from
// pausing to encode a large world: polls never wait for a snapshot. The price is a second
// world in memory; `event_log.snapshot_every_events: 0` turns snapshots off.
//
// When the SQL view runs, it already keeps such a world (its rows are drawn from it): the
// snapshots then borrow it (`lent`) instead of applying every event to a third copy. The view
// hands each batch it applied to follow(), on its thread and under its lock; the snapshots
// are written from its world, at the same points and with the same hashes.
#include <memory>
#include <mutex>
#include <string>

#include "core/world/world.hpp"
#include "events/event_store.hpp"
#include "projections/projection.hpp"

namespace baton::projections {

class world_snapshots : public projection {
 public:
  static constexpr const char* projection_name = "world_snapshots";

  // start: the world after event start_seq (hash: that event's hash), as batond recovered it.
  world_snapshots(std::shared_ptr<events::event_store> store, core::world start, uint64_t start_seq, std::string start_hash,
                  uint64_t every, size_t keep);
  // Snapshots of a world another projection keeps (see above), from start_seq on. Not run by
  // a runner of its own: the owner calls follow().
  struct lent_t {};
  static constexpr lent_t lent{};
  world_snapshots(std::shared_ptr<events::event_store> store, lent_t, uint64_t start_seq, std::string start_hash, uint64_t every,
                  size_t keep);
  bool is_lent() const { return lent_; }
  // Lent: the owner has applied `batch` to `w`. Events at or before applied_seq() are passed
  // over (the owner catching up to where the snapshots start); events the owner applied before
  // it began to call are taken as seen (its world holds them). False if the projection failed.
  bool follow(const core::world& w, const std::vector<events::event_envelope>& batch);
  // At a clean stop: one more snapshot if any event was applied since the last. Its own world;
  // lent, the owner's (from the owner, under its lock).
  void write_now();
  void write_now(const core::world& w);
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
  world_snapshots(std::shared_ptr<events::event_store> store, bool lent, core::world own, uint64_t start_seq,
                  std::string start_hash, uint64_t every, size_t keep);
  void write(const core::world& w);  // with m_ held

  std::shared_ptr<events::event_store> store_;
  mutable std::mutex m_;
  const bool lent_ = false;
  core::world world_;                      // its own (not lent)
  const core::world* borrowed_ = nullptr;  // lent: the owner's, during follow()
  uint64_t seq_ = 0, last_snapshot_ = 0;
  std::string hash_;
  uint64_t every_;
  size_t keep_;
};

}  // namespace baton::projections
