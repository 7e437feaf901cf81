#pragma once
// What a CBOR decoder made of some bytes: the value, or its error's text. For checking
// events::decode_cbor against nlohmann's from_cbor (tests/cbor_decode_test.cpp and the
// cbor_decode fuzz target).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "events/cbor_decode.hpp"
#include "tests/support/json_same.hpp"

namespace baton::test {

struct cbor_outcome {
  bool ok = false;
  nlohmann::json value;
  std::string error;
};

template <class Decode>
cbor_outcome cbor_outcome_of(Decode&& decode) {
  try {
    return {true, decode(), {}};
  } catch (const nlohmann::json::exception& e) {
    return {false, {}, e.what()};
  }
}

inline cbor_outcome nlohmann_cbor(std::string_view in) {
  return cbor_outcome_of([&] { return nlohmann::json::from_cbor(in.begin(), in.end()); });
}

inline cbor_outcome our_cbor(std::string_view in) {
  return cbor_outcome_of([&] { return events::decode_cbor(in); });
}

// The same value (same_json) or the same error.
inline bool same_outcome(const cbor_outcome& a, const cbor_outcome& b) {
  return a.ok == b.ok && (a.ok ? same_json(a.value, b.value) : a.error == b.error);
}

}  // namespace baton::test
