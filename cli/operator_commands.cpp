// Named operators, for admins: create one (its token is printed once), revoke, list; and
// rotate a token (an operator their own, an admin anyone's); rotate the pilot token.
#include "cli/request_helpers.hpp"

namespace baton::cli {

using nlohmann::json;

int operators_add(context& c, const std::string& name, const std::string& role, const std::vector<std::string>& accounts) {
  result r;
  if (int code = run(c, "POST", "/operators", r, json{{"name", name}, {"role", role}, {"accounts", accounts}})) return code;
  return reply(c, r.body, [&](std::ostream& o) {
    o << "created " << cell(r.body["role"]) << " " << name << "; their token (shown once, keep it secret):\n"
      << cell(r.body["token"]);
  });
}

int operators_revoke(context& c, const std::string& name) {
  result r;
  if (int code = run(c, "DELETE", "/operators/" + encode(name), r)) return code;
  return reply(c, json{{"name", name}, {"revoked", true}}, [&](std::ostream& o) { o << "revoked " << name; });
}

int operators_rotate(context& c, const std::string& name, int64_t grace_seconds) {
  result r;
  if (int code = run(c, "POST", "/operators/" + encode(name) + "/token", r, json{{"grace_seconds", grace_seconds}})) return code;
  return reply(c, r.body, [&](std::ostream& o) {
    o << "new token for " << name << " (shown once, keep it secret); the old one works until "
      << cell(r.body["previous_token_valid_until"]) << ":\n"
      << cell(r.body["token"]);
  });
}

int pilot_token_rotate(context& c, int64_t grace_seconds) {
  result r;
  if (int code = run(c, "POST", "/pilot-token", r, json{{"grace_seconds", grace_seconds}})) return code;
  return reply(c, r.body, [&](std::ostream& o) {
    o << "new pilot token (batond wrote it where batch scripts read it; shown once); the old one registers workers until "
      << cell(r.body["previous_token_valid_until"]) << ":\n"
      << cell(r.body["token"]);
  });
}

int operators_list(context& c) {
  result r;
  if (int code = run(c, "GET", "/operators", r)) return code;
  json rows = r.body;
  for (auto& row : rows) {
    std::string joined;
    for (const auto& a : row["accounts"]) joined += (joined.empty() ? "" : ",") + a.get<std::string>();
    row["accounts"] = joined;
  }
  return print(c, c.json ? r.body : rows,
               {{"NAME", "name"},
                {"ROLE", "role"},
                {"ACCOUNTS", "accounts"},
                {"REVOKED", "revoked"},
                {"CREATED", "created_at"},
                {"ROTATED", "token_rotated_at"}});
}

}  // namespace baton::cli
