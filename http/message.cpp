#include "http/message.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace baton::http {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string client_group(const std::string& address) {
  in6_addr a6{};
  if (inet_pton(AF_INET6, address.c_str(), &a6) != 1) return address;  // IPv4 (or not an address)
  char text[INET6_ADDRSTRLEN] = {};
  if (IN6_IS_ADDR_V4MAPPED(&a6)) {
    in_addr a4{};
    std::memcpy(&a4, a6.s6_addr + 12, 4);
    return inet_ntop(AF_INET, &a4, text, sizeof text) ? text : address;
  }
  std::memset(a6.s6_addr + 8, 0, 8);
  return inet_ntop(AF_INET6, &a6, text, sizeof text) ? std::string(text) + "/64" : address;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}
}  // namespace

std::string request::get_header_value(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

std::string request::get_param_value(const std::string& name, size_t i) const {
  auto range = params.equal_range(name);
  for (auto it = range.first; it != range.second; ++it, --i)
    if (i == 0) return it->second;
  return {};
}

void response::set_header(const std::string& name, const std::string& value) {
  for (auto& [k, v] : headers)
    if (iequals(k, name)) {
      v = value;
      return;
    }
  headers.emplace_back(name, value);
}

void parse_target(const std::string& target, std::string& path, std::multimap<std::string, std::string>& params) {
  auto q = target.find('?');
  path = percent_decode(std::string_view(target).substr(0, q), false);
  if (q == std::string::npos) return;
  std::string_view query = std::string_view(target).substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    if (!pair.empty()) {
      auto eq = pair.find('=');
      auto key = percent_decode(pair.substr(0, eq), true);
      auto value = eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true);
      params.emplace(std::move(key), std::move(value));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
}

}  // namespace baton::http
