#pragma once
// The one place where the core's typed answers become HTTP: each error kind's status and
// the error body every 4xx/5xx uses ({"detail","error","message","field"?} plus the error's
// facts), and each result's JSON in RelayMD's shapes (JobRead, WorkerRead, poll answers).
#include <nlohmann/json.hpp>

#include "core/outcome.hpp"
#include "http/message.hpp"

namespace baton::http {

int status_of(core::error_kind k);
nlohmann::json error_body(const core::domain_error& e);
// A result's body; null for none. at: the decision time (runtime figures are computed at it).
nlohmann::json body_of(const core::result& r, core::time_us at);
// The whole reply: 204 for a result with nothing to say, 200 with its body, or the error.
void to_response(const core::reply& r, response& res);

}  // namespace baton::http
