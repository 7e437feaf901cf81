#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "projections/projection.hpp"
#include <caf/actor_system.hpp>
#include "http/message.hpp"
#include <nlohmann/json.hpp>

#include "actors/log_writer.hpp"
#include "actors/scheduler.hpp"
#include "http/router.hpp"

namespace baton::http {

// GET /healthz (no token): {"status":"ok","version","last_sequence","commits","events_written",
// "warnings"}; 503 {"status":"unavailable"} when the log writer or the scheduler does not answer
// within 2 s (or the scheduler stopped deciding after a failed write).
// `projections`: the log-fed projections whose progress /healthz reports (applied sequence,
// lag behind the log, failure). `clock`, when given, adds what it returns as "clock": the
// daemon's time and how far the wall clock is from it (batond/daemon_clock.hpp).
void add_health_routes(router& server, caf::actor_system& sys, actors::log_writer_actor log, actors::scheduler_actor scheduler,
                       std::vector<std::shared_ptr<const projections::projection>> projections = {},
                       std::function<nlohmann::json()> clock = {});

// JSON bodies for unknown routes and handler exceptions, so no error leaves as HTML or an empty body.
void add_error_handlers(router& server);

}  // namespace baton::http
