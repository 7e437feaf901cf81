#pragma once
// Job and worker ids are UUIDs (8-4-4-4-12 hex digits), as RelayMD's; stored lower-case.
#include <optional>
#include <string>

namespace baton::core {

// The id in canonical (lower-case) form, or nullopt when it is not a UUID.
inline std::optional<std::string> canonical_uuid(const std::string& s) {
  if (s.size() != 36) return std::nullopt;
  std::string out = s;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return std::nullopt;
      continue;
    }
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
    out[i] = c;
  }
  return out;
}

}  // namespace baton::core
