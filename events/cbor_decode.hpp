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
// CBOR item: its strict mode. One exception: an item whose arrays, maps and tags nest deeper
// than max_cbor_nesting is refused with a parse error of its own (112, "nested deeper than
// ... levels"), where nlohmann's decoder, which recurses once per level, would exhaust the
// stack on a few thousand bytes (batond refuses request bodies nested past 64 levels, so no
// log it wrote holds one).
constexpr int max_cbor_nesting = 512;
nlohmann::json decode_cbor(std::string_view bytes);

// Whether the bytes nest arrays, maps and tags deeper than `limit` before they end or stop
// being CBOR (false for malformed bytes that do not get that deep: the decoder reports those).
// Iterative: any depth is safe to ask about.
bool cbor_nests_deeper_than(std::string_view bytes, int limit);

// The fast path alone: false (out unspecified) where decode_cbor hands the input to nlohmann.
bool decode_common_cbor(std::string_view bytes, nlohmann::json& out);

}  // namespace baton::events
