#pragma once
// Rebuilds in-memory state from the log: start from the newest snapshot of that state
// (if any), then apply every later event in order, checking the hash chain as it goes.
// The same function serves batond's start-up, the replay tool and tests.
#include <functional>
#include <string>

#include "events/event_store.hpp"

namespace baton::replay {

struct recovery_result {
  uint64_t snapshot_seq = 0;     // 0 = started from empty state
  uint64_t events_applied = 0;
  uint64_t last_seq = 0;
};

// restore is called once with the snapshot if one exists; apply once per later event.
// Throws events::store_error (with the offending sequence) on a gap or broken chain.
recovery_result recover(const events::event_store& store, const std::string& snapshot_name,
                        const std::function<void(const events::snapshot&)>& restore,
                        const std::function<void(const events::event_view&)>& apply);

}  // namespace baton::replay
