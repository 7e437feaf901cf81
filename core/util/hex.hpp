#pragma once
// Bytes as hex text and back: chain hashes, blob digests, secrets, UUIDs. Lower-case on the way
// out everywhere (stored hashes and blob names compare as text).
#include <optional>
#include <string>
#include <string_view>

namespace baton::util {

// Two lower-case hex digits a byte.
std::string to_hex(std::string_view bytes);
// The bytes back; upper-case digits are read too. nullopt for an odd length or a non-hex digit.
std::optional<std::string> from_hex(std::string_view hex);
// Whether s is exactly `digits` lower-case hex digits (64: how a SHA-256 names a blob).
bool is_lower_hex(std::string_view s, size_t digits);
// 16 bytes as a UUID's text: 8-4-4-4-12 lower-case hex digits.
std::string uuid_text(std::string_view sixteen_bytes);

}  // namespace baton::util
