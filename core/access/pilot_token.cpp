#include "core/access/pilot_token.hpp"

#include "core/access/access.hpp"

namespace baton::core {

bool pilot_accepts(const rotating_secret& recorded, const pilot_configured& configured, const std::string& presented,
                   time_us now) {
  if (presented.empty()) return false;
  if (configured.from_environment || recorded.sha256.empty())
    return !configured.sha256.empty() && constant_time_equal(configured.sha256, presented);
  return accepts(recorded, presented, now);
}

decision decide_rotate_pilot_token(const rotating_secret& recorded, const pilot_configured& configured,
                                   const std::string& new_sha256, int64_t grace_seconds, time_us now) {
  if (configured.from_environment)
    return decision::refuse({error_kind::conflict, "pilot_token_from_environment",
                             "the pilot token is set by BATON_PILOT_TOKEN: change it there and restart batond",
                             nlohmann::json::object(), ""});
  const std::string& in_use = recorded.sha256.empty() ? configured.sha256 : recorded.sha256;
  return decision::of(pilot_stream, ev::pilot_token_rotated{grace_seconds, in_use, now + grace_seconds * 1'000'000, new_sha256});
}

void evolve_pilot_token(rotating_secret& recorded, time_us& rotated_at, const ev::payload& payload, time_us at) {
  const auto* p = std::get_if<ev::pilot_token_rotated>(&payload);
  if (!p) return;
  recorded.sha256 = p->token_sha256;
  recorded.previous_sha256 = p->previous_sha256;
  recorded.previous_valid_until = p->previous_valid_until_us;
  rotated_at = at;
}

}  // namespace baton::core
