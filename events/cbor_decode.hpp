#pragma once
// CBOR → JSON value, as nlohmann::json::from_cbor gives it, about twice as fast. Payloads are
// decoded once per event by every reader of the log (start-up replay, the projections,
// baton-replay); nlohmann's decoder spent most of a replay's reading thread. This one reads
// the encodings nlohmann::json::to_cbor writes for JSON values (definite lengths, integers,
// single and double floats, text strings, false/true/null) straight into the tree. Anything
// else (half floats, byte strings, tags, indefinite lengths, malformed or truncated input) is
// handed to nlohmann's own decoder, so every result and every error is exactly its.
#include <nlohmann/json.hpp>
#include <string_view>

namespace baton::events {

// Throws what nlohmann::json::from_cbor throws (a json::exception) on input that is not one
// CBOR item: its strict mode.
nlohmann::json decode_cbor(std::string_view bytes);

// The fast path alone: false (out unspecified) where decode_cbor hands the input to nlohmann.
bool decode_common_cbor(std::string_view bytes, nlohmann::json& out);

}  // namespace baton::events
