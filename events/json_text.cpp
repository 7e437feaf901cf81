#include "events/json_text.hpp"

#include <charconv>
#include <exception>

#include "events/cbor_cursor.hpp"

namespace baton::events {

void append_json_string(std::string& out, std::string_view s, invalid_utf8 bad) {
  const size_t at = out.size();
  out += '"';
  size_t run = 0;  // the first byte not yet copied: runs of plain bytes are copied at once
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
    if (c >= 0x80) {  // beyond ASCII: nlohmann's dump, which checks the UTF-8, writes all of it
      out.resize(at);
      out += nlohmann::json(std::string(s))
                 .dump(-1, ' ', false,
                       bad == invalid_utf8::replace ? nlohmann::json::error_handler_t::replace
                                                    : nlohmann::json::error_handler_t::strict);
      return;
    }
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        static const char hex[] = "0123456789abcdef";
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

namespace {

template <class Number>
void append_number(std::string& out, Number n) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof buf, n).ptr;
  out.append(buf, static_cast<size_t>(end - buf));
}

}  // namespace

void append_json(std::string& out, const nlohmann::json& v, invalid_utf8 bad) {
  using nlohmann::json;
  switch (v.type()) {
    case json::value_t::null:
      out += "null";
      break;
    case json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case json::value_t::number_integer:
      append_number(out, v.get<int64_t>());
      break;
    case json::value_t::number_unsigned:
      append_number(out, v.get<uint64_t>());
      break;
    case json::value_t::string:
      append_json_string(out, v.get_ref<const std::string&>(), bad);
      break;
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v.get_ref<const json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json(out, e, bad);
      }
      out += ']';
      break;
    }
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, value] : v.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key, bad);
        out += ':';
        append_json(out, value, bad);
      }
      out += '}';
      break;
    }
    default:  // floats (nlohmann's shortest round-trip form), binary values, discarded
      out += v.dump();
  }
}

namespace {

// A string's text; text that is not UTF-8 (when refused) is noted, not thrown: the bytes may
// still turn out to be outside the forms written here, and then the value's way decides.
void string_text(std::string& out, std::string_view s, invalid_utf8 bad, std::exception_ptr& first_bad) {
  if (bad == invalid_utf8::refuse && first_bad) return append_json_string(out, s, invalid_utf8::replace);
  try {
    append_json_string(out, s, bad);
  } catch (const nlohmann::json::exception&) {
    first_bad = std::current_exception();
    append_json_string(out, s, invalid_utf8::replace);
  }
}

bool cbor_text(cbor_cursor& c, std::string& out, invalid_utf8 bad, int depth, std::exception_ptr& first_bad) {
  constexpr int max_depth = 512;  // (the cursor's own bound)
  const int initial = c.peek();
  if (initial < 0 || depth > max_depth) return false;
  switch (initial >> 5) {
    case 0: {
      uint64_t n = 0;
      if (!c.unsigned_integer(n)) return false;
      append_number(out, n);
      return true;
    }
    case 1: {  // (nlohmann's int64 range only, as the cursor reads it)
      int64_t n = 0;
      if (!c.integer(n)) return false;
      append_number(out, n);
      return true;
    }
    case 3: {
      std::string_view s;
      if (!c.text(s)) return false;
      string_text(out, s, bad, first_bad);
      return true;
    }
    case 4: {
      uint64_t n = 0;
      if (!c.array_header(n)) return false;
      out += '[';
      for (uint64_t i = 0; i < n; ++i) {
        if (i) out += ',';
        if (!cbor_text(c, out, bad, depth + 1, first_bad)) return false;
      }
      out += ']';
      return true;
    }
    case 5: {  // the tree is a std::map: the text follows its key order, so keys must come in it
      uint64_t n = 0;
      if (!c.map_header(n)) return false;
      out += '{';
      std::string_view previous;
      for (uint64_t i = 0; i < n; ++i) {
        std::string_view key;
        if (!c.text(key) || (i && !(previous < key))) return false;
        previous = key;
        if (i) out += ',';
        string_text(out, key, bad, first_bad);
        out += ':';
        if (!cbor_text(c, out, bad, depth + 1, first_bad)) return false;
      }
      out += '}';
      return true;
    }
    case 7: {
      bool b = false;
      if (c.boolean(b)) {
        out += b ? "true" : "false";
        return true;
      }
      if (c.null()) {
        out += "null";
        return true;
      }
      double d = 0;
      if ((initial != 0xFA && initial != 0xFB) || !c.number(d)) return false;
      out += nlohmann::json(d).dump();  // nlohmann's shortest round-trip form, as append_json
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

bool append_json_of_cbor(std::string& out, std::string_view cbor, invalid_utf8 bad) {
  const size_t at = out.size();
  cbor_cursor c(cbor);
  std::exception_ptr first_bad;  // the first string that is not UTF-8, as the value's dump would meet it
  const bool written = cbor_text(c, out, bad, 0, first_bad) && c.at_end();
  if (!written || first_bad) out.resize(at);
  if (written && first_bad) std::rethrow_exception(first_bad);
  return written;
}

bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range (RFC 3629: no overlongs, surrogates or > U+10FFFF)
    if (c >= 0xc2 && c <= 0xdf)
      n = 1;
    else if (c >= 0xe0 && c <= 0xef)
      n = 2, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
      n = 3, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
      return false;
    if (i + n >= s.size()) return false;  // cut short
    for (size_t k = 1; k <= n; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) return false;
    }
    i += n + 1;
  }
  return true;
}

std::string utf8_replaced(std::string_view s) {
  if (is_utf8(s)) return std::string(s);
  // nlohmann's replacement (U+FFFD per bad sequence), read back from the JSON text it writes.
  std::string text;
  append_json_string(text, s, invalid_utf8::replace);
  return nlohmann::json::parse(text).get<std::string>();
}

}  // namespace baton::events
