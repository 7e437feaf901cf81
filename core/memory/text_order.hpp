#pragma once
// Comparing ids and names in the indexes' hot loops: the first eight bytes as one number
// before the whole text. Keys of an index often tie on every field before their id (workers of
// one shape registered together), and a memcmp call for each such comparison showed in
// re-derivation.
#include <cstdint>
#include <cstring>
#include <string_view>

namespace baton::core {

// The first eight bytes as one number that orders as they do (unsigned, zero-padded): two
// texts with different prefixes compare as their prefixes; equal prefixes say nothing.
inline uint64_t order_prefix(std::string_view s) {
  if (s.size() >= 8) {  // (one load, byte-swapped on a little-endian machine)
    uint64_t p;
    std::memcpy(&p, s.data(), 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    p = __builtin_bswap64(p);
#endif
    return p;
  }
  uint64_t p = 0;
  for (size_t i = 0; i < 8; ++i) p = p << 8 | (i < s.size() ? static_cast<unsigned char>(s[i]) : 0u);
  return p;
}

// a < b, as std::string_view compares them (bytes unsigned), prefixes first.
inline bool text_less(std::string_view a, std::string_view b) {
  uint64_t x = order_prefix(a), y = order_prefix(b);
  if (x != y) return x < y;
  return a < b;
}

}  // namespace baton::core
