#pragma once
// The event envelope: what every entry of the log carries, its compact binary
// encoding, and a JSON rendering for humans.
//
// Binary layout (format 1), each string/bytes field a varint length + bytes:
//   u8 format | varint seq | str stream_id | varint stream_version | str type
//   | varint schema_version | zigzag-varint recorded_at_us | str correlation_id
//   | str causation_id | str actor | str command_id | bytes payload | 32-byte hash
// hash = SHA-256(previous event's hash ‖ every byte before the hash), which chains
// the log: changing any stored byte breaks this event's hash or the next one's.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::events {

constexpr uint8_t envelope_format = 1;

struct event_envelope {
  uint64_t seq = 0;             // global sequence, gap-free from 1
  std::string stream_id;        // "job/<id>", "worker/<id>", "cluster/<name>", "daemon"
  uint64_t stream_version = 0;  // 1-based position within the stream
  std::string type;             // e.g. "job.created"
  uint32_t schema_version = 1;  // version of this type's payload schema
  int64_t recorded_at_us = 0;   // decision time (µs since the Unix epoch), an input, never read from a clock here
  std::string correlation_id;   // the request or loop iteration this belongs to
  std::string causation_id;     // the command or event that caused it
  std::string actor;            // "worker:<id>", "operator:<name>", "loop:<name>", "daemon"
  std::string command_id;       // idempotency key of the command that appended it ("" = none)
  std::string payload;          // CBOR (see payload.hpp)
  std::string hash;             // 32 raw bytes, see above
};

// Non-owning view of a stored event; valid while the buffer it was decoded from lives.
// Replay decodes into views so it allocates nothing per event.
struct event_view {
  uint64_t seq = 0;
  std::string_view stream_id;
  uint64_t stream_version = 0;
  std::string_view type;
  uint32_t schema_version = 1;
  int64_t recorded_at_us = 0;
  std::string_view correlation_id, causation_id, actor, command_id, payload;
  std::string_view body;  // every byte the hash covers
  std::string_view hash;

  event_envelope to_envelope() const;
};

// A view of an envelope's fields, valid while the envelope lives (body is empty: an envelope
// keeps no encoded bytes).
event_view view_of(const event_envelope& e);

// Encodes everything but the hash (the bytes the hash covers).
std::string encode_body(const event_envelope& e);
// Encodes body + hash; e.hash must already be set.
std::string encode(const event_envelope& e);
// Decodes a stored value. Returns nullopt if it is truncated or malformed.
std::optional<event_view> decode(std::string_view stored);
// Hash of an event body given the hash of the event before it ("" before seq 1).
std::string chain_hash(std::string_view previous_hash, std::string_view body);
// Whether `hash` is that hash (computed without allocating: a scan checks every event).
bool chain_hash_matches(std::string_view previous_hash, std::string_view body, std::string_view hash);

// Human rendering: every field, recorded_at as ISO-8601 UTC (util::format_time_us), payload
// decoded from CBOR (or as hex if it is not valid CBOR), hash as hex.
nlohmann::json to_json(const event_envelope& e);

}  // namespace baton::events
