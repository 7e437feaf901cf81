#include "core/operators.hpp"
#include "core/payload_numbers.hpp"

namespace baton::core {

std::string operator_stream(const std::string& name) { return "operator/" + name; }

decision decide_create_operator(const operator_account* existing, const std::string& name, bool admin,
                                const std::vector<std::string>& accounts, const std::string& token_sha256) {
  if (existing && !existing->revoked)
    return decision::refuse({error_kind::conflict, "operator_exists", "operator '" + name + "' already exists",
                             {{"name", name}}, "name"});
  decision d;
  d.events.push_back({operator_stream(name), "operator.created",
                      {{"role", admin ? "admin" : "user"}, {"accounts", accounts}, {"token_sha256", token_sha256}}});
  return d;
}

decision decide_revoke_operator(const operator_account& o) {
  if (o.revoked) return {};  // already revoked: nothing changes
  decision d;
  d.events.push_back({operator_stream(o.name), "operator.revoked", nlohmann::json::object()});
  return d;
}

decision decide_rotate_operator_token(const operator_account& o, const std::string& token_sha256, int64_t grace_seconds,
                                      time_us now) {
  if (o.revoked)
    return decision::refuse({error_kind::conflict, "operator_revoked", "operator '" + o.name + "' is revoked",
                             {{"name", o.name}}, "name"});
  decision d;
  d.events.push_back({operator_stream(o.name), "operator.token_rotated",
                      {{"token_sha256", token_sha256},
                       {"grace_seconds", grace_seconds},
                       {"previous_valid_until_us", now + grace_seconds * 1'000'000}}});
  return d;
}

void evolve(operator_account& o, const std::string& type, const nlohmann::json& p, time_us at) {
  if (type == "operator.created") {
    o.admin = p.value("role", "user") == "admin";
    o.accounts = p.value("accounts", std::vector<std::string>{});
    o.token = rotating_secret{p.value("token_sha256", ""), "", 0};
    o.revoked = false;
    o.created_at = at;
    o.token_rotated_at = 0;
  } else if (type == "operator.token_rotated") {
    rotate(o.token, p.value("token_sha256", ""), number_or(p, "previous_valid_until_us", time_us{0}));
    o.token_rotated_at = at;
  } else if (type == "operator.revoked") {
    o.revoked = true;
    o.token = {};
  }
}

}  // namespace baton::core
