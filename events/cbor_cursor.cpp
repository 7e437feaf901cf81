#include "events/cbor_cursor.hpp"

#include <cstring>

namespace baton::events {

using json = nlohmann::json;

bool read_cbor_argument(const uint8_t*& p, const uint8_t* end, uint8_t ai, uint64_t& v) {
  if (ai < 24) {
    v = ai;
    return true;
  }
  if (ai > 27) return false;  // indefinite length or reserved
  const size_t n = size_t{1} << (ai - 24);
  if (static_cast<size_t>(end - p) < n) return false;
  v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  p += n;
  return true;
}

bool cbor_cursor::header(uint8_t major, uint64_t& n) {
  if (p_ == end_ || (*p_ >> 5) != major) return false;
  const uint8_t ai = *p_++ & 31;
  // Each array item takes a byte at least, each map entry two.
  return argument(ai, n) && n <= (major == 5 ? left() / 2 : left());
}

bool cbor_cursor::map_header(uint64_t& n) { return header(5, n); }
bool cbor_cursor::array_header(uint64_t& n) { return header(4, n); }

bool cbor_cursor::text(std::string_view& s) {
  uint64_t n = 0;
  if (p_ == end_ || (*p_ >> 5) != 3) return false;
  const uint8_t ai = *p_++ & 31;
  if (!argument(ai, n) || n > left()) return false;
  s = std::string_view(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
  p_ += n;
  return true;
}

bool cbor_cursor::text(std::string& s) {
  std::string_view v;
  if (!text(v)) return false;
  s.assign(v.data(), v.size());
  return true;
}

bool cbor_cursor::boolean(bool& v) {
  if (p_ == end_ || (*p_ != 0xF4 && *p_ != 0xF5)) return false;
  v = *p_++ == 0xF5;
  return true;
}

bool cbor_cursor::integer(int64_t& v) {
  if (p_ == end_) return false;
  const uint8_t initial = *p_, major = initial >> 5;
  if (major != 0 && major != 1) return false;
  const uint8_t* start = p_++;
  uint64_t n = 0;
  if (!argument(initial & 31, n) || n > static_cast<uint64_t>(INT64_MAX)) {
    p_ = start;
    return false;
  }
  v = major == 0 ? static_cast<int64_t>(n) : static_cast<int64_t>(-1) - static_cast<int64_t>(n);
  return true;
}

bool cbor_cursor::unsigned_integer(uint64_t& v) {
  if (p_ == end_ || (*p_ >> 5) != 0) return false;
  const uint8_t initial = *p_++;
  return argument(initial & 31, v);
}

bool cbor_cursor::number(double& v) {
  if (p_ == end_) return false;
  const uint8_t initial = *p_;
  if ((initial >> 5) == 0) {
    uint64_t n = 0;
    if (!unsigned_integer(n)) return false;
    v = static_cast<double>(n);
    return true;
  }
  if ((initial >> 5) == 1) {
    int64_t n = 0;
    if (!integer(n)) return false;
    v = static_cast<double>(n);
    return true;
  }
  uint64_t n = 0;
  if (initial == 0xFA) {
    ++p_;
    if (!argument(26, n)) return false;
    const auto bits = static_cast<uint32_t>(n);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    v = static_cast<double>(f);
    return true;
  }
  if (initial == 0xFB) {
    ++p_;
    if (!argument(27, n)) return false;
    std::memcpy(&v, &n, sizeof v);
    return true;
  }
  return false;
}

bool cbor_cursor::null() {
  if (p_ == end_ || *p_ != 0xF6) return false;
  ++p_;
  return true;
}

bool cbor_cursor::skip() { return skip(0); }

bool cbor_cursor::skip(int depth) {
  if (p_ == end_ || depth > max_depth) return false;
  const uint8_t initial = *p_;
  uint64_t n = 0;
  switch (initial >> 5) {
    case 0:
      ++p_;
      return argument(initial & 31, n);
    case 1:  // (as value() reads them: nlohmann's int64 range only)
      ++p_;
      return argument(initial & 31, n) && n <= static_cast<uint64_t>(INT64_MAX);
    case 3: {
      std::string_view s;
      return text(s);
    }
    case 4:
      if (!array_header(n)) return false;
      for (uint64_t i = 0; i < n; ++i)
        if (!skip(depth + 1)) return false;
      return true;
    case 5:
      if (!map_header(n)) return false;
      for (uint64_t i = 0; i < n; ++i) {
        std::string_view key;
        if (!text(key) || !skip(depth + 1)) return false;
      }
      return true;
    case 7:
      ++p_;
      switch (initial) {
        case 0xF4:
        case 0xF5:
        case 0xF6:
          return true;
        case 0xFA:
        case 0xFB:
          return argument(initial & 31, n);
        default:
          return false;
      }
    default:
      return false;
  }
}

bool cbor_cursor::value(json& out, int depth) {
  if (p_ == end_ || depth > max_depth) return false;
  const uint8_t initial = *p_;
  uint64_t n = 0;
  switch (initial >> 5) {
    case 0:  // unsigned integer
      ++p_;
      if (!argument(initial & 31, n)) return false;
      out = n;
      return true;
    case 1:  // negative integer -1-n (nlohmann's int64 range only)
      ++p_;
      if (!argument(initial & 31, n) || n > static_cast<uint64_t>(INT64_MAX)) return false;
      out = static_cast<int64_t>(-1) - static_cast<int64_t>(n);
      return true;
    case 3: {
      std::string s;
      if (!text(s)) return false;
      out = std::move(s);
      return true;
    }
    case 4: {
      if (!array_header(n)) return false;
      out = json::array();
      auto& a = *out.get_ptr<json::array_t*>();
      a.resize(static_cast<size_t>(n));
      for (auto& element : a)
        if (!value(element, depth + 1)) return false;
      return true;
    }
    case 5: {  // map with text keys; a repeated key keeps its last value, as nlohmann's does
      if (!map_header(n)) return false;
      out = json::object();
      auto& o = *out.get_ptr<json::object_t*>();
      std::string key;
      for (uint64_t i = 0; i < n; ++i) {
        if (!text(key)) return false;
        auto it = o.emplace_hint(o.end(), std::move(key), nullptr);  // keys come sorted from to_cbor
        if (!value(it->second, depth + 1)) return false;
      }
      return true;
    }
    case 7:
      ++p_;
      switch (initial) {
        case 0xF4:
          out = false;
          return true;
        case 0xF5:
          out = true;
          return true;
        case 0xF6:
          out = nullptr;
          return true;
        case 0xFA: {  // single precision, widened as nlohmann widens it
          if (!argument(initial & 31, n)) return false;
          const auto bits = static_cast<uint32_t>(n);
          float f;
          std::memcpy(&f, &bits, sizeof f);
          out = static_cast<double>(f);
          return true;
        }
        case 0xFB: {
          if (!argument(initial & 31, n)) return false;
          double d;
          std::memcpy(&d, &n, sizeof d);
          out = d;
          return true;
        }
        default:
          return false;  // half floats, undefined, other simple values
      }
    default:
      return false;  // byte strings (nlohmann's binary values), tags
  }
}

}  // namespace baton::events
