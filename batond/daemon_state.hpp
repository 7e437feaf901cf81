#pragma once
// What the log says about batond's own runs (stream "daemon"): whether the last run stopped
// cleanly, its version, the leases it saved. Pure: rebuilt by evolve() over the log, like every state.
#include <cstdint>
#include <map>
#include <string>

#include "core/world/world.hpp"
#include "events/envelope.hpp"

namespace baton::daemon {

inline constexpr const char* stream = core::daemon_stream;

struct daemon_state {
  bool running = false;  // a start without its stop: the previous run crashed or was killed
  std::string last_version;
  std::map<std::string, int64_t> saved_leases;  // last heartbeats recorded by the last clean stop
};

daemon_state evolve(daemon_state s, const events::event_view& e);

}  // namespace baton::daemon
