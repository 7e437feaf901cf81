#pragma once
// JSON text written by hand where building a JSON value only to dump it cost more than the
// work around it (the live feed's summaries, a poll's reply), and a faster dump() of a value
// (the SQL view's payload text): exactly the text nlohmann's dump() writes.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace baton::events {

enum class invalid_utf8 {
  refuse,   // throws nlohmann's type_error, as dump() does by default
  replace,  // each bad sequence becomes U+FFFD, as dump() with error_handler_t::replace
};

// Appends `s` as a quoted JSON string. ASCII is escaped here; text with bytes beyond ASCII
// goes through nlohmann, which checks its UTF-8.
void append_json_string(std::string& out, std::string_view s, invalid_utf8 bad = invalid_utf8::refuse);

// Appends v as dump() writes it (compact; invalid UTF-8 in a string throws nlohmann's
// type_error, as dump() does, unless `bad` says replace). Strings and integers are written
// here, floats and binary values by nlohmann. About three times faster on the log's payloads.
void append_json(std::string& out, const nlohmann::json& v, invalid_utf8 bad = invalid_utf8::refuse);

// Appends the JSON text of a payload's CBOR without building its value: the text
// append_json(out, from_payload(cbor), bad) writes, in a third of the instructions (the SQL
// view writes every event's). False when the bytes hold anything outside what the log's
// encoder writes (a tag, a byte string, an indefinite length, keys out of order or repeated,
// nesting beyond 512, bytes left over) or are cut short: `out` is then as it was, and the
// caller takes the tree's way, which gives the exact result or error. Invalid UTF-8 in a
// string throws nlohmann's type_error unless `bad` says replace, as append_json.
bool append_json_of_cbor(std::string& out, std::string_view cbor, invalid_utf8 bad = invalid_utf8::refuse);

// Whether s is well-formed UTF-8 (ASCII is).
bool is_utf8(std::string_view s);
// s with each sequence that is not UTF-8 replaced by U+FFFD (s itself when it is UTF-8).
std::string utf8_replaced(std::string_view s);

inline std::string json_text(const nlohmann::json& v) {
  std::string out;
  out.reserve(256);
  append_json(out, v);
  return out;
}

}  // namespace baton::events
