#pragma once
// The pilot token: what pilot jobs and cloud containers register with. It starts as the
// configured one (BATON_PILOT_TOKEN, else the file batond keeps in its data dir); an admin
// can rotate it without a restart (`POST /pilot-token`), each rotation a `pilot.token_rotated`
// event that records the new token's hash and how long the one it replaced stays valid.
// Only hashes are kept; a token itself is never stored in the log.
#include <string>

#include "core/access/credential.hpp"
#include "core/events/domain.hpp"

namespace baton::core {

inline const std::string pilot_stream = "pilot";

// Where the configured token came from. A token from the environment is the operator's to
// change (a restart with a new value), so batond does not rotate it; one batond keeps in its
// data dir, batond rotates.
struct pilot_configured {
  std::string sha256;             // of the configured token ("" = none)
  bool from_environment = false;  // BATON_PILOT_TOKEN
};

// The one rule for the pilot token: a token from the environment is accepted alone; otherwise
// the rotations the log recorded decide (core::accepts), and before any, the configured one.
bool pilot_accepts(const rotating_secret& recorded, const pilot_configured& configured, const std::string& presented_sha256,
                   time_us now);

// A new pilot token: its hash becomes current, the token in use (the last rotated one, else
// the configured one) stays valid for grace_seconds. Refused for a token from the environment.
decision decide_rotate_pilot_token(const rotating_secret& recorded, const pilot_configured& configured,
                                   const std::string& new_sha256, int64_t grace_seconds, time_us now);

// pilot.token_rotated applied: the recorded secret follows the event alone.
void evolve_pilot_token(rotating_secret& recorded, time_us& rotated_at, const ev::payload& payload, time_us at);

}  // namespace baton::core
