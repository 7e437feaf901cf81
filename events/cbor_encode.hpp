#pragma once
// JSON value → CBOR, byte for byte what nlohmann::json::to_cbor writes, several times faster.
// Every event's payload is encoded once, on the scheduler's thread for decisions: nlohmann's
// writer goes through a virtual call per byte and copies each object key into a JSON value
// of its own, which made it a tenth of the instructions an assigning poll costs there.
// Byte equality matters: the log's hashes cover the bytes, and readers that take the common
// shapes straight from the bytes (replay/job_payload_cbor) expect exactly that encoding.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace baton::events {

// Appends the encoding of `v` to `out`. Recursive, like nlohmann's: callers hand it values
// batond built or accepted (request bodies are refused past 64 levels of nesting).
void encode_cbor(const nlohmann::json& v, std::string& out);

inline std::string encode_cbor(const nlohmann::json& v) {
  std::string out;
  out.reserve(128);
  encode_cbor(v, out);
  return out;
}

// The pieces, for payloads written straight from typed data (the same bytes encode_cbor
// writes for the JSON value they stand for):
// a head: the major type's base byte (0x00 unsigned, 0x20 negative, 0x40 bytes, 0x60 text,
// 0x80 array, 0xA0 map) with its argument in the fewest bytes;
void encode_cbor_head(uint8_t major, uint64_t n, std::string& out);
// a text string (as a JSON string is written);
void encode_cbor_text(std::string_view s, std::string& out);
// a JSON number_integer (a signed integer), and a number_unsigned.
void encode_cbor_integer(int64_t n, std::string& out);
inline void encode_cbor_unsigned(uint64_t n, std::string& out) { encode_cbor_head(0x00, n, out); }

}  // namespace baton::events
