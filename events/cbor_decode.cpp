#include "events/cbor_decode.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "events/cbor_cursor.hpp"

namespace baton::events {

bool decode_common_cbor(std::string_view bytes, nlohmann::json& out) {
  cbor_cursor c(bytes);
  return c.item(out) && c.at_end();
}

bool cbor_nests_deeper_than(std::string_view bytes, int limit) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const auto* end = p + bytes.size();
  // Open containers: items still to come in each (UINT64_MAX: indefinite, until a break).
  std::vector<uint64_t> open;
  constexpr uint64_t indefinite = UINT64_MAX;
  do {
    if (p == end) return false;
    const uint8_t initial = *p++;
    const uint8_t major = initial >> 5, ai = initial & 31;
    if (initial == 0xFF) {  // a break ends the innermost indefinite container
      if (open.empty() || open.back() != indefinite) return false;
      open.pop_back();
    } else {
      const bool unbounded = ai == 31;
      uint64_t n = 0;
      if (unbounded ? major == 0 || major == 1 || major == 6 || major == 7 : !read_cbor_argument(p, end, ai, n))
        return false;      // an indefinite length where none can be, a reserved value, or truncated
      uint64_t items = 0;  // what this item opens
      switch (major) {
        case 2:
        case 3:  // a string: its bytes, or (indefinite) its chunks until a break
          if (unbounded) {
            items = indefinite;
          } else {
            if (n > static_cast<uint64_t>(end - p)) return false;
            p += n;
          }
          break;
        case 4:
          items = unbounded ? indefinite : n;
          break;
        case 5:
          items = unbounded ? indefinite : (n > UINT64_MAX / 2 ? indefinite - 1 : 2 * n);
          break;
        case 6:
          items = 1;
          break;  // a tag wraps one item
        default:
          break;  // integers, simple values, floats
      }
      if (items != 0) {
        open.push_back(items);
        if (static_cast<int>(open.size()) > limit) return true;
        continue;  // its first item comes next
      }
    }
    // An item ended: count it against its container, and close every container it fills.
    while (!open.empty() && open.back() != indefinite && --open.back() == 0) open.pop_back();
  } while (!open.empty());
  return false;
}

nlohmann::json decode_cbor(std::string_view bytes) {
  nlohmann::json out;
  if (decode_common_cbor(bytes, out)) return out;
  if (cbor_nests_deeper_than(bytes, max_cbor_nesting))
    throw nlohmann::json::parse_error::create(
        112, 0, "syntax error while parsing CBOR value: nested deeper than " + std::to_string(max_cbor_nesting) + " levels",
        nullptr);
  return nlohmann::json::from_cbor(bytes.begin(), bytes.end());
}

}  // namespace baton::events
