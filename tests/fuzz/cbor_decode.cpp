// Fuzz target: events::decode_cbor against nlohmann::json::from_cbor on any bytes. Both must
// decode to the same value with the same number types, or fail with the same error.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "events/cbor_decode.hpp"
#include "tests/support/json_same.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view in(reinterpret_cast<const char *>(data), size);
  nlohmann::json want, got;
  std::string want_error, got_error;
  try {
    want = nlohmann::json::from_cbor(in.begin(), in.end());
  } catch (const nlohmann::json::exception &e) {
    want_error = e.what();
  }
  try {
    got = baton::events::decode_cbor(in);
  } catch (const nlohmann::json::exception &e) {
    got_error = e.what();
  }
  if (want_error != got_error) std::abort();
  if (want_error.empty() && !baton::test::same_json(want, got)) std::abort();
  return 0;
}
