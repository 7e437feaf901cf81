#pragma once
// Validation of request bodies and parameters. Every failure becomes a 422 whose JSON
// names the field, in FastAPI's shape ({"detail":[{"loc","msg","type"}]}) so RelayMD
// clients read it, plus baton's {"error","field","message"}.
#include "http/field_limits.hpp"
#include "http/message.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace baton::http {

// A value refused: 422 naming the field (in the body or the query), 413 for a body past its
// size limit, 400 for a recorded header (`where` says which: "body" for body and query, as
// RelayMD's clients expect, or "header").
struct invalid_field : std::runtime_error {
  invalid_field(std::string f, const std::string& msg, int status_ = 422, std::string where_ = "body")
      : std::runtime_error(msg), field(std::move(f)), status(status_), where(std::move(where_)) {}
  std::string field;
  int status;
  std::string where;
  nlohmann::json extra;  // more facts for the body (an object), e.g. a batch's refusals by index
};

nlohmann::json validation_body(const invalid_field& e);

// The body as a JSON object; empty body -> {} when allowed. Throws invalid_field("body"):
// 413 for a body longer than limits::body_bytes, 422 for one whose arrays and objects nest
// deeper than limits::body_nesting (checked before it is parsed: parsing, copying and
// encoding a JSON value recurse once per level, and a body of a few hundred kilobytes of
// brackets would exhaust the stack) or that is not a JSON object.
nlohmann::json object_body(const request& req, bool allow_empty, size_t max_bytes = limits::body_bytes);

// The names a body may hold. A name outside them is refused (422 naming it, with the nearest
// known name when one is close): a misspelt optional field would otherwise be read as absent and
// its default used without a word ("gpus": 2 made a 1-GPU job). `where` prefixes the field in
// the answer for an object inside the body ("files[2]."), "" for the body itself.
using field_names = std::vector<std::string_view>;
void check_known_fields(const nlohmann::json& b, const field_names& known, const std::string& where = "");
// The known name `name` most likely misspells, or "" when none is close: the same name spelt
// with other case or separators, then an edit distance of at most a third of its length, then
// a name sharing one of its words (`gpus` -> gpu_count).
std::string closest_name(std::string_view name, const field_names& known);

// Field readers: absent -> nullopt; wrong type or bad value -> invalid_field naming it.
// Every string has its limit (http/field_limits.hpp), in bytes of UTF-8.
std::optional<std::string> opt_string(const nlohmann::json& b, const std::string& field, size_t max_len);
std::string req_string(const nlohmann::json& b, const std::string& field, size_t max_len);
std::optional<double> opt_number(const nlohmann::json& b, const std::string& field, double lo, double hi);
std::optional<int64_t> opt_int(const nlohmann::json& b, const std::string& field, int64_t lo, int64_t hi);
std::optional<bool> opt_bool(const nlohmann::json& b, const std::string& field);
// A list of at most max_entries (checked before anything in it is read).
std::optional<nlohmann::json> opt_array(const nlohmann::json& b, const std::string& field, size_t max_entries);
// A list of JSON the worker chooses (progress_codes, checkpoint_cycle_failures): at most
// limits::worker_json_entries entries, worker_json_bytes encoded, worker_json_nesting deep.
std::optional<nlohmann::json> opt_worker_json(const nlohmann::json& b, const std::string& field);
// A header batond records with the request's events (X-Request-Id, X-Baton-Operator): ""
// when absent, else printable ASCII of at most max_len bytes, or invalid_field (400, where
// "header") naming it.
std::string recorded_header(const request& req, const std::string& name, size_t max_len);
// The same rule for a value that becomes a recorded name elsewhere (the dashboard login's
// name, recorded as the admin token's holder), as a 422 naming `field`.
void check_printable(const std::string& value, const std::string& field, size_t max_len, int status = 422,
                     const std::string& where = "body");
// Ids in paths and bodies: 1..limits::id_bytes of [A-Za-z0-9._:-].
std::string checked_id(const std::string& value, const std::string& field);
// Names of users, accounts, partitions, QOS: 1..limits::name_bytes of [A-Za-z0-9._-].
std::string checked_name(const std::string& value, const std::string& field);
// Job and worker ids (core/jobs/ids.hpp): a UUID, returned lower-case.
std::string checked_uuid(const std::string& value, const std::string& field);
int64_t query_int(const request& req, const std::string& name, int64_t dflt, int64_t lo, int64_t hi);
// A query parameter's text: "" when absent, else at most max_len bytes.
std::string query_text(const request& req, const std::string& name, size_t max_len);
bool query_bool(const request& req, const std::string& name, bool dflt);

std::string new_uuid();        // random v4, for ids the shell chooses
std::string new_secret_hex();  // 32 random bytes as hex, for worker credentials

}  // namespace baton::http
