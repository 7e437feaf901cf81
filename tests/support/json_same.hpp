#pragma once
// Two JSON values are the same: equal values of equal types (5 as unsigned is not 5 as
// signed), floats by their bits (so NaN equals NaN), object keys in the same order. Stricter
// than nlohmann's ==, for checking one decoder against another.
#include <cstring>
#include <nlohmann/json.hpp>

namespace baton::test {

inline bool same_json(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y)
      if (x.key() != y.key() || !same_json(*x, *y)) return false;
    return true;
  }
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!same_json(a[i], b[i])) return false;
    return true;
  }
  if (a.is_number_float()) {
    double x = a.get<double>(), y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a == b;
}

}  // namespace baton::test
