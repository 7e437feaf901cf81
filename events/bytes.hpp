#pragma once
// Byte-level helpers for keys and the binary envelope: fixed big-endian integers
// (so RocksDB's bytewise order equals numeric order) and LEB128 varints.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace baton::events {

// Copies v over s, a string that keeps its memory from one event to the next (a replay's
// recycled batches, the previous hash of a chain check). Ids of one kind have one length, and
// hashes all have one, so the text often has the length of the one before it: then one
// memcpy, without assign()'s out-of-line checks (~90 instructions a call, several per event
// read). v must not point into s.
inline void copy_into(std::string& s, std::string_view v) {
  if (v.size() == s.size())
    std::memcpy(s.data(), v.data(), v.size());
  else
    s.assign(v.data(), v.size());
}

inline void put_u64be(std::string& out, uint64_t v) {
  char b[8];
  for (int i = 7; i >= 0; --i, v >>= 8) b[i] = static_cast<char>(v & 0xff);
  out.append(b, 8);
}

inline std::string u64be(uint64_t v) {
  std::string s;
  put_u64be(s, v);
  return s;
}

inline uint64_t get_u64be(std::string_view s) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8 && i < s.size(); ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

inline void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Reads a varint at pos; returns false on truncation or overlong encoding.
// Only the shortest encoding of a value is accepted (what put_varint writes), so one value has
// one encoding: a stored record that decodes re-encodes to the same bytes.
inline bool get_varint(std::string_view s, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= s.size()) return false;
    auto byte = static_cast<unsigned char>(s[pos++]);
    if (shift == 63 && byte > 1) return false;  // more than 64 bits
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return byte != 0 || shift == 0;  // a trailing zero byte: not the shortest
  }
  return false;
}

inline void put_bytes(std::string& out, std::string_view b) {
  put_varint(out, b.size());
  out.append(b.data(), b.size());
}

inline bool get_bytes(std::string_view s, size_t& pos, std::string_view& b) {
  uint64_t n;
  if (!get_varint(s, pos, n) || n > s.size() - pos) return false;
  b = s.substr(pos, n);
  pos += n;
  return true;
}

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace baton::events
