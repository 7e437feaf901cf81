#include "core/access/operators.hpp"

namespace baton::core {

std::string operator_stream(const std::string& name) { return "operator/" + name; }

decision decide_create_operator(const operator_account* existing, const std::string& name, bool admin,
                                const std::vector<std::string>& accounts, const std::string& token_sha256) {
  if (existing && !existing->revoked)
    return decision::refuse(
        {error_kind::conflict, "operator_exists", "operator '" + name + "' already exists", {{"name", name}}, "name"});
  return decision::of(operator_stream(name), ev::operator_created{accounts, admin ? "admin" : "user", token_sha256});
}

decision decide_revoke_operator(const operator_account& o) {
  if (o.revoked) return {};  // already revoked: nothing changes
  return decision::of(operator_stream(o.name), ev::operator_revoked{});
}

decision decide_rotate_operator_token(const operator_account& o, const std::string& token_sha256, int64_t grace_seconds,
                                      time_us now) {
  if (o.revoked)
    return decision::refuse(
        {error_kind::conflict, "operator_revoked", "operator '" + o.name + "' is revoked", {{"name", o.name}}, "name"});
  return decision::of(operator_stream(o.name),
                      ev::operator_token_rotated{grace_seconds, now + grace_seconds * 1'000'000, token_sha256});
}

void evolve(operator_account& o, const ev::payload& payload, time_us at) {
  if (const auto* p = std::get_if<ev::operator_created>(&payload)) {
    o.admin = p->role == "admin";
    o.accounts = p->accounts;
    o.token = rotating_secret{p->token_sha256, "", 0};
    o.revoked = false;
    o.created_at = at;
    o.token_rotated_at = 0;
  } else if (const auto* r = std::get_if<ev::operator_token_rotated>(&payload)) {
    rotate(o.token, r->token_sha256, r->previous_valid_until_us);
    o.token_rotated_at = at;
  } else if (std::holds_alternative<ev::operator_revoked>(payload)) {
    o.revoked = true;
    o.token = {};
  }
}

}  // namespace baton::core
