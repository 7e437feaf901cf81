#include "replay/recover.hpp"

namespace baton::replay {

recovery_result recover(const events::event_store& store, const std::string& snapshot_name,
                        const std::function<void(const events::snapshot&)>& restore,
                        const std::function<void(const events::event_view&)>& apply) {
  recovery_result r;
  if (auto snap = store.latest_snapshot(snapshot_name)) {
    // A snapshot newer than the log means events it saw are gone: refuse rather than guess.
    if (snap->seq > store.last_seq())
      throw events::store_error("snapshot '" + snapshot_name + "' is at event " + std::to_string(snap->seq) +
                                    " but the log ends at " + std::to_string(store.last_seq()),
                                store.last_seq() + 1);
    restore(*snap);
    r.snapshot_seq = snap->seq;
  }
  store.scan(r.snapshot_seq + 1, 0, true, [&](const events::event_view& v) {
    apply(v);
    ++r.events_applied;
    r.last_seq = v.seq;
    return true;
  });
  if (r.events_applied == 0) r.last_seq = r.snapshot_seq;
  return r;
}

}  // namespace baton::replay
