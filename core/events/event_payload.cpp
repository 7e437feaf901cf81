#include "core/events/event_payload.hpp"

namespace baton::core {

std::string payload_bytes(const domain_event& e) {
  std::string out;
  out.reserve(256);
  ev::encode(e.payload, out);
  return out;
}

nlohmann::json payload_json(const domain_event& e) { return ev::to_json(e.payload); }

}  // namespace baton::core
