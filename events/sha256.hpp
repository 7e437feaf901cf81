#pragma once
#include <string>
#include <string_view>

namespace baton::events {

constexpr size_t hash_size = 32;

// SHA-256 of a ‖ b as 32 raw bytes. Thread-safe (one digest context per thread).
std::string sha256(std::string_view a, std::string_view b = {});
// The same into `out` (hash_size bytes), allocating nothing: a replay checks one per event.
void sha256_into(std::string_view a, std::string_view b, unsigned char* out);

}  // namespace baton::events
