#include "events/cbor_decode.hpp"

#include <cstdint>
#include <cstring>
#include <string>

namespace baton::events {
namespace {

using json = nlohmann::json;

// Reads the common subset; returns false (leaving `out` unspecified) on anything it does not
// read itself, so the caller can hand the whole input to nlohmann.
class reader {
 public:
  explicit reader(std::string_view in)
      : p_(reinterpret_cast<const uint8_t*>(in.data())), end_(p_ + in.size()) {}

  bool whole(json& out) { return value(out, 0) && p_ == end_; }

 private:
  static constexpr int max_depth = 512;  // deeper nesting is left to nlohmann, as before
  const uint8_t* p_;
  const uint8_t* end_;

  size_t left() const { return static_cast<size_t>(end_ - p_); }

  // The argument of an initial byte with additional info `ai` (RFC 8949 §3).
  bool argument(uint8_t ai, uint64_t& v) {
    if (ai < 24) {
      v = ai;
      return true;
    }
    if (ai > 27) return false;  // indefinite length or reserved
    const size_t n = size_t{1} << (ai - 24);
    if (left() < n) return false;
    v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | p_[i];
    p_ += n;
    return true;
  }

  bool text(uint8_t initial, std::string& s) {
    uint64_t n = 0;
    if ((initial >> 5) != 3 || !argument(initial & 31, n) || n > left()) return false;
    s.assign(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
    p_ += n;
    return true;
  }

  bool value(json& out, int depth) {
    if (p_ == end_ || depth > max_depth) return false;
    const uint8_t initial = *p_++;
    const uint8_t ai = initial & 31;
    uint64_t n = 0;
    switch (initial >> 5) {
      case 0:  // unsigned integer
        if (!argument(ai, n)) return false;
        out = n;
        return true;
      case 1:  // negative integer -1-n (nlohmann's int64 range only)
        if (!argument(ai, n) || n > static_cast<uint64_t>(INT64_MAX)) return false;
        out = static_cast<int64_t>(-1) - static_cast<int64_t>(n);
        return true;
      case 3: {
        std::string s;
        if (!text(initial, s)) return false;
        out = std::move(s);
        return true;
      }
      case 4: {  // array; each element takes one byte at least, so a bogus count cannot allocate
        if (!argument(ai, n) || n > left()) return false;
        out = json::array();
        auto& a = *out.get_ptr<json::array_t*>();
        a.resize(static_cast<size_t>(n));
        for (auto& element : a)
          if (!value(element, depth + 1)) return false;
        return true;
      }
      case 5: {  // map with text keys; a repeated key keeps its last value, as nlohmann's does
        if (!argument(ai, n) || n > left() / 2) return false;
        out = json::object();
        auto& o = *out.get_ptr<json::object_t*>();
        std::string key;
        for (uint64_t i = 0; i < n; ++i) {
          if (p_ == end_ || !text(*p_++, key)) return false;
          auto it = o.emplace_hint(o.end(), std::move(key), nullptr);  // keys come sorted from to_cbor
          if (!value(it->second, depth + 1)) return false;
        }
        return true;
      }
      case 7:
        switch (initial) {
          case 0xF4: out = false; return true;
          case 0xF5: out = true; return true;
          case 0xF6: out = nullptr; return true;
          case 0xFA: {  // single precision, widened as nlohmann widens it
            if (!argument(ai, n)) return false;
            const auto bits = static_cast<uint32_t>(n);
            float f;
            std::memcpy(&f, &bits, sizeof f);
            out = static_cast<double>(f);
            return true;
          }
          case 0xFB: {
            if (!argument(ai, n)) return false;
            double d;
            std::memcpy(&d, &n, sizeof d);
            out = d;
            return true;
          }
          default: return false;  // half floats, undefined, other simple values
        }
      default: return false;  // byte strings (nlohmann's binary values), tags
    }
  }
};

}  // namespace

bool decode_common_cbor(std::string_view bytes, json& out) { return reader(bytes).whole(out); }

json decode_cbor(std::string_view bytes) {
  json out;
  if (decode_common_cbor(bytes, out)) return out;
  return json::from_cbor(bytes.begin(), bytes.end());
}

}  // namespace baton::events
