#include "http/caller.hpp"

#include <atomic>
#include <limits>

#include "core/util/sha256.hpp"
#include "http/json_reply.hpp"
#include "http/reply_shapes.hpp"
#include "http/request_parsing.hpp"
#include "http/ui_sessions.hpp"

namespace baton::http {

void refuse(response& res, const core::domain_error& e) { reply_json(res, status_of(e.kind), error_body(e)); }

void refuse_over_limit(response& res, const std::string& what, const std::string& limit, core::time_us wait_us) {
  auto seconds = (wait_us + 999'999) / 1'000'000;  // Retry-After is whole seconds, rounded up
  refuse(res, {core::error_kind::over_limit,
               "rate_limited",
               what + " (" + limit + "); retry after " + std::to_string(seconds) + " s",
               {{"limit", limit}, {"retry_after_seconds", seconds}},
               ""});
  res.set_header("Retry-After", std::to_string(seconds));
}

std::string hash_of(const std::string& secret) { return util::sha256_hex(secret); }
std::string token_of(const std::string& owner, const std::string& secret) { return owner + "." + secret; }
namespace {

// Correlation ids for requests that bring none: unique per daemon run, cheap (no RNG call).
std::string next_request_id() {
  static const std::string run = new_uuid().substr(0, 8);
  static std::atomic<uint64_t> counter{0};
  return "req-" + run + "-" + std::to_string(++counter);
}

struct presented_token {
  std::string owner, secret_sha256;
};
std::optional<presented_token> split_token(const std::string& token) {
  auto dot = token.find('.');
  if (dot == std::string::npos) return std::nullopt;
  return presented_token{token.substr(0, dot), hash_of(token.substr(dot + 1))};
}

// The worker a worker_self request names, or the operator an operator_self one names, as
// sent (its form is checked later, by the builder).
std::string named_target(const request& req) {
  return req.path_params.empty() ? req.get_param_value("worker_id") : req.path_params[0];
}

// The time a replaced credential's deadline is checked against: batond's clock, the one its
// decisions (and so the deadlines they record) use. Without one, no replaced credential passes.
core::time_us now_of(const api_context& ctx) { return ctx.clock ? ctx.clock() : std::numeric_limits<core::time_us>::max(); }

}  // namespace

// Who is calling, from the credential alone: X-Worker-Token "<worker id>.<secret>" must be a
// registered worker's own; X-API-Token (or Authorization: Bearer) the admin token, the pilot
// token, the scrape token, or a named operator's "<name>.<secret>" (not revoked); without
// either, the dashboard's session cookie.
// Anything else, a forged or malformed credential or an ended session included, is 401 here.
std::optional<core::principal> identify(const api_context& ctx, const request& req, response& res) {
  auto worker_token = req.get_header_value("X-Worker-Token");
  if (!worker_token.empty()) {
    auto t = split_token(worker_token);
    if (!t || !ctx.credentials || !ctx.credentials->verify(t->owner, t->secret_sha256, now_of(ctx))) {
      refuse(res, {core::error_kind::unauthenticated, "invalid_worker_token", "Invalid worker token", {}, ""});
      return std::nullopt;
    }
    return core::principal::of_worker(t->owner);
  }
  auto token = req.get_header_value("X-API-Token");
  // "Authorization: Bearer <token>" says the same, for clients that only know that form
  // (Prometheus' authorization.credentials_file).
  if (auto auth = req.get_header_value("Authorization");
      token.empty() && auth.size() > 7 && iequals(auth.substr(0, 7), "Bearer "))
    token = auth.substr(7);
  if (!token.empty() || !ctx.sessions) return identify_operator(ctx, token, req.get_header_value("X-Baton-Operator"), res);
  // The dashboard: its session cookie stands for the token it logged in with, checked again
  // now; a request that changes anything must also carry the session's CSRF token.
  if (cookie_value(req, session_cookie).empty()) return identify_operator(ctx, token, "", res);
  auto found = session_of(ctx, req);
  if (!found) {
    refuse(res, {core::error_kind::unauthenticated, "session_expired", "the session has ended; log in again", {}, ""});
    return std::nullopt;
  }
  if (req.method != "GET" && req.method != "HEAD") {
    auto csrf = req.get_header_value("X-CSRF-Token");
    if (csrf.empty() || !core::constant_time_equal(csrf, found->s.csrf)) {
      refuse(res, {core::error_kind::forbidden,
                   csrf.empty() ? "csrf_token_missing" : "csrf_token_invalid",
                   "a change sent with the session cookie needs the session's X-CSRF-Token header",
                   {},
                   "X-CSRF-Token"});
      return std::nullopt;
    }
  }
  return identify_operator(ctx, found->s.credential, found->s.declared_name, res);
}

std::optional<session_found> session_of(const api_context& ctx, const request& req) {
  auto sid = cookie_value(req, session_cookie);
  if (sid.empty() || !ctx.sessions || !ctx.clock) return std::nullopt;
  auto s = ctx.sessions->find(sid, ctx.clock());
  if (!s) return std::nullopt;
  return session_found{std::move(sid), std::move(*s)};
}

std::optional<core::principal> identify_operator(const api_context& ctx, const std::string& token,
                                                 const std::string& declared_name, response& res) {
  if (!token.empty() && core::constant_time_equal(token, ctx.api_token))
    return core::principal::operator_named(declared_name.substr(0, limits::operator_name_bytes));  // (admit() refuses longer)
  if (!token.empty() && ctx.pilot && ctx.pilot->accepts(hash_of(token), now_of(ctx))) return core::principal::pilot_token();
  if (!token.empty() && !ctx.scrape_token.empty() && core::constant_time_equal(token, ctx.scrape_token))
    return core::principal::scrape_token();
  // A placeholder's one-time registration credential: "<placeholder id>.<secret>".
  if (auto t = split_token(token); t && ctx.credentials && ctx.credentials->verify_registration(t->owner, t->secret_sha256))
    return core::principal::pilot_of(t->owner);
  // A named operator's token: "<name>.<secret>"; the name comes from the token, never a header.
  if (auto t = split_token(token); t && ctx.operators)
    if (auto who = ctx.operators->verify(t->owner, t->secret_sha256, now_of(ctx)))
      return core::principal::named_operator(who->name, who->admin);
  refuse(res, {core::error_kind::unauthenticated, "invalid_api_token", "Invalid API token", {}, ""});
  return std::nullopt;
}

bool allowed(const api_context& ctx, const core::principal& who, core::command_kind kind, const std::string& named,
             response& res) {
  if (auto denied = core::authorize(who, kind, named, {ctx.accept_shared_token})) {
    refuse(res, *denied);
    return false;
  }
  if (auto wait = ctx.limiter && ctx.clock ? ctx.limiter->admit(who, ctx.clock()) : std::nullopt) {
    refuse_over_limit(res, "too many requests", rate_limiter::limit_name(who), *wait);
    return false;
  }
  return true;
}

// Only an admitted request is read further.
std::optional<core::envelope> admit(const api_context& ctx, const request& req, response& res, core::command_kind kind) {
  auto who = identify(ctx, req, res);
  if (!who) return std::nullopt;
  const auto cls = core::access_of(kind);
  auto named = cls == core::access_class::worker_self || cls == core::access_class::operator_self ? named_target(req) : "";
  if (!allowed(ctx, *who, kind, named, res)) return std::nullopt;
  // The headers recorded with every event this request causes: checked before anything is
  // (a byte that is not UTF-8 stopped the SQL view and broke the audit export's JSON lines;
  // a leading '=' is a spreadsheet formula in its CSV).
  std::string request_id;
  try {
    recorded_header(req, "X-Baton-Operator", limits::operator_name_bytes);  // (identify() read it as the actor's name)
    request_id = recorded_header(req, "X-Request-Id", limits::request_id_bytes);
  } catch (const invalid_field& bad) {
    reply_json(res, bad.status, validation_body(bad));
    return std::nullopt;
  }
  core::envelope e;
  e.caller = std::move(*who);
  // A RelayMD worker on the shared token acts for the worker it names.
  e.actor = e.caller.k == core::principal::kind::operator_ && cls == core::access_class::worker_self && !named.empty()
                ? "worker:" + named
                : e.caller.actor();
  e.request_id = request_id.empty() ? next_request_id() : std::move(request_id);
  return e;
}

std::string cookie_value(const request& req, const std::string& name) {
  for (const auto& [k, v] : req.headers) {
    if (!iequals(k, "Cookie")) continue;
    size_t i = 0;
    while (i < v.size()) {
      size_t end = v.find(';', i);
      if (end == std::string::npos) end = v.size();
      size_t a = i;
      while (a < end && v[a] == ' ') ++a;
      size_t eq = v.find('=', a);
      if (eq != std::string::npos && eq < end && v.compare(a, eq - a, name) == 0 && eq - a == name.size())
        return v.substr(eq + 1, end - eq - 1);
      i = end + 1;
    }
  }
  return "";
}

}  // namespace baton::http
