#pragma once
// The binary form a state snapshot is written in: varints (zigzag for signed), doubles as
// their 8 bytes (bit for bit), length-prefixed strings, and CBOR for the few free-form JSON
// values. Hand-written because a snapshot of a large world must load in well under a second
// (nlohmann's CBOR trees took 35 µs per job each way).
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "events/bytes.hpp"
#include "events/cbor_decode.hpp"

namespace baton::core::snapshot_codec {

struct writer {
  std::string out;
  void u(uint64_t v) { events::put_varint(out, v); }
  void i(int64_t v) { u(events::zigzag(v)); }
  void b(bool v) { out.push_back(v ? 1 : 0); }
  void f(double v) {
    char raw[8];
    std::memcpy(raw, &v, 8);
    out.append(raw, 8);
  }
  void s(std::string_view v) { events::put_bytes(out, v); }
  void strings(const std::vector<std::string>& v) {
    u(v.size());
    for (const auto& x : v) s(x);
  }
  void j(const nlohmann::json& v) {
    if (v.is_array() && v.empty()) return s("");  // the usual case, e.g. progress_codes
    auto bytes = nlohmann::json::to_cbor(v);
    s(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  template <class T, class Put>
  void opt(const std::optional<T>& v, Put put) {
    b(v.has_value());
    if (v) put(*v);
  }
};

struct reader {
  std::string_view in;
  size_t pos = 0;
  [[noreturn]] static void damaged() { throw std::runtime_error("snapshot: truncated or damaged"); }
  uint64_t u() {
    uint64_t v = 0;
    if (!events::get_varint(in, pos, v)) damaged();
    return v;
  }
  int64_t i() { return events::unzigzag(u()); }
  bool b() {
    if (pos >= in.size()) damaged();
    return in[pos++] != 0;
  }
  double f() {
    if (in.size() - pos < 8) damaged();
    double v;
    std::memcpy(&v, in.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string s() {
    std::string_view v;
    if (!events::get_bytes(in, pos, v)) damaged();
    return std::string(v);
  }
  std::vector<std::string> strings() {
    const size_t n = count();
    std::vector<std::string> v;
    v.reserve(n);
    for (size_t k = 0; k < n; ++k) v.push_back(s());
    return v;
  }
  nlohmann::json j() {
    auto bytes = s();
    if (bytes.empty()) return nlohmann::json::array();
    try {
      return events::decode_cbor(bytes);
    } catch (const nlohmann::json::exception&) {
      damaged();
    }
  }
  template <class T, class Get>
  std::optional<T> opt(Get get) {
    if (!b()) return std::nullopt;
    return get();
  }
  size_t count() {  // an element count, bounded by the bytes left (each element takes one at least)
    uint64_t n = u();
    if (n > in.size() - pos) damaged();
    return static_cast<size_t>(n);
  }
};

}  // namespace baton::core::snapshot_codec
