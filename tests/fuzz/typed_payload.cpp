// Fuzz target: an event payload read as its type's struct (core/events/event_types.hpp). The first
// byte picks the type. The direct reader (from the CBOR bytes) and the reading through the
// JSON tree agree: what the direct one reads, the other reads to the same bytes; and what
// reads at all is written back and read again to the same bytes. Only exceptions may refuse.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/events/event_types.hpp"

namespace ev = baton::core::ev;
namespace events = baton::events;

namespace {

[[noreturn]] void fail(std::string_view type, const char* what) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(type.size()), type.data(), what);
  std::abort();
}

template <size_t I>
void check(std::string_view bytes) {
  using T = std::variant_alternative_t<I, ev::payload>;
  T fast{};
  events::cbor_cursor c(bytes);
  const bool fast_read = events::described_detail::read_object(c, fast) && c.at_end();
  std::optional<T> slow;
  try {
    slow = events::from_json<T>(events::decode_cbor(bytes));
  } catch (const std::exception&) {
  }
  if (fast_read && !slow) fail(T::type, "the direct reader read what the JSON reading refused");
  if (fast_read && events::to_cbor(fast) != events::to_cbor(*slow)) fail(T::type, "the two readings differ");
  if (slow) {
    const std::string once = events::to_cbor(*slow);
    if (events::to_cbor(events::from_cbor<T>(once)) != once) fail(T::type, "written and read again, it changed");
  }
}

template <size_t... I>
void check_one(size_t which, std::string_view bytes, std::index_sequence<I...>) {
  ((which == I ? check<I>(bytes) : void()), ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  constexpr size_t known = std::variant_size_v<ev::payload> - 1;  // (not unknown_event)
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  check_one(data[0] % known, bytes, std::make_index_sequence<known>{});
  return 0;
}
