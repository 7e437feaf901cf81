#pragma once
// Times as text: UTC, ISO 8601 / RFC 3339, from and to µs since the Unix epoch.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::util {

// The forms baton writes. They differ on purpose, each fixed by what reads it.
enum class time_form {
  micros,   // 2030-01-01T12:00:00.250000Z  the API, the log's JSON, the SQL views, anchors
  millis,   // 2030-01-01T12:00:00.250Z     checkpoint manifests (RelayMD's)
  seconds,  // 2030-01-01T12:00:00Z         what the worker sends batond (allocation ends)
  basic,    // 20300101T120000Z             SigV4's x-amz-date, log backup names
};

// Any int64 µs; the fraction is rounded down, not to nearest. Years outside 1000-9999 come
// out as the C library writes them (strftime's %Y).
std::string format_time_us(int64_t us, time_form form = time_form::micros);

// The inverse for times clients send: RFC 3339, "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)"
// ('T' may be 't' or a space; fraction digits beyond µs are dropped). An offset is required:
// a bare local time is ambiguous. nullopt when malformed or out of range.
std::optional<int64_t> parse_time_us(std::string_view text);

}  // namespace baton::util
