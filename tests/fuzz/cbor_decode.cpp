// Fuzz target: events::decode_cbor against nlohmann::json::from_cbor on any bytes. Both must
// decode to the same value with the same number types, or fail with the same error (below
// the nesting limit, past which only ours can run). A decoded value is then encoded again by
// events::encode_cbor, which must write the bytes nlohmann::json::to_cbor writes, and written
// as JSON text by events::json_text, which must write what dump() writes (or fail as it does),
// and by events::append_json_of_cbor straight from the bytes, which must write the same.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "events/cbor_encode.hpp"
#include "events/json_text.hpp"
#include "tests/support/cbor_outcome.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // Nested past the limit, nlohmann's decoder would exhaust the stack (it recurses per
  // level): ours refuses without recursing; there is nothing to compare it with.
  if (baton::events::cbor_nests_deeper_than(in, baton::events::max_cbor_nesting)) {
    (void)baton::test::our_cbor(in);
    return 0;
  }
  auto want = baton::test::nlohmann_cbor(in);
  if (!baton::test::same_outcome(want, baton::test::our_cbor(in))) std::abort();
  if (want.ok) {
    auto bytes = nlohmann::json::to_cbor(want.value);
    if (baton::events::encode_cbor(want.value) != std::string(bytes.begin(), bytes.end())) std::abort();
    std::string text, ours;
    try {
      text = want.value.dump();
    } catch (const nlohmann::json::exception& e) {
      text = e.what();
    }
    try {
      ours = baton::events::json_text(want.value);
    } catch (const nlohmann::json::exception& e) {
      ours = e.what();
    }
    if (text != ours) std::abort();
    // Straight from the bytes: the same text or error where it writes at all (it declines forms
    // the log's encoder never writes, and leaves those to the value's way).
    std::string straight;
    try {
      if (!baton::events::append_json_of_cbor(straight, in)) straight = ours;
    } catch (const nlohmann::json::exception& e) {
      straight = e.what();
    }
    if (straight != ours) std::abort();
  }
  return 0;
}
