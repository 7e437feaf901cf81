#pragma once
// JSON value → CBOR, byte for byte what nlohmann::json::to_cbor writes, several times faster.
// Every event's payload is encoded once, on the scheduler's thread for decisions: nlohmann's
// writer goes through a virtual call per byte and copies each object key into a JSON value
// of its own, which made it a tenth of the instructions an assigning poll costs there.
// Byte equality matters: the log's hashes cover the bytes, and readers that take the common
// shapes straight from the bytes (events/described.hpp) expect exactly that encoding.
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
void encode_cbor_head_wide(uint8_t major, uint64_t n, std::string& out);  // (n > 23)
inline void encode_cbor_head(uint8_t major, uint64_t n, std::string& out) {
  if (n <= 0x17)
    out.push_back(static_cast<char>(major + n));
  else
    encode_cbor_head_wide(major, n, out);
}
// a text string (as a JSON string is written);
inline void encode_cbor_text(std::string_view s, std::string& out) {
  encode_cbor_head(0x60, s.size(), out);
  out.append(s);
}
// a JSON number_integer (a signed integer), a number_unsigned;
void encode_cbor_integer(int64_t n, std::string& out);
inline void encode_cbor_unsigned(uint64_t n, std::string& out) { encode_cbor_head(0x00, n, out); }
// a JSON number_float.
void encode_cbor_float(double d, std::string& out);

}  // namespace baton::events
