#include "http/request_parsing.hpp"

#include "core/jobs/ids.hpp"
#include "core/util/hex.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <vector>

namespace baton::http {

using nlohmann::json;

json validation_body(const invalid_field& e) {
  json body = {{"detail", json::array({{{"loc", json::array({e.where, e.field})}, {"msg", e.what()}, {"type", "value_error"}}})},
               {"error", "validation_error"},
               {"field", e.field},
               {"message", e.field + ": " + e.what()}};
  if (e.extra.is_object()) body.update(e.extra);
  return body;
}

namespace {
// Whether the JSON text nests arrays and objects deeper than `limit` (brackets inside
// strings do not count). Any text: it does not check that the JSON is valid.
bool nests_deeper_than(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}
}  // namespace

json object_body(const request& req, bool allow_empty, size_t max_bytes) {
  if (req.body.empty()) {
    if (allow_empty) return json::object();
    throw invalid_field("body", "a JSON object is required");
  }
  if (req.body.size() > max_bytes)
    throw invalid_field("body",
                        "is " + std::to_string(req.body.size()) + " bytes, more than " + std::to_string(max_bytes) +
                            " (each field has its own limit)",
                        413);
  if (nests_deeper_than(req.body, limits::body_nesting))
    throw invalid_field("body", "nests arrays and objects deeper than " + std::to_string(limits::body_nesting) + " levels");
  json b = json::parse(req.body, nullptr, false);
  if (b.is_discarded()) throw invalid_field("body", "is not valid JSON");
  if (b.is_null() && allow_empty) return json::object();
  if (!b.is_object()) throw invalid_field("body", "must be a JSON object");
  return b;
}

namespace {
std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Lower case without separators: gpuCount, GPU-COUNT and gpu_count are one name.
std::string squeezed(std::string_view s) {
  std::string out;
  for (char c : lower(s))
    if (c != '_' && c != '-' && c != '.' && c != ' ') out += c;
  return out;
}

// Edit distance counting a swap of neighbours as one edit (optimal string alignment).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The words of a name (split at separators, lower case, a plural's "s" dropped), of 3 letters or more.
std::vector<std::string> words_of(std::string_view s) {
  std::vector<std::string> out;
  std::string w;
  auto flush = [&] {
    if (w.size() > 3 && w.back() == 's' && w[w.size() - 2] != 's') w.pop_back();
    if (w.size() >= 3) out.push_back(w);
    w.clear();
  };
  for (char c : lower(s)) {
    if (c == '_' || c == '-' || c == '.' || c == ' ')
      flush();
    else
      w += c;
  }
  flush();
  return out;
}

// At most 64 bytes of a name the caller sent, cut at a character's start.
std::string shown(std::string_view name) {
  if (name.size() <= 64) return std::string(name);
  size_t cut = 64;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return std::string(name.substr(0, cut)) + "...";
}
}  // namespace

std::string closest_name(std::string_view name, const field_names& known) {
  if (name.size() > 64) return "";  // no one misspells a name that long, and the distance is quadratic
  const std::string sq = squeezed(name), lo = lower(name);
  for (auto k : known)
    if (squeezed(k) == sq) return std::string(k);
  std::string best;
  size_t best_d = std::max<size_t>(1, name.size() / 3) + 1;
  for (auto k : known)
    if (auto d = edit_distance(lo, std::string(k)); d < best_d) best = std::string(k), best_d = d;
  if (!best.empty()) return best;
  const auto words = words_of(name);
  best_d = SIZE_MAX;
  for (auto k : known) {
    bool shares = false;
    for (const auto& kw : words_of(k))
      for (const auto& w : words) shares = shares || w == kw;
    if (shares)
      if (auto d = edit_distance(lo, std::string(k)); d < best_d) best = std::string(k), best_d = d;
  }
  return best;
}

void check_known_fields(const json& b, const field_names& known, const std::string& where) {
  if (!b.is_object()) return;
  for (const auto& [key, value] : b.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    auto near = closest_name(key, known);
    std::string msg = "unknown field '" + shown(key) + "'";
    if (!near.empty()) {
      msg += "; did you mean '" + near + "'?";
    } else {
      msg += "; the fields here are ";
      for (size_t i = 0; i < known.size(); ++i) msg += (i ? ", " : "") + std::string(known[i]);
    }
    throw invalid_field(where + shown(key), msg);
  }
}

std::optional<std::string> opt_string(const json& b, const std::string& field, size_t max_len) {
  auto it = b.find(field);
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw invalid_field(field, "must be a string");
  auto s = it->get<std::string>();
  if (s.size() > max_len) throw invalid_field(field, "is longer than " + std::to_string(max_len) + " bytes");
  return s;
}

std::string req_string(const json& b, const std::string& field, size_t max_len) {
  auto s = opt_string(b, field, max_len);
  if (!s) throw invalid_field(field, "is required");
  if (s->find_first_not_of(" \t\r\n") == std::string::npos) throw invalid_field(field, "must not be blank");
  return *s;
}

std::optional<double> opt_number(const json& b, const std::string& field, double lo, double hi) {
  auto it = b.find(field);
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw invalid_field(field, "must be a number");
  double v = it->get<double>();
  if (!(v >= lo && v <= hi)) throw invalid_field(field, "must be between " + json(lo).dump() + " and " + json(hi).dump());
  return v;
}

std::optional<int64_t> opt_int(const json& b, const std::string& field, int64_t lo, int64_t hi) {
  auto it = b.find(field);
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) throw invalid_field(field, "must be an integer");
  auto v = it->get<int64_t>();
  if (v < lo || v > hi) throw invalid_field(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return v;
}

std::optional<bool> opt_bool(const json& b, const std::string& field) {
  auto it = b.find(field);
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw invalid_field(field, "must be true or false");
  return it->get<bool>();
}

std::optional<json> opt_array(const json& b, const std::string& field, size_t max_entries) {
  auto it = b.find(field);
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) throw invalid_field(field, "must be a list");
  if (it->size() > max_entries)
    throw invalid_field(field,
                        "must have at most " + std::to_string(max_entries) + " entries, got " + std::to_string(it->size()));
  return *it;
}

