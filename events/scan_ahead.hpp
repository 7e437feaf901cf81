#pragma once
// A scan of the log whose reading, hash checking and payload decoding run on a second thread,
// ahead of the caller: a replay that applies every event (re-derivation, recovery) spends a
// third to a half of its time there, and the second core is otherwise idle.
#include <any>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "events/event_store.hpp"

namespace baton::events {

// An event as decoded ahead of its use: it owns its strings and its payload.
struct decoded_event {
  uint64_t seq = 0;
  std::string stream_id, type;
  uint32_t schema_version = 1;
  int64_t recorded_at_us = 0;
  // The payload, decoded (from_payload); unless the scan's `prepare` read it from its bytes
  // itself: then it is null and `cbor` keeps the bytes, for payload_of.
  nlohmann::json payload;
  std::string cbor;
  bool payload_deferred = false;
  // What the scan's `prepare` made of it on the reading thread (empty without one).
  std::any prepared;
  // Where `prepared` keeps its value, when `prepare` says so (prepared_memory): the reader
  // loads it a few places before it writes this place over. By then the visiting thread has
  // used it on the other core, and freeing it cold stalled the reader on every line it read.
  const void* prepared_at = nullptr;
  size_t prepared_size = 0;
};

// For `prepare`: the memory that holds what it made of the event (see prepared_at).
template <class T>
void prepared_memory(decoded_event& e, const T& value) {
  e.prepared_at = &value;
  e.prepared_size = sizeof(T);
}

// Optional hints to the visiting thread's memory: before visiting an event, the scan shows
// `hint` the events leads[0], leads[1], ... places further on (those already handed over),
// each with its stage (the lead's index). A replay prefetches there what those events will
// touch, in stages, so each stage finds the last one's loads in the cache. A hint must not
// change what the visitor reads: it runs between visits, on the visiting thread.
struct look_ahead {
  std::vector<size_t> leads;  // decreasing: stage 0 sees each event first
  std::function<void(const decoded_event& upcoming, size_t stage)> hint;
};

// The event's payload, decoded here first if `prepare` left it as bytes.
const nlohmann::json& payload_of(decoded_event& e);

// Visits events from_seq..to_seq (0 = to the end) in order on the calling thread, like
// event_store::scan, with each payload decoded (from_payload). Whatever stops the reading (a
// gap, a failed hash check, a payload that is not CBOR) is thrown here, after every event
// before it was visited, as the plain scan would. Return false from visit to stop early; an
// exception from visit stops the reader before it propagates.
// `prepare`, if given, runs on the reading thread for each event, with its payload's bytes,
// before the payload is decoded: work that depends on the event alone (reading its payload
// into a typed change) moves off the visiting thread, which bounds a replay. It returns true
// when it read what the visitor needs from the bytes itself: the payload is then not decoded
// (building and freeing its JSON tree is most of the reading thread's work), which it may
// claim only for bytes that decode. False: the payload is decoded as without it. It must not
// throw (leave `prepared` empty and answer false instead, so the visitor takes the ordinary
// path and meets the same error there).
void scan_decoded(const event_store& store, uint64_t from_seq, uint64_t to_seq, bool verify_chain,
                  const std::function<bool(decoded_event&)>& visit,
                  const std::function<bool(decoded_event&, std::string_view cbor)>& prepare = nullptr,
                  const look_ahead* ahead = nullptr);

}  // namespace baton::events
