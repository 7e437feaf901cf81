#pragma once
// JSON responses, including the error shape every 4xx/5xx uses: {"error", "message", "field"?}.
#include "http/message.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace baton::http {

inline void reply_json(response& res, int status, const nlohmann::json& body) {
  res.status = status;
  // Invalid UTF-8 that came in (a percent-decoded path, a header) is replaced, never thrown:
  // an echo of bad input must not take the request, or the daemon, down.
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

inline void reply_error(response& res, int status, const std::string& code, const std::string& message,
                        const std::string& field = "") {
  nlohmann::json body = {{"error", code}, {"message", message}};
  if (!field.empty()) body["field"] = field;
  reply_json(res, status, body);
}

}  // namespace baton::http
