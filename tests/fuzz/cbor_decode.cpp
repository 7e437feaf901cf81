// Fuzz target: events::decode_cbor against nlohmann::json::from_cbor on any bytes. Both must
// decode to the same value with the same number types, or fail with the same error.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "events/cbor_decode.hpp"

namespace {

using nlohmann::json;

bool same(const json &a, const json &b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y)
      if (x.key() != y.key() || !same(*x, *y)) return false;
    return true;
  }
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  }
  if (a.is_number_float()) {
    double x = a.get<double>(), y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view in(reinterpret_cast<const char *>(data), size);
  json want, got;
  std::string want_error, got_error;
  try {
    want = json::from_cbor(in.begin(), in.end());
  } catch (const json::exception &e) {
    want_error = e.what();
  }
  try {
    got = baton::events::decode_cbor(in);
  } catch (const json::exception &e) {
    got_error = e.what();
  }
  if (want_error != got_error) std::abort();
  if (want_error.empty() && !same(want, got)) std::abort();
  return 0;
}
