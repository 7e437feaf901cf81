#include "core/event_payload.hpp"

#include "core/assignment_record.hpp"
#include "events/cbor_encode.hpp"

#ifdef BATON_TYPED_EVENT_CHECK
#include <cstdio>
#include <cstdlib>

#include "core/event_types.hpp"
#include "events/bytes.hpp"
#endif

namespace baton::core {

#ifdef BATON_TYPED_EVENT_CHECK
namespace {
// While decide() still builds JSON payloads (issue 59's migration), sanitizer builds hold
// every decided payload to the typed catalogue (core/event_types.hpp): its JSON read as the
// type's struct and the CBOR read back must both write the very bytes the log gets.
void check_typed(const domain_event& e, const std::string& bytes) {
  std::string why;
  try {
    auto typed = ev::from_json(e.type, payload_json(e));
    if (std::holds_alternative<ev::unknown_event>(typed)) why = "not in the catalogue";
    else if (ev::encode(typed) != bytes) why = "typed from JSON writes " + events::to_hex(ev::encode(typed));
    else if (ev::encode(ev::decode(e.type, 1, bytes)) != bytes) why = "typed from CBOR writes " + events::to_hex(ev::encode(ev::decode(e.type, 1, bytes)));
  } catch (const std::exception& x) {
    why = x.what();
  }
  if (why.empty()) return;
  std::fprintf(stderr, "typed event check: %s %s: %s\n  JSON payload %s\n  bytes %s\n", e.stream.c_str(), e.type.c_str(),
               why.c_str(), payload_json(e).dump().c_str(), events::to_hex(bytes).c_str());
  std::abort();
}
}  // namespace
#endif

std::string payload_bytes(const domain_event& e) {
  std::string out;
  out.reserve(256);
  if (e.assigned) events::write_cbor(*e.assigned, out);
  else events::encode_cbor(e.payload, out);
#ifdef BATON_TYPED_EVENT_CHECK
  check_typed(e, out);
#endif
  return out;
}

nlohmann::json payload_json(const domain_event& e) { return e.assigned ? to_json(*e.assigned) : e.payload; }

}  // namespace baton::core
