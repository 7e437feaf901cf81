#include "events/cbor_decode.hpp"

#include "events/cbor_cursor.hpp"

namespace baton::events {

bool decode_common_cbor(std::string_view bytes, nlohmann::json& out) {
  cbor_cursor c(bytes);
  return c.item(out) && c.at_end();
}

nlohmann::json decode_cbor(std::string_view bytes) {
  nlohmann::json out;
  if (decode_common_cbor(bytes, out)) return out;
  return nlohmann::json::from_cbor(bytes.begin(), bytes.end());
}

}  // namespace baton::events
