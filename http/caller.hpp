#pragma once
// Who is calling, settled before anything else in a request is looked at: the credential
// (a worker's X-Worker-Token, an operator's X-API-Token, or the dashboard's session cookie
// with its CSRF token), then whether that caller may send this kind of command at all
// (core::authorize) and their request budget. Every route goes through here.
#include <optional>
#include <string>

#include "core/access/access.hpp"
#include "core/app/commands.hpp"
#include "http/api_routes.hpp"
#include "http/message.hpp"
#include "http/ui_sessions.hpp"

namespace baton::http {

// Answers res with the error's status and JSON body.
void refuse(response& res, const core::domain_error& e);
// 429 rate_limited: "<what> (<limit>); retry after N s", the limit's name in the body, and
// Retry-After: the wait in whole seconds, rounded up.
void refuse_over_limit(response& res, const std::string& what, const std::string& limit, core::time_us wait_us);

// The tokens batond hands out (workers', named operators') are "<owner>.<secret>": the owner
// finds the stored hash, and only SHA-256(secret) is ever kept.
std::string hash_of(const std::string& secret);
std::string token_of(const std::string& owner, const std::string& secret);

// The caller of req, from its credential alone; empty when res holds the 401/403 (no,
// forged or malformed credential; an unsafe method on a session without its CSRF token).
std::optional<core::principal> identify(const api_context& ctx, const request& req, response& res);
// An operator token as X-API-Token would present it (also the dashboard's login); the admin
// token's holder is named `declared_name`. Empty when res holds the 401.
std::optional<core::principal> identify_operator(const api_context& ctx, const std::string& token,
                                                 const std::string& declared_name, response& res);

// core::authorize() of `who` for `kind` (`named`: the worker or operator a self-only kind
// names), then their request budget; false when res holds the 403 or 429.
bool allowed(const api_context& ctx, const core::principal& who, core::command_kind kind, const std::string& named,
             response& res);
// identify(), then allowed(), then the headers recorded with the request; an envelope with the
// caller, the actor to record and the request id, or empty when res holds the refusal.
std::optional<core::envelope> admit(const api_context& ctx, const request& req, response& res, core::command_kind kind);
// The scheduler's reply, waited for (up to 30 s: for routes that reshape it, on the server's
// pool); empty when res holds the 503.
std::optional<core::reply> ask(const api_context& ctx, core::envelope e, response& res);

// The value of a cookie in the request's Cookie headers ("" when absent).
std::string cookie_value(const request& req, const std::string& name);

// The live dashboard session req's cookie names (empty: no cookie, an ended session, or
// sessions off). Its credential is not checked here: identify_operator() does that.
struct session_found {
  std::string id;
  ui_session s;
};
std::optional<session_found> session_of(const api_context& ctx, const request& req);

}  // namespace baton::http
