#include "http/http_wire.hpp"

#include <cctype>
#include <cstring>

namespace baton::http::wire {
namespace {

request_head fail(int status, std::string message) {
  request_head h;
  h.state = head_state::error;
  h.error_status = status;
  h.error_message = std::move(message);
  return h;
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    if (iequals(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

request_head parse_head(std::string_view buf, size_t max_header_bytes, size_t max_body_bytes) {
  auto end = buf.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (buf.size() > max_header_bytes) return fail(431, "request line and headers exceed " + std::to_string(max_header_bytes) + " bytes");
    return {};
  }
  if (end + 4 > max_header_bytes) return fail(431, "request line and headers exceed " + std::to_string(max_header_bytes) + " bytes");
  request_head h;
  h.head_bytes = end + 4;
  std::string_view head = buf.substr(0, end);

  auto line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == 0 || sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "malformed request line");
  auto method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1), version = line.substr(sp2 + 1);
  for (char c : method)
    if (!is_token_char(c)) return fail(400, "malformed method");
  if (target.empty() || target.front() != '/') return fail(400, "request target must be a path starting with '/'");
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return fail(400, "request target contains control characters");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return fail(400, "only HTTP/1.0 and HTTP/1.1 are served");
  h.req.method = std::string(method);
  h.req.target = std::string(target);
  bool http10 = version == "HTTP/1.0";
  h.keep_alive = !http10;

  bool have_length = false;
  std::string_view rest = line_end == std::string_view::npos ? std::string_view{} : head.substr(line_end + 2);
  while (!rest.empty()) {
    auto eol = rest.find("\r\n");
    std::string_view field = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 2);
    if (field.empty() || field.front() == ' ' || field.front() == '\t') return fail(400, "malformed header line");
    auto colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail(400, "header line without a name");
    auto name = field.substr(0, colon);
    for (char c : name)
      if (!is_token_char(c)) return fail(400, "malformed header name");
    auto value = trim(field.substr(colon + 1));
    for (char c : value)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) return fail(400, "header value contains control characters");
    if (iequals(name, "Content-Length")) {
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string_view::npos)
        return fail(400, "Content-Length must be a decimal number");
      size_t n = std::stoull(std::string(value));
      if (have_length && n != h.body_bytes) return fail(400, "conflicting Content-Length headers");
      have_length = true;
      h.body_bytes = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      return fail(411, "Transfer-Encoding request bodies are not supported; send Content-Length");
    } else if (iequals(name, "Connection")) {
      if (has_token(value, "close")) h.keep_alive = false;
      else if (http10 && has_token(value, "keep-alive")) h.keep_alive = true;
    } else if (iequals(name, "Expect")) {
      if (!iequals(value, "100-continue")) return fail(417, "only Expect: 100-continue is supported");
      h.expect_continue = true;
    }
    h.req.headers.emplace_back(std::string(name), std::string(value));
  }
  if (h.body_bytes > max_body_bytes) return fail(413, "request body exceeds " + std::to_string(max_body_bytes) + " bytes");

  parse_target(h.req.target, h.req.path, h.req.params);
  h.state = head_state::complete;
  return h;
}

const char* reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string serialize(const response& res, bool keep_alive) {
  std::string out;
  out.reserve(160 + res.body.size());
  out += "HTTP/1.1 ";
  out += std::to_string(res.status);
  out += ' ';
  out += reason(res.status);
  out += "\r\n";
  for (const auto& [name, value] : res.headers) {
    if (iequals(name, "Content-Length") || iequals(name, "Connection")) continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  bool bodiless = res.status == 204 || res.status == 304 || (res.status >= 100 && res.status < 200);
  if (!bodiless && !res.content_type.empty()) {
    out += "Content-Type: ";
    out += res.content_type;
    out += "\r\n";
  }
  if (!bodiless) {
    out += "Content-Length: ";
    out += std::to_string(res.body.size());
    out += "\r\n";
  }
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  if (!bodiless) out += res.body;
  return out;
}

}  // namespace baton::http::wire
