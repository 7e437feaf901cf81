#pragma once
// Event payloads are CBOR-encoded JSON values: compact, schema-free at the store level,
// and rendered back to JSON for humans. Each event type versions its own schema.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "events/cbor_decode.hpp"
#include "events/cbor_encode.hpp"

namespace baton::events {

inline std::string to_payload(const nlohmann::json& j) { return encode_cbor(j); }

// Throws a nlohmann::json::exception (parse_error, or out_of_range for absurd sizes) on a
// payload that is not CBOR.
inline nlohmann::json from_payload(std::string_view p) {
  if (p.empty()) return nlohmann::json::object();
  return decode_cbor(p);
}

}  // namespace baton::events
