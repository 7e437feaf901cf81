#pragma once
// Numbers read from a stored event's payload. batond wrote them, but a log is a file: a
// damaged or hand-made one must not make a read undefined. Integers read leniently
// (events/described.hpp's integer_of: not a number or out of range keeps the default); a
// count scaled into another unit must not overflow either.
#include <cstdint>
#include <limits>
#include <optional>

namespace baton::core {

// A typed record's recorded count times unit (e.g. seconds to microseconds): the fallback
// (already in the unit) when the count is absent or the product would not fit.
inline int64_t scaled_or(const std::optional<int64_t>& n, int64_t fallback, int64_t unit) {
  if (!n || *n > std::numeric_limits<int64_t>::max() / unit || *n < std::numeric_limits<int64_t>::min() / unit) return fallback;
  return *n * unit;
}

}  // namespace baton::core
