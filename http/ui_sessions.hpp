#pragma once
// The web dashboard's logins: a browser signs in once with an operator token and then holds
// only an opaque session id in an HttpOnly, SameSite=Strict cookie. The session keeps the
// token it was opened with (in memory only, never logged or written), and every request
// checks that token again, so revoking an operator ends their sessions at once. Each session
// has its own CSRF token, which every state-changing request sent with the cookie must carry
// (X-CSRF-Token); the check lives with the other credential checks (http/caller.hpp).
//
// Bounded: a session lives `ttl` from its login; an operator holds at most `max_per_owner`
// (their oldest goes), and all together at most `max_sessions`, beyond which a login is
// refused: one operator's logins never end another's session (10,000 logins in 3 s had).
// A restart of batond ends every session (the browser logs in again).
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/events/domain.hpp"
#include "core/access/rate_limit.hpp"

namespace baton::http {

struct ui_session {
  std::string credential;     // the operator token presented at login
  std::string declared_name;  // what the admin token's holder called themselves (X-Baton-Operator)
  std::string csrf;
  core::time_us expires = 0;
  std::string owner;  // whose: one key per operator (rate_limiter::key_of)
};

class ui_sessions {
 public:
  explicit ui_sessions(size_t max_sessions = 10000, core::time_us ttl_us = core::time_us{12} * 3600 * 1'000'000,
                       size_t max_per_owner = 16)
      : max_(max_sessions), max_per_owner_(max_per_owner), ttl_(ttl_us) {}

  // Opens a session under `id` (random, chosen by the caller) for `owner` and returns it;
  // empty when every place is another operator's live session.
  std::optional<ui_session> open(const std::string& id, std::string owner, std::string credential, std::string declared_name,
                                 std::string csrf, core::time_us now);
  // The live session with this id; an expired one is forgotten.
  std::optional<ui_session> find(const std::string& id, core::time_us now);
  void close(const std::string& id);
  size_t size() const;
  core::time_us ttl_us() const { return ttl_; }

 private:
  using by_id = std::map<std::string, ui_session>;
  void drop(by_id::iterator it);  // (mu_ held)

  mutable std::mutex mu_;
  const size_t max_;
  const size_t max_per_owner_;
  const core::time_us ttl_;
  by_id by_id_;
  std::unordered_map<std::string, std::deque<std::string>> by_owner_;  // ids, oldest login first
};

// Failed dashboard logins, one token bucket per client address (client_group) and one per
// operator name (the "<name>." of a named operator's token); a failure takes a token from
// both. While either is empty, every login from that address or for that name is refused
// before its token is looked at, so guessing runs at the refill rate (wrong tokens had been
// tried at 4,300/s). A bucket that has refilled is forgotten, so made-up names and addresses
// cannot grow the tables for long.
class login_failures {
 public:
  explicit login_failures(core::bucket_rule rule) : rule_(rule) {}
  struct refusal {
    core::time_us wait_us;
    const char* limit;  // login_failures_per_address or login_failures_per_operator
  };
  // Empty: the login may be tried.
  std::optional<refusal> check(const std::string& address, const std::string& name, core::time_us now);
  void failed(const std::string& address, const std::string& name, core::time_us now);

 private:
  using buckets = std::unordered_map<std::string, core::token_bucket>;
  void forget_refilled(buckets& b, core::time_us now);  // (mu_ held)

  std::mutex mu_;
  const core::bucket_rule rule_;
  buckets by_address_, by_name_;
  size_t forget_at_ = 1024;  // both tables together; doubled past what a sweep leaves
};

// The dashboard session cookie's name (cookie_value in http/caller.hpp reads it).
inline constexpr const char* session_cookie = "baton_session";

}  // namespace baton::http
