#include "core/operators.hpp"

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

void evolve(operator_account& o, const std::string& type, const nlohmann::json& p, time_us at) {
  if (type == "operator.created") {
    o.admin = p.value("role", "user") == "admin";
    o.accounts = p.value("accounts", std::vector<std::string>{});
    o.token_sha256 = p.value("token_sha256", "");
    o.revoked = false;
    o.created_at = at;
  } else if (type == "operator.revoked") {
    o.revoked = true;
    o.token_sha256.clear();
  }
}

}  // namespace baton::core
