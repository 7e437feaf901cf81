#pragma once
// Damages a stored log as a disk or an attacker would, for the tests that show it is found:
// one event's stored value overwritten or erased, behind the store's back (no hash chain
// update), and what the store keeps to itself read back. Only tests include this;
// event_store names it a friend.
#include <rocksdb/db.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "events/bytes.hpp"
#include "events/event_store.hpp"

namespace baton::events {

struct store_tampering {
  static rocksdb::ColumnFamilyHandle* events_family(event_store& s) {
    for (auto* cf : s.cf_)
      if (cf->GetName() == "events") return cf;
    throw std::logic_error("the store has no events column family");
  }
  static void put(event_store& s, uint64_t seq, const std::string& value) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (!s.db_->Put(wo, events_family(s), u64be(seq), value).ok()) throw std::runtime_error("cannot overwrite event");
  }
  static std::optional<std::string> raw(const event_store& s, uint64_t seq) { return s.read_raw(seq); }
  static size_t cached_heads(const event_store& s) { return s.heads_.size(); }
  static void erase(event_store& s, uint64_t seq) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (!s.db_->Delete(wo, events_family(s), u64be(seq)).ok()) throw std::runtime_error("cannot erase event");
  }
};

}  // namespace baton::events

namespace baton::test {

// The stored value of event `seq` replaced by `value` (any bytes: a valid encoding of other
// content, or garbage).
inline void overwrite_event(events::event_store& s, uint64_t seq, const std::string& value) {
  events::store_tampering::put(s, seq, value);
}
inline void erase_event(events::event_store& s, uint64_t seq) { events::store_tampering::erase(s, seq); }
// Event `seq` as stored (its encoded bytes), or none.
inline std::optional<std::string> raw_event(const events::event_store& s, uint64_t seq) {
  return events::store_tampering::raw(s, seq);
}
// Stream heads the writer has cached now (bounded by store_options::stream_head_cache_max).
inline size_t cached_stream_heads(const events::event_store& s) { return events::store_tampering::cached_heads(s); }

}  // namespace baton::test
