#include "batond/daemon_state.hpp"

#include <optional>

#include "core/events/event_types.hpp"

namespace baton::daemon {

daemon_state evolve(daemon_state s, const events::event_view& e) {
  if (e.stream_id != stream) return s;
  std::optional<core::ev::payload> p;
  try {
    p = core::ev::decode(e.type, e.schema_version, e.payload);
  } catch (const std::exception&) {
    // An undecodable payload loses what it held (the version, the saved leases), not the start or stop.
  }
  if (e.type == core::ev::daemon_started::type) {
    s.running = true;
    const auto* started = p ? std::get_if<core::ev::daemon_started>(&*p) : nullptr;
    s.last_version = started ? started->version : "";
    s.saved_leases.clear();
  } else if (e.type == core::ev::daemon_stopped::type) {
    s.running = false;
    const auto* stopped = p ? std::get_if<core::ev::daemon_stopped>(&*p) : nullptr;
    s.saved_leases = stopped ? stopped->worker_last_heartbeats_us : std::map<std::string, int64_t>{};
  }
  return s;
}

}  // namespace baton::daemon
