#pragma once
// Small builders for append commands used across the tests.
#include <nlohmann/json.hpp>

#include <string>

#include "events/append.hpp"
#include "events/payload.hpp"

namespace baton::test {

inline events::append_command command(const std::string& stream, const std::string& type,
                                      nlohmann::json payload = nlohmann::json::object(), uint64_t expected = events::any_version,
                                      const std::string& command_id = "") {
  events::append_command c;
  c.stream_id = stream;
  c.expected_version = expected;
  c.command_id = command_id;
  c.recorded_at_us = 1'700'000'000'000'000;
  c.actor = "test";
  c.events.push_back({type, 1, events::to_payload(payload)});
  return c;
}

}  // namespace baton::test
