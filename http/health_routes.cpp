#include "http/health_routes.hpp"

#include <baton/version.hpp>

#include "http/actor_bridge.hpp"
#include "http/json_reply.hpp"

namespace baton::http {

void add_health_routes(router& server, caf::actor_system& sys, actors::log_writer_actor log, actors::scheduler_actor scheduler,
                       std::vector<std::shared_ptr<const projections::projection>> projections,
                       std::function<nlohmann::json()> clock) {
  server.Get("/healthz", [&sys, log, scheduler, projections, clock](const request&, response& res) {
    auto unavailable = [&res](const std::string& why) {
      reply_json(res, 503, {{"status", "unavailable"}, {"version", baton::version}, {"message", why}});
    };
    auto r = ask<actors::log_status>(sys, log, std::chrono::seconds(2), actors::status_atom::value);
    if (!r.value) return unavailable(r.error);
    core::envelope e;
    e.actor = "healthz";
    e.cmd = core::commands::health_warnings{};
    auto w = actors::submit(scheduler, std::move(e), std::chrono::seconds(2));
    auto* warnings = w ? std::get_if<core::results::warnings>(&w->value) : nullptr;
    if (!warnings)
      return unavailable(!w ? "the scheduler did not answer within 2 s" : w->error ? w->error->message : "no warnings");
    // A projection that stopped, cannot store, or went past events it could not apply says
    // so here and in the warnings (and in GET /metrics), never only by a lag that grows.
    nlohmann::json views = nlohmann::json::object();
    auto list = warnings->items;
    for (const auto& p : projections) {
      const uint64_t applied = p->stored_seq();
      auto& v = views[p->name()];
      v = {{"applied_sequence", applied}, {"lag_events", r.value->last_seq > applied ? r.value->last_seq - applied : 0}};
      if (auto why = p->failure()) {
        v["failed"] = *why;
        list.push_back("projection " + p->name() + " has stopped: " + *why);
      } else if (auto stalled = p->stalled()) {
        v["stalled"] = *stalled;
        list.push_back("projection " + p->name() + " " + *stalled);
      }
      if (auto skipped = p->skipped(); skipped.count > 0) {
        v["skipped_events"] = skipped.count;
        v["last_skipped"] = {{"sequence", skipped.last_seq}, {"why", skipped.last_why}};
        list.push_back("projection " + p->name() + " could not apply " + std::to_string(skipped.count) +
                       " event(s) as recorded, the last " + std::to_string(skipped.last_seq) + ": " + skipped.last_why);
      }
    }
    nlohmann::json body = {{"status", "ok"},
                           {"version", baton::version},
                           {"last_sequence", r.value->last_seq},
                           {"commits", r.value->commits},
                           {"events_written", r.value->events_written},
                           {"projections", views},
                           {"warnings", list}};
    if (clock) body["clock"] = clock();
    reply_json(res, 200, body);
  });
}

void add_error_handlers(router& server) {
  server.set_error_handler([](const request& req, response& res) {
    if (!res.body.empty()) return;  // a handler already wrote its own JSON error
    if (res.status == 404)
      reply_error(res, 404, "not_found", "no route for " + req.method + " " + req.path);
    else
      reply_error(res, res.status, "http_error", "request failed with status " + std::to_string(res.status));
  });
  server.set_exception_handler([](const request&, response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(res, 500, "internal_error", what);
  });
}

}  // namespace baton::http
