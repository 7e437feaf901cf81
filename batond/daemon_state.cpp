#include "batond/daemon_state.hpp"

#include "events/payload.hpp"

namespace baton::daemon {

daemon_state evolve(daemon_state s, const events::event_view& e) {
  if (e.stream_id != stream) return s;
  if (e.type == started_type) {
    ++s.starts;
    s.running = true;
    s.last_start_us = e.recorded_at_us;
    try {
      s.last_version = events::from_payload(e.payload).value("version", "");
    } catch (const nlohmann::json::exception&) {
      s.last_version = "";  // an undecodable payload loses the version, not the run count
    }
    s.saved_leases.clear();
  } else if (e.type == stopped_type) {
    ++s.clean_stops;
    s.running = false;
    try {
      s.saved_leases = events::from_payload(e.payload).value("worker_last_heartbeats_us", std::map<std::string, int64_t>{});
    } catch (const nlohmann::json::exception&) {
      s.saved_leases.clear();
    }
  }
  return s;
}

}  // namespace baton::daemon
