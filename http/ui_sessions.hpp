#pragma once
// The web dashboard's logins: a browser signs in once with an operator token and then holds
// only an opaque session id in an HttpOnly, SameSite=Strict cookie. The session keeps the
// token it was opened with (in memory only, never logged or written), and every request
// checks that token again, so revoking an operator ends their sessions at once. Each session
// has its own CSRF token, which every state-changing request sent with the cookie must carry
// (X-CSRF-Token); the check lives with the other credential checks (http/caller.hpp).
//
// Bounded: a session lives `ttl` from its login; beyond `max_sessions` the one closest to
// expiring goes. A restart of batond ends every session (the browser logs in again).
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "core/domain.hpp"

namespace baton::http {

struct ui_session {
  std::string credential;     // the operator token presented at login
  std::string declared_name;  // what the admin token's holder called themselves (X-Baton-Operator)
  std::string csrf;
  core::time_us expires = 0;
};

class ui_sessions {
 public:
  explicit ui_sessions(size_t max_sessions = 10000, core::time_us ttl_us = core::time_us{12} * 3600 * 1'000'000)
      : max_(max_sessions), ttl_(ttl_us) {}

  // Opens a session under `id` (random, chosen by the caller) and returns it.
  ui_session open(const std::string& id, std::string credential, std::string declared_name, std::string csrf,
                  core::time_us now);
  // The live session with this id; an expired one is forgotten.
  std::optional<ui_session> find(const std::string& id, core::time_us now);
  void close(const std::string& id);
  size_t size() const;
  core::time_us ttl_us() const { return ttl_; }

 private:
  mutable std::mutex mu_;
  const size_t max_;
  const core::time_us ttl_;
  std::map<std::string, ui_session> by_id_;
};

// The session cookie's name, and the value of a cookie in a request's Cookie headers ("" = none).
inline constexpr const char* session_cookie = "baton_session";

}  // namespace baton::http
