// Fuzz target: events::decode_cbor against nlohmann::json::from_cbor on any bytes. Both must
// decode to the same value with the same number types, or fail with the same error (below
// the nesting limit, past which only ours can run).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tests/support/cbor_outcome.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view in(reinterpret_cast<const char *>(data), size);
  // Nested past the limit, nlohmann's decoder would exhaust the stack (it recurses per
  // level): ours refuses without recursing; there is nothing to compare it with.
  if (baton::events::cbor_nests_deeper_than(in, baton::events::max_cbor_nesting)) {
    (void)baton::test::our_cbor(in);
    return 0;
  }
  if (!baton::test::same_outcome(baton::test::nlohmann_cbor(in), baton::test::our_cbor(in))) std::abort();
  return 0;
}
