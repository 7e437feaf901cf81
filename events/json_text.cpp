#include "events/json_text.hpp"

#include <charconv>

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
      out += nlohmann::json(std::string(s)).dump(-1, ' ', false,
                                                 bad == invalid_utf8::replace ? nlohmann::json::error_handler_t::replace
                                                                              : nlohmann::json::error_handler_t::strict);
      return;
    }
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
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

void append_json(std::string& out, const nlohmann::json& v) {
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
      append_json_string(out, v.get_ref<const std::string&>());
      break;
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v.get_ref<const json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json(out, e);
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
        append_json_string(out, key);
        out += ':';
        append_json(out, value);
      }
      out += '}';
      break;
    }
    default:  // floats (nlohmann's shortest round-trip form), binary values, discarded
      out += v.dump();
  }
}

}  // namespace baton::events