namespace {
// Levels of arrays and objects in v (a scalar is 0, [] is 1); stops counting past `limit`.
size_t depth_of(const json& v, size_t limit) {
  if (!v.is_structured() || limit == 0) return v.is_structured() ? 1 : 0;
  size_t deepest = 0;
  for (const auto& e : v) deepest = std::max(deepest, depth_of(e, limit - 1));
  return deepest + 1;
}

// v when it is 1..max_len letters, digits and the characters `others` lists (". _ -").
std::string checked_chars(const std::string& v, const std::string& field, size_t max_len, std::string_view others) {
  if (v.empty() || v.size() > max_len) throw invalid_field(field, "must be 1 to " + std::to_string(max_len) + " characters");
  for (char c : v)
    if (!std::isalnum(static_cast<unsigned char>(c)) && (c == ' ' || others.find(c) == std::string_view::npos))
      throw invalid_field(field, "may contain only letters, digits and " + std::string(others));
  return v;
}
}  // namespace

std::optional<json> opt_worker_json(const json& b, const std::string& field) {
  auto list = opt_array(b, field, limits::worker_json_entries);
  if (!list) return list;
  if (depth_of(*list, limits::worker_json_nesting) > limits::worker_json_nesting)
    throw invalid_field(field, "nests deeper than " + std::to_string(limits::worker_json_nesting) + " levels");
  // Encoded as the log's JSON views write it (invalid UTF-8 is refused with the same message).
  std::string text;
  try {
    text = list->dump();
  } catch (const json::exception&) {
    throw invalid_field(field, "holds text that is not UTF-8");
  }
  if (text.size() > limits::worker_json_bytes)
    throw invalid_field(
        field, "is " + std::to_string(text.size()) + " bytes as JSON, more than " + std::to_string(limits::worker_json_bytes));
  return list;
}

void check_printable(const std::string& v, const std::string& field, size_t max_len, int status, const std::string& where) {
  if (v.size() > max_len) throw invalid_field(field, "is longer than " + std::to_string(max_len) + " bytes", status, where);
  for (char c : v)
    if (c < 0x20 || c > 0x7e) throw invalid_field(field, "may contain only printable ASCII (0x20-0x7E)", status, where);
}

std::string recorded_header(const request& req, const std::string& name, size_t max_len) {
  auto v = req.get_header_value(name);
  check_printable(v, name, max_len, 400, "header");
  return v;
}

std::string checked_id(const std::string& v, const std::string& field) {
  return checked_chars(v, field, limits::id_bytes, ". _ : -");
}
std::string checked_name(const std::string& v, const std::string& field) {
  return checked_chars(v, field, limits::name_bytes, ". _ -");
}

std::string checked_uuid(const std::string& v, const std::string& field) {
  auto id = core::canonical_uuid(v);
  if (!id) throw invalid_field(field, "must be a UUID (8-4-4-4-12 hexadecimal digits)");
  return *id;
}

int64_t query_int(const request& req, const std::string& name, int64_t dflt, int64_t lo, int64_t hi) {
  if (!req.has_param(name.c_str())) return dflt;
  auto text = req.get_param_value(name.c_str());
  try {
    size_t used = 0;
    auto v = std::stoll(text, &used);
    if (used == text.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  throw invalid_field(name, "must be an integer between " + std::to_string(lo) + " and " + std::to_string(hi));
}

std::string query_text(const request& req, const std::string& name, size_t max_len) {
  if (!req.has_param(name.c_str())) return "";
  auto v = req.get_param_value(name.c_str());
  if (v.size() > max_len) throw invalid_field(name, "is longer than " + std::to_string(max_len) + " bytes");
  return v;
}

bool query_bool(const request& req, const std::string& name, bool dflt) {
  if (!req.has_param(name.c_str())) return dflt;
  auto v = req.get_param_value(name.c_str());
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw invalid_field(name, "must be true or false");
}

namespace {
std::string random_bytes(size_t n) {
  std::string b(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(b.data()), static_cast<int>(n)) != 1)
    throw std::runtime_error("OpenSSL RAND_bytes failed");
  return b;
}
}  // namespace

std::string new_uuid() {
  auto b = random_bytes(16);
  b[6] = static_cast<char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<char>((b[8] & 0x3f) | 0x80);
  return util::uuid_text(b);
}

std::string new_secret_hex() { return util::to_hex(random_bytes(32)); }

}  // namespace baton::http
