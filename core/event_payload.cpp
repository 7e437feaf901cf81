#include "core/event_payload.hpp"

#include "core/assignment_record.hpp"
#include "events/cbor_encode.hpp"

namespace baton::core {

std::string payload_bytes(const domain_event& e) {
  std::string out;
  out.reserve(256);
  if (e.assigned) encode_cbor(*e.assigned, out);
  else events::encode_cbor(e.payload, out);
  return out;
}

nlohmann::json payload_json(const domain_event& e) { return e.assigned ? to_json(*e.assigned) : e.payload; }

}  // namespace baton::core
