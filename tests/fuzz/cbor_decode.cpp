// Fuzz target: events::decode_cbor against nlohmann::json::from_cbor on any bytes. Both must
// decode to the same value with the same number types, or fail with the same error.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tests/support/cbor_outcome.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view in(reinterpret_cast<const char *>(data), size);
  if (!baton::test::same_outcome(baton::test::nlohmann_cbor(in), baton::test::our_cbor(in))) std::abort();
  return 0;
}
