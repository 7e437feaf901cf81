// Fuzz target: stored log values. Input: records, each a 2-byte little-endian
// length and that many bytes of a stored event. Each is decoded; one that
// decodes must re-encode to the same bytes, render to JSON as batond --dump
// does, and be applied to a world as start-up replay applies it (evolve may
// refuse a payload with an exception; it may not crash).
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/world/world.hpp"
#include "events/envelope.hpp"
#include "events/payload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  baton::core::world w;
  while (in.size() >= 2) {
    size_t n = static_cast<uint8_t>(in[0]) | static_cast<size_t>(static_cast<uint8_t>(in[1])) << 8;
    in.remove_prefix(2);
    auto stored = in.substr(0, n);
    in.remove_prefix(stored.size());
    auto v = baton::events::decode(stored);
    if (!v) continue;
    auto env = v->to_envelope();
    if (baton::events::encode_body(env) != v->body) std::abort();  // decode and encode disagree
    (void)baton::events::to_json(env).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    nlohmann::json payload;
    try {
      payload = baton::events::from_payload(env.payload);
    } catch (const nlohmann::json::exception&) {
      continue;  // replay reports an undecodable payload by its sequence
    }
    try {
      baton::core::apply(w, env.stream_id, env.type, payload, env.recorded_at_us);
    } catch (const std::exception&) {
      // a payload evolve cannot use: recovery stops and names the sequence
    }
  }
  return 0;
}
