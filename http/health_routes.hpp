#pragma once
#include <caf/actor_system.hpp>
#include <httplib.h>

#include "actors/log_writer.hpp"

namespace baton::http {

// GET /healthz (no token): {"status":"ok","version","last_sequence","commits","events_written"};
// 503 {"status":"unavailable"} when the log writer does not answer within 2 s.
void add_health_routes(httplib::Server& server, caf::actor_system& sys, actors::log_writer_actor log);

// JSON bodies for unknown routes and handler exceptions, so no error leaves as HTML or an empty body.
void add_error_handlers(httplib::Server& server);

}  // namespace baton::http
