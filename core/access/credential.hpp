#pragma once
// A credential that can be rotated without downtime: its current hash, and the hash it
// replaced, still accepted until a deadline so that requests already on their way (a
// worker's heartbeat, a script between two calls) keep working while the holder switches.
// Only SHA-256 hashes are kept; a token itself is never stored or logged.
#include <string>

#include "core/events/domain.hpp"

namespace baton::core {

struct rotating_secret {
  std::string sha256;                // the current token's hash ("" = none: nothing is accepted)
  std::string previous_sha256;       // the token it replaced
  time_us previous_valid_until = 0;  // accepted while now < this
};

// The one rule for every rotating credential (named operators, workers, the pilot token):
// the current hash, or the previous one before its deadline (constant-time compares).
bool accepts(const rotating_secret& s, const std::string& presented_sha256, time_us now);

// The new hash becomes current; the old one stays valid until valid_until (at or before
// now: refused at once).
void rotate(rotating_secret& s, const std::string& new_sha256, time_us valid_until);

// grace_seconds as a rotation request gives it: 0 .. max_rotation_grace_seconds.
inline constexpr int64_t max_rotation_grace_seconds = 30 * 24 * 3600;

}  // namespace baton::core
