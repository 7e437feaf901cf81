#pragma once
// Validation of request bodies and parameters. Every failure becomes a 422 whose JSON
// names the field, in FastAPI's shape ({"detail":[{"loc","msg","type"}]}) so RelayMD
// clients read it, plus baton's {"error","field","message"}.
#include "http/message.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace baton::http {

struct invalid_field : std::runtime_error {
  invalid_field(std::string f, const std::string& msg) : std::runtime_error(msg), field(std::move(f)) {}
  std::string field;
};

nlohmann::json validation_body(const invalid_field& e);

// The body as a JSON object; empty body -> {} when allowed. Throws invalid_field("body"),
// also for a body whose arrays and objects nest deeper than max_body_nesting: parsing,
// copying and encoding a JSON value recurse once per level, and a body of a few hundred
// kilobytes of brackets would exhaust the stack (no request of the API nests past a few).
constexpr int max_body_nesting = 64;
nlohmann::json object_body(const request& req, bool allow_empty);

// Whether the JSON text nests arrays and objects deeper than `limit` (brackets inside
// strings do not count). Any text: it does not check that the JSON is valid.
bool nests_deeper_than(std::string_view text, int limit);

// Field readers: absent -> nullopt; wrong type or bad value -> invalid_field naming it.
std::optional<std::string> opt_string(const nlohmann::json& b, const std::string& field, size_t max_len = 4096);
std::string req_string(const nlohmann::json& b, const std::string& field, size_t max_len = 4096);
std::optional<double> opt_number(const nlohmann::json& b, const std::string& field, double lo, double hi);
std::optional<int64_t> opt_int(const nlohmann::json& b, const std::string& field, int64_t lo, int64_t hi);
std::optional<bool> opt_bool(const nlohmann::json& b, const std::string& field);
std::optional<nlohmann::json> opt_array(const nlohmann::json& b, const std::string& field);
// Ids in paths and bodies: 1..128 of [A-Za-z0-9._:-].
std::string checked_id(const std::string& value, const std::string& field);
// Names of users, accounts, partitions, QOS: 1..64 of [A-Za-z0-9._-].
std::string checked_name(const std::string& value, const std::string& field);
// Job and worker ids (core/ids.hpp): a UUID, returned lower-case.
std::string checked_uuid(const std::string& value, const std::string& field);
int64_t query_int(const request& req, const std::string& name, int64_t dflt, int64_t lo, int64_t hi);
bool query_bool(const request& req, const std::string& name, bool dflt);

std::string new_uuid();          // random v4, for ids the shell chooses
std::string new_secret_hex();    // 32 random bytes as hex, for worker credentials

}  // namespace baton::http
