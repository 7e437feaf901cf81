#pragma once
// Which events an audit export takes: a recorded-time window and exact stream, type and actor
// matches. One struct for the HTTP route's command, baton-replay's flags and an export's
// trailer (where it is written as JSON and read back to check the file against the log).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "events/envelope.hpp"

namespace baton::events {

struct event_filter {
  std::optional<int64_t> from_us, to_us;  // recorded_at within [from, to]
  std::string stream, type, actor;        // exact matches ("" any)
  bool matches(const event_view& e) const;
};

// {"from", "to" (RFC 3339), "stream", "type", "actor"}, only those set.
nlohmann::json to_json(const event_filter& f);
event_filter event_filter_from_json(const nlohmann::json& j);

}  // namespace baton::events
