#pragma once
// What the log says about batond's own runs (stream "daemon"): how many starts, and whether
// the last run stopped cleanly. Pure: rebuilt by evolve() over the log, like every state.
#include <cstdint>
#include <map>
#include <string>

#include "core/world/world.hpp"
#include "events/envelope.hpp"

namespace baton::daemon {

inline constexpr const char* stream = core::daemon_stream;

struct daemon_state {
  uint64_t starts = 0;
  uint64_t clean_stops = 0;
  bool running = false;  // a start without its stop: the previous run crashed or was killed
  int64_t last_start_us = 0;
  std::string last_version;
  std::map<std::string, int64_t> saved_leases;  // last heartbeats recorded by the last clean stop
};

daemon_state evolve(daemon_state s, const events::event_view& e);

}  // namespace baton::daemon
