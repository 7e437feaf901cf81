#include "core/util/hex.hpp"

#include <stdexcept>

namespace baton::util {

namespace {

constexpr char digits[] = "0123456789abcdef";

int value_of(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string to_hex(std::string_view bytes) {
  std::string s(bytes.size() * 2, '\0');
  char* p = s.data();
  for (unsigned char c : bytes) {
    *p++ = digits[c >> 4];
    *p++ = digits[c & 15];
  }
  return s;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = value_of(hex[2 * i]), lo = value_of(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  return out;
}

bool is_lower_hex(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string uuid_text(std::string_view b) {
  if (b.size() != 16) throw std::invalid_argument("uuid_text: 16 bytes, not " + std::to_string(b.size()));
  std::string s(36, '-');
  char* p = s.data();
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) ++p;  // past a dash
    const auto c = static_cast<unsigned char>(b[i]);
    *p++ = digits[c >> 4];
    *p++ = digits[c & 15];
  }
  return s;
}

}  // namespace baton::util
