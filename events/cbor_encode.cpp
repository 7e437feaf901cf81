#include "events/cbor_encode.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace baton::events {

namespace {

using nlohmann::json;

template <class T>
void put_big_endian(T v, std::string& out) {
  char b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<char>(v >> (8 * (sizeof(T) - 1 - i)));
  out.append(b, sizeof(T));
}

}  // namespace

void encode_cbor_head_wide(uint8_t major, uint64_t n, std::string& out) {
  if (n <= std::numeric_limits<uint8_t>::max()) {
    out.push_back(static_cast<char>(major + 0x18));
    out.push_back(static_cast<char>(n));
  } else if (n <= std::numeric_limits<uint16_t>::max()) {
    out.push_back(static_cast<char>(major + 0x19));
    put_big_endian(static_cast<uint16_t>(n), out);
  } else if (n <= std::numeric_limits<uint32_t>::max()) {
    out.push_back(static_cast<char>(major + 0x1A));
    put_big_endian(static_cast<uint32_t>(n), out);
  } else {
    out.push_back(static_cast<char>(major + 0x1B));
    put_big_endian(n, out);
  }
}

void encode_cbor_integer(int64_t n, std::string& out) {
  if (n >= 0)
    encode_cbor_head(0x00, static_cast<uint64_t>(n), out);
  else
    encode_cbor_head(0x20, static_cast<uint64_t>(-1 - n), out);
}

// NaN and the infinities as half floats; a double that a float holds exactly as a float;
// any other as a double.
void encode_cbor_float(double d, std::string& out) {
  if (std::isnan(d)) {
    out.append("\xF9\x7E\x00", 3);
  } else if (std::isinf(d)) {
    out.append(d > 0 ? "\xF9\x7C\x00" : "\xF9\xFC\x00", 3);
  } else if (d >= static_cast<double>(std::numeric_limits<float>::lowest()) &&
             d <= static_cast<double>(std::numeric_limits<float>::max()) && static_cast<double>(static_cast<float>(d)) == d) {
    const float f = static_cast<float>(d);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    out.push_back('\xFA');
    put_big_endian(bits, out);
  } else {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    out.push_back('\xFB');
    put_big_endian(bits, out);
  }
}

namespace {

void put_binary(const json::binary_t& b, std::string& out) {
  if (b.has_subtype()) {  // a tag: to_cbor writes one below 24 in a byte of its own too
    const uint64_t tag = b.subtype();
    if (tag <= std::numeric_limits<uint8_t>::max()) {
      out.push_back('\xD8');
      out.push_back(static_cast<char>(tag));
    } else {
      encode_cbor_head(0xC0, tag, out);
    }
  }
  encode_cbor_head(0x40, b.size(), out);
  out.append(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace

void encode_cbor(const json& v, std::string& out) {
  switch (v.type()) {
    case json::value_t::null:
      out.push_back('\xF6');
      break;
    case json::value_t::boolean:
      out.push_back(v.get<bool>() ? '\xF5' : '\xF4');
      break;
    case json::value_t::number_integer:
      encode_cbor_integer(v.get<int64_t>(), out);
      break;
    case json::value_t::number_unsigned:
      encode_cbor_unsigned(v.get<uint64_t>(), out);
      break;
    case json::value_t::number_float:
      encode_cbor_float(v.get<double>(), out);
      break;
    case json::value_t::string:
      encode_cbor_text(v.get_ref<const std::string&>(), out);
      break;
    case json::value_t::array: {
      const auto& a = v.get_ref<const json::array_t&>();
      encode_cbor_head(0x80, a.size(), out);
      for (const auto& e : a) encode_cbor(e, out);
      break;
    }
    case json::value_t::object: {
      const auto& o = v.get_ref<const json::object_t&>();
      encode_cbor_head(0xA0, o.size(), out);
      for (const auto& [key, value] : o) {
        encode_cbor_text(key, out);
        encode_cbor(value, out);
      }
      break;
    }
    case json::value_t::binary:
      put_binary(v.get_binary(), out);
      break;
    case json::value_t::discarded:
    default:
      break;  // nothing, as to_cbor writes for it
  }
}

}  // namespace baton::events
