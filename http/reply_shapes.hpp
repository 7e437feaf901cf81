#pragma once
// The one place where the core's typed answers become HTTP: each error kind's status, and the
// whole reply with its body in the API's shapes (shapes/reply_json.hpp, shared with
// baton-replay).
#include <nlohmann/json.hpp>

#include "core/app/outcome.hpp"
#include "http/message.hpp"
#include "shapes/reply_json.hpp"

namespace baton::http {

using shapes::body_of;
using shapes::error_body;

int status_of(core::error_kind k);
// The whole reply: 204 for a result with nothing to say, 200 with its body, or the error.
void to_response(const core::reply& r, response& res);

}  // namespace baton::http
