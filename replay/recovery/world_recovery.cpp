#include "replay/recovery/world_recovery.hpp"

#include "core/util/hex.hpp"
#include "core/world/world_snapshot.hpp"
#include "events/scan_ahead.hpp"
#include "replay/recovery/prepared_event.hpp"

namespace baton::replay {

namespace {

// The snapshot's world if its recorded hash is the log's at its sequence; else why not.
std::optional<core::world> usable(const events::event_store& store, const events::snapshot& snap, std::string& why) {
  try {
    auto decoded = core::decode_world_snapshot(snap.data);
    const auto& hash = decoded.event_hash;
    auto at = store.read(snap.seq, 1);
    if (at.empty() || at.front().seq != snap.seq) {
      why = "the log has no event " + std::to_string(snap.seq);
      return std::nullopt;
    }
    if (at.front().hash != hash) {
      why = "its chain hash " + util::to_hex(hash) + " is not the log's " + util::to_hex(at.front().hash);
      return std::nullopt;
    }
    return std::move(decoded.w);
  } catch (const std::exception& e) {
    why = e.what();
    return std::nullopt;
  }
}

}  // namespace

world_recovery recover_world(const events::event_store& store, uint64_t upto, const progress_fn& progress) {
  world_recovery r;
  const uint64_t end = upto ? std::min(upto, store.last_seq()) : store.last_seq();
  // One beyond the log's end saw events the log no longer has (a truncated tail): never used.
  if (auto newest = store.latest_snapshot(core::world_snapshot_name); newest && newest->seq > store.last_seq())
    r.skipped.push_back("snapshot at event " + std::to_string(newest->seq) + " is beyond the log's end (event " +
                        std::to_string(store.last_seq()) + "): events it saw are gone");
  for (uint64_t before = end; before > 0;) {
    auto snap = store.snapshot_at_or_before(core::world_snapshot_name, before);
    if (!snap) break;
    std::string why;
    if (auto w = usable(store, *snap, why)) {
      r.world = std::move(*w);
      r.snapshot_seq = snap->seq;
      break;
    }
    r.skipped.push_back("snapshot at event " + std::to_string(snap->seq) + ": " + why);
    before = snap->seq - 1;
  }
  r.last_seq = r.snapshot_seq;
  if (end > r.snapshot_seq)
    events::scan_decoded(
        store, r.snapshot_seq + 1, end, true,
        [&](events::decoded_event& e) {
          if (progress) progress(e.seq);
          apply_decoded(r.world, e);
          ++r.events_applied;
          r.last_seq = e.seq;
          return true;
        },
        prepare_typed_event);  // (each payload read as its struct on the reading thread, no JSON tree)
  return r;
}

uint64_t last_seq_at_or_before(const events::event_store& store, int64_t at_us) {
  uint64_t lo = 0, hi = store.last_seq();  // answer in [lo, hi]
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo + 1) / 2;
    auto e = store.read(mid, 1);
    if (!e.empty() && e.front().recorded_at_us <= at_us)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace baton::replay
