#pragma once
// The world at a point of the log, from the nearest state snapshot: batond's start-up and
// `baton-replay state --at` load the newest snapshot at or before the point whose recorded
// chain hash is the log's hash at its sequence, then apply the events after it (hash chain
// verified from there). A snapshot that does not check out is skipped, with the reason noted,
// and an older one (or sequence 1) is used instead: a snapshot can save time, never change
// the result.
#include <functional>
#include <string>
#include <vector>

#include "core/world/world.hpp"
#include "events/event_store.hpp"
#include "replay/recovery/progress.hpp"

namespace baton::replay {

struct world_recovery {
  core::world world;
  uint64_t snapshot_seq = 0;         // the snapshot used; 0: replayed from sequence 1
  uint64_t events_applied = 0;       // events applied after it
  uint64_t last_seq = 0;             // the last event in the world
  std::vector<std::string> skipped;  // snapshots not used, and why
};

// The world after event `upto` (0: the log's end). Throws events::store_error on a damaged log.
world_recovery recover_world(const events::event_store& store, uint64_t upto = 0, const progress_fn& progress = {});

// The last event recorded at or before `at` (0 when none): a binary search over sequences,
// for a log whose recorded times never go backwards (batond records them monotonic).
uint64_t last_seq_at_or_before(const events::event_store& store, int64_t at_us);

}  // namespace baton::replay
