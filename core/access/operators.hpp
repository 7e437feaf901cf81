#pragma once
// Named operators: people with their own API token (stored as its SHA-256 only), a role
// (admin or user) and the accounts they may charge. Created and revoked by an admin; each
// change is an event on the stream operator/<name>. The token in BATON_API_TOKEN stays the
// admin's and is not one of these.
#include <optional>
#include <string>
#include <vector>

#include "core/access/credential.hpp"
#include "core/events/domain.hpp"

namespace baton::core {

struct operator_account {
  std::string name;
  bool admin = false;
  std::vector<std::string> accounts;  // may charge; empty: the accounts whose users list them
  rotating_secret token;              // hashes only
  bool revoked = false;
  time_us created_at = 0;
  time_us token_rotated_at = 0;  // 0: never rotated
};

std::string operator_stream(const std::string& name);

decision decide_create_operator(const operator_account* existing, const std::string& name, bool admin,
                                const std::vector<std::string>& accounts, const std::string& token_sha256);
decision decide_revoke_operator(const operator_account& o);
// A new token for o; the old one is accepted for grace_seconds more (0: refused at once).
decision decide_rotate_operator_token(const operator_account& o, const std::string& token_sha256, int64_t grace_seconds,
                                      time_us now);
void evolve(operator_account& o, const ev::payload& payload, time_us at);

}  // namespace baton::core
