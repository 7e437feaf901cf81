#pragma once
// A reader that walks CBOR item by item, for readers that want a few fields of a payload
// without building its JSON tree (events/described.hpp's reader). It reads the encodings
// nlohmann::json::to_cbor writes for JSON values: definite lengths, integers, single and
// double floats, text strings, false/true/null. Every read answers false on anything else
// (another kind of item, half floats, byte strings, tags, indefinite lengths, truncated
// input), after which the cursor's position is unspecified: the caller then declines and
// takes the ordinary path (events/cbor_decode.hpp), which gives the exact result or error.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace baton::events {

// The argument of an initial byte with additional info `ai` (RFC 8949 §3), read from `p`
// (advanced past it). False for an indefinite length, a reserved value or too few bytes.
bool read_cbor_argument(const uint8_t*& p, const uint8_t* end, uint8_t ai, uint64_t& v);

class cbor_cursor {
 public:
  explicit cbor_cursor(std::string_view in) : p_(reinterpret_cast<const uint8_t*>(in.data())), end_(p_ + in.size()) {}

  bool at_end() const { return p_ == end_; }
  // The next item's initial byte (-1 at the end), read without moving.
  int peek() const { return p_ == end_ ? -1 : *p_; }
  // Bytes not read yet: two readings' difference spans the items read in between.
  size_t remaining() const { return left(); }

  // The header of a map (n key/value pairs follow) or an array (n items follow). A count
  // the remaining bytes cannot hold is refused, so a bogus one cannot make a caller reserve.
  bool map_header(uint64_t& n);
  bool array_header(uint64_t& n);
  // A text string; the view points into the input.
  bool text(std::string_view& s);
  bool text(std::string& s);
  bool boolean(bool& v);
  // A JSON number as nlohmann reads it: an integer that fits int64 (or uint64, unsigned), or a
  // single or double float (integer(), unsigned_integer() refuse floats; number() takes all).
  bool integer(int64_t& v);
  bool unsigned_integer(uint64_t& v);
  bool number(double& v);
  // Steps over a null and answers true; false (nothing read) for anything else.
  bool null();
  // The next item, whatever it is (of the subset above), as decode_cbor would give it.
  bool item(nlohmann::json& out) { return value(out, 0); }
  // Steps over the next item.
  bool skip();

 private:
  static constexpr int max_depth = 512;  // deeper nesting is left to nlohmann's decoder
  const uint8_t* p_;
  const uint8_t* end_;

  size_t left() const { return static_cast<size_t>(end_ - p_); }
  bool argument(uint8_t ai, uint64_t& v) { return read_cbor_argument(p_, end_, ai, v); }
  bool header(uint8_t major, uint64_t& n);
  bool value(nlohmann::json& out, int depth);
  bool skip(int depth);
};

}  // namespace baton::events
