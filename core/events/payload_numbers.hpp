#pragma once
// Numbers read from a stored event's payload (or a decision's recorded settings). batond wrote
// them, but a log is a file: a damaged or hand-made one must not make a read undefined, as
// nlohmann's value()/get() do when a float lies outside the integer's range (5e199 read as an
// int), nor a later product overflow. Absent, not a number, or out of range: the fallback.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "events/described.hpp"

namespace baton::core {

// A JSON value read as a number of type T: nothing when it is not a number or out of T's range.
template <class T>
std::optional<T> number_value(const nlohmann::json& v) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "numbers only");
  if (!v.is_number()) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    return v.template get<T>();
  } else {
    return events::described_detail::integer_of<T>(v);  // (one rule with the typed payloads' reader)
  }
}

// The number at `key`, or nothing when number_or would give its fallback.
template <class T>
std::optional<T> number_if(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);  // (a payload that is not an object has no keys: the fallback)
  if (it == j.end()) return std::nullopt;
  return number_value<T>(*it);
}

template <class T>
T number_or(const nlohmann::json& j, const char* key, T fallback) {
  return number_if<T>(j, key).value_or(fallback);
}

// A count read as number_or, then times unit (e.g. seconds to microseconds): the fallback
// (already in the unit) when the product would not fit.
inline int64_t scaled_or(const nlohmann::json& j, const char* key, int64_t fallback, int64_t unit) {
  const int64_t n = number_or<int64_t>(j, key, fallback / unit);
  if (n > std::numeric_limits<int64_t>::max() / unit || n < std::numeric_limits<int64_t>::min() / unit) return fallback;
  return n * unit;
}

}  // namespace baton::core
