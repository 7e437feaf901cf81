#pragma once
#include <caf/actor_system.hpp>
#include "http/message.hpp"

#include "actors/log_writer.hpp"
#include "actors/scheduler.hpp"
#include "http/router.hpp"

namespace baton::http {

// GET /healthz (no token): {"status":"ok","version","last_sequence","commits","events_written",
// "warnings"}; 503 {"status":"unavailable"} when the log writer or the scheduler does not answer
// within 2 s (or the scheduler stopped deciding after a failed write).
void add_health_routes(router& server, caf::actor_system& sys, actors::log_writer_actor log,
                       actors::scheduler_actor scheduler);

// JSON bodies for unknown routes and handler exceptions, so no error leaves as HTML or an empty body.
void add_error_handlers(router& server);

}  // namespace baton::http
