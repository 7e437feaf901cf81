#include "core/pilot_token.hpp"
#include "core/payload_numbers.hpp"

#include "core/access.hpp"

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
  decision d;
  d.events.push_back({pilot_stream, "pilot.token_rotated",
                      {{"token_sha256", new_sha256},
                       {"previous_sha256", in_use},
                       {"grace_seconds", grace_seconds},
                       {"previous_valid_until_us", now + grace_seconds * 1'000'000}}});
  return d;
}

void evolve_pilot_token(rotating_secret& recorded, time_us& rotated_at, const std::string& type,
                        const nlohmann::json& p, time_us at) {
  if (type != "pilot.token_rotated") return;
  recorded.sha256 = p.value("token_sha256", "");
  recorded.previous_sha256 = p.value("previous_sha256", "");
  recorded.previous_valid_until = number_or(p, "previous_valid_until_us", time_us{0});
  rotated_at = at;
}

}  // namespace baton::core
