#include "http/ui_routes.hpp"

#include <nlohmann/json.hpp>

#include "http/caller.hpp"
#include "http/event_stream.hpp"
#include "http/json_reply.hpp"
#include "http/request_parsing.hpp"
#include "http/ui_assets.hpp"

namespace baton::http {

namespace {

using nlohmann::json;

std::string session_cookie_header(const std::string& sid, int64_t max_age_seconds, bool https) {
  // SameSite=Strict: the browser never sends it from another site, so no other site can act
  // with it; HttpOnly: page scripts cannot read it; Secure (over HTTPS): never sent in clear.
  return std::string(session_cookie) + "=" + sid + "; Path=/; HttpOnly; SameSite=Strict; " + (https ? "Secure; " : "") +
         "Max-Age=" + std::to_string(max_age_seconds);
}

json who_body(const core::principal& who, const std::string& csrf) {
  return {{"name", who.name.empty() ? "api-token" : who.name}, {"admin", who.admin}, {"csrf_token", csrf}};
}

void serve_file(std::string_view name, response& res) {
  set_ui_headers(res);
  for (const auto& f : ui_files()) {
    if (f.name != name) continue;
    res.status = 200;
    res.set_content(std::string(f.body), std::string(ui_content_type(name)));
    return;
  }
  reply_error(res, 404, "not_found", "no such file in the dashboard");
}

// The Last-Event-ID an EventSource sends when it reconnects, or ?after= for other clients.
uint64_t resume_after(const request& req) {
  std::string v = req.get_header_value("Last-Event-ID");
  std::string field = "Last-Event-ID";
  if (v.empty()) {
    v = req.get_param_value("after");
    field = "after";
  }
  if (v.empty()) return 0;
  if (v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
    throw invalid_field(field, field + " must be an event sequence number");
  return std::stoull(v);
}

}  // namespace

std::string_view ui_content_type(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

void set_ui_headers(response& res, const char* cache_control) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                 "base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", cache_control);
}

void add_ui_routes(router& s, api_context ctx) {
  // --- the static files ---
  s.Get("/ui", [](const request&, response& res) {
    res.status = 308;
    res.set_header("Location", "/ui/");
  });
  s.Get("/ui/", [](const request&, response& res) { serve_file("index.html", res); });
  s.Get(R"(/ui/([A-Za-z0-9][A-Za-z0-9._-]*))", [](const request& req, response& res) { serve_file(req.path_params[0], res); });

  // --- logging in and out ---
  s.Post("/ui/login", [ctx](const request& req, response& res) {
    set_ui_headers(res, "no-store");  // the answer carries the session's CSRF token
    if (!ctx.sessions || !ctx.clock) return reply_error(res, 503, "sessions_unavailable", "the dashboard's logins are off");
    // Another site's page can send a form or text/plain without asking, never application/json:
    // so no other site can log a browser in to an account of its choosing.
    if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0)
      return reply_error(res, 415, "unsupported_media_type", "send the login as application/json", "Content-Type");
    std::string token, name;
    try {
      auto body = object_body(req, false);
      check_known_fields(body, {"token", "name"});
      token = req_string(body, "token", limits::token_bytes);
      name = opt_string(body, "name", limits::operator_name_bytes).value_or("");
      check_printable(name, "name", limits::operator_name_bytes);  // recorded as the actor, as X-Baton-Operator
    } catch (const invalid_field& bad) {
      return reply_json(res, bad.status, validation_body(bad));
    }
    // Failed logins are limited by address and by the operator a token names, before the token is looked at.
    const std::string address = client_group(req.remote_addr);
    const std::string named = token.find('.') == std::string::npos ? "" : token.substr(0, token.find('.'));
    const core::time_us now = ctx.clock();
    if (auto over = ctx.login_limits ? ctx.login_limits->check(address, named, now) : std::nullopt)
      return refuse_over_limit(res, "too many failed logins", over->limit, over->wait_us);
    auto who = identify_operator(ctx, token, name, res);
    if (!who) {
      if (ctx.login_limits) ctx.login_limits->failed(address, named, now);
      return;
    }
    if (who->k != core::principal::kind::operator_)
      return reply_error(res, 403, "operators_only", "only an operator's token opens a dashboard session", "token");
    const std::string sid = new_secret_hex();
    auto opened = ctx.sessions->open(sid, rate_limiter::key_of(*who), token, name, new_secret_hex(), now);
    if (!opened)
      return reply_error(res, 503, "sessions_full", "every dashboard session is in use by other operators; retry later");
    reply_json(res, 200, who_body(*who, opened->csrf));
    res.set_header("Set-Cookie", session_cookie_header(sid, ctx.sessions->ttl_us() / 1'000'000, ctx.https));
  });
  s.Get("/ui/session", [ctx](const request& req, response& res) {
    set_ui_headers(res, "no-store");
    auto found = session_of(ctx, req);
    if (!found) return reply_error(res, 401, "no_session", "not logged in");
    auto who = identify_operator(ctx, found->s.credential, found->s.declared_name, res);  // revoked since: 401
    if (!who) return;
    reply_json(res, 200, who_body(*who, found->s.csrf));
  });
  s.Post("/ui/logout", [ctx](const request& req, response& res) {
    set_ui_headers(res, "no-store");
    auto found = session_of(ctx, req);
    if (!found) return reply_error(res, 401, "no_session", "not logged in");
    if (!identify(ctx, req, res)) return;  // the session's CSRF token is needed to end it too
    ctx.sessions->close(found->id);
    reply_json(res, 200, {{"logged_out", true}});
    res.set_header("Set-Cookie", session_cookie_header("", 0, ctx.https));
  });

  // --- the live stream: the events the caller may see, as they become durable ---
  s.async("GET", "/events/stream", [ctx](const request& req, respond_fn respond) {
    response res;
    auto e = admit(ctx, req, res, core::command_kind::event_stream);
    if (!e) return respond(std::move(res));
    uint64_t after = 0;
    try {
      after = resume_after(req);
    } catch (const invalid_field& bad) {
      reply_json(res, bad.status, validation_body(bad));
      return respond(std::move(res));
    }
    if (!ctx.feed) {
      refuse(res, {core::error_kind::unavailable, "stream_unavailable", "the live feed is off", {}, ""});
      return respond(std::move(res));
    }
    std::shared_ptr<void> slot;
    if (ctx.streams && !(slot = ctx.streams->take(e->caller))) {
      const int max = ctx.streams->max_per_caller();
      refuse(res,
             {core::error_kind::over_limit,
              "too_many_streams",
              "at most " + std::to_string(max) + " live event streams per operator (event_streams_per_operator); close one first",
              {{"limit", "event_streams_per_operator"}, {"max", max}},
              ""});
      return respond(std::move(res));
    }
    auto stream = std::make_shared<event_stream>();
    stream->hold(std::move(slot));
    ctx.feed->subscribe(
        e->caller, after, [stream](const projections::live_feed::shared_text& text) { return stream->push(text); },
        [weak = std::weak_ptr<event_stream>(stream)] {
          auto s = weak.lock();
          return s && !s->closed();
        });
    res.status = 200;
    res.content_type = "text/event-stream";
    res.stream = std::move(stream);
    respond(std::move(res));
  });
}

}  // namespace baton::http
