#include "http/api_routes.hpp"

#include <optional>

#include "core/util/time.hpp"
#include "http/caller.hpp"
#include "http/file_routes.hpp"
#include "http/json_reply.hpp"
#include "http/metrics_text.hpp"
#include "http/reply_shapes.hpp"
#include "http/request_commands.hpp"
#include "http/request_parsing.hpp"

#include <sstream>

namespace baton::http {

// Declared in caller.hpp. Defined here, not in caller.cpp: beside it, GCC inlined less of
// admit(), which every request runs (~500 more instructions per poll, callgrind).
std::optional<core::reply> ask(const api_context& ctx, core::envelope e, response& res) {
  auto r = actors::submit(ctx.scheduler, std::move(e), std::chrono::seconds(30));
  if (!r)
    refuse(res, {core::error_kind::unavailable, "scheduler_unavailable", "the scheduler did not answer within 30 s", {}, ""});
  return r;
}

namespace {

using core::command_kind;
using nlohmann::json;
namespace C = core::commands;

// Builds the command from an admitted request; throws invalid_field for a 422.
using builder = std::function<core::command(const request&)>;

// A poll the scheduler would answer with no job and no event: answered here, on the HTTP
// thread, from the scheduler's cache (actors/caches/idle_poll_view.hpp).
bool answered_from_view(const api_context& ctx, const core::envelope& e, response& res) {
  auto* poll = std::get_if<C::request_job>(&e.cmd);
  if (!poll || !ctx.idle_view || !ctx.clock || !ctx.idle_view->answers_no_job(poll->worker_id, ctx.clock())) return false;
  static const std::string body = json{{"status", "no_job_available"}, {"reason", "no_job_for_this_worker"}}.dump();
  res.status = 200;
  res.set_content(body, "application/json");
  return true;
}

// Admits, then builds. Empty when res already holds the answer (401/403/422, or an idle
// poll answered from the view).
std::optional<core::envelope> prepare(const api_context& ctx, const request& req, response& res, command_kind kind,
                                      const builder& build) {
  auto e = admit(ctx, req, res, kind);
  if (!e) return std::nullopt;
  try {
    e->cmd = build(req);
  } catch (const invalid_field& bad) {
    reply_json(res, bad.status, validation_body(bad));
    return std::nullopt;
  }
  if (answered_from_view(ctx, *e, res)) return std::nullopt;
  return e;
}

// Pruned jobs come back from the scheduler as stubs (core::results::job_row::archived): each
// is replaced by the job its stream in the log makes (for run() and the job list). False when
// res already holds the error.
bool fill_archived(const api_context& ctx, core::reply& r, response& res) {
  auto fill = [&](core::results::job_row& row) {
    if (!row.archived || !ctx.history) return true;
    try {
      if (auto j = ctx.history->record(row.j.id)) row.j = std::move(*j);
      row.archived = false;
      return true;
    } catch (const events::store_error& e) {
      refuse(res, {core::error_kind::unavailable, "history_unavailable", e.what(), {}, ""});
    } catch (const std::exception& e) {  // recorded events the core cannot read: a 500, said plainly
      refuse(res, {core::error_kind::internal, "internal", "job " + row.j.id + ": " + e.what(), {}, ""});
    }
    return false;
  };
  if (r.error) return true;
  if (auto* row = std::get_if<core::results::job_row>(&r.value)) return fill(*row);
  if (auto* page = std::get_if<core::results::job_page>(&r.value))
    for (auto& row : page->items)
      if (!fill(row)) return false;
  return true;
}

void run(const api_context& ctx, const request& req, response& res, command_kind kind, const builder& build) {
  auto e = prepare(ctx, req, res, kind, build);
  if (!e) return;
  if (auto r = ask(ctx, std::move(*e), res); r && fill_archived(ctx, *r, res)) to_response(*r, res);
}

// The reply as the connection's I/O thread renders it (response::render): the thread that
// delivers it (the scheduler's) builds no JSON and no message.
response rendered_later(core::reply r) {
  response out;
  out.render = [r = std::move(r)](response& res) { to_response(r, res); };
  return out;
}

// Non-blocking: the scheduler's reply is sent when it comes (after its events are durable);
// no thread waits for it. For the hot worker calls (poll, heartbeat, job reports).
void submit(const api_context& ctx, core::envelope e, respond_fn respond) {
  actors::submit_async(ctx.scheduler, std::move(e),
                       [respond = std::move(respond)](core::reply r) { respond(rendered_later(std::move(r))); });
}

void route(router& s, const std::string& method, const std::string& path, const api_context& ctx, command_kind kind,
           builder build) {
  s.async(method, path, [ctx, kind, build = std::move(build)](const request& req, respond_fn respond) {
    response res;
    auto e = prepare(ctx, req, res, kind, build);
    if (!e) return respond(std::move(res));
    submit(ctx, std::move(*e), std::move(respond));
  });
}

// A worker's report on a job. The job id comes from the path (a bad one is 422 at once); a
// body that does not validate travels with the command, because whether this caller may act
// on the job is the scheduler's to say, and comes first (core::authorize_job).
template <class Cmd>
void job_report(router& s, const std::string& method, const std::string& path, const api_context& ctx) {
  constexpr auto kind = core::kind_of_v<Cmd>;
  s.async(method, path, [ctx](const request& req, respond_fn respond) {
    response res;
    auto e = admit(ctx, req, res, kind);
    if (!e) return respond(std::move(res));
    Cmd c;
    try {
      c.id = build::path_uuid(req);
    } catch (const invalid_field& bad) {
      reply_json(res, bad.status, validation_body(bad));
      return respond(std::move(res));
    }
    try {
      build::fill(req, c);
    } catch (const invalid_field& bad) {
      e->invalid = core::invalid_field_report{bad.field, bad.what(), validation_body(bad), bad.status == 413};
    }
    e->cmd = std::move(c);
    submit(ctx, std::move(*e), std::move(respond));
  });
}

// RelayMD clients expect a bare list; the page position travels in headers.
template <class Page>
void as_bare_list(const core::reply& r, response& res) {
  auto* page = std::get_if<Page>(&r.value);
  if (r.error || !page) return to_response(r, res);
  auto body = body_of(r.value, r.at);
  res.set_header("X-Total-Count", std::to_string(page->total));
  res.set_header("X-Offset", std::to_string(page->offset));
  res.set_header("X-Limit", std::to_string(page->limit));
  reply_json(res, 200, body["items"]);
}

template <class Page>
void list(router& s, const std::string& path, const api_context& ctx, command_kind kind, builder build) {
  s.Get(path, [ctx, kind, build = std::move(build)](const request& req, response& res) {
    auto e = prepare(ctx, req, res, kind, build);
    if (!e) return;
    if (auto r = ask(ctx, std::move(*e), res); r && fill_archived(ctx, *r, res)) as_bare_list<Page>(*r, res);
  });
}

// A command naming the path's job or worker id alone.
template <class Cmd>
core::command of_path_id(const request& req) {
  return Cmd{build::path_uuid(req)};
}

// A route that hands out a new credential once: the command carries only its secret's hash
// (all that is kept and logged); the answer gets `field`, "<owner>.<secret>", the owner read
// from the scheduler's Result.
using secret_builder = core::command (*)(const request&, const std::string& sha256);
template <class Result>
void hand_out(router& s, const std::string& path, const api_context& ctx, command_kind kind, secret_builder build,
              const char* field, std::string Result::*owner) {
  s.Post(path, [=](const request& req, response& res) {
    const std::string secret = new_secret_hex();
    auto e = prepare(ctx, req, res, kind, [&](const request& rq) { return build(rq, hash_of(secret)); });
    if (!e) return;
    auto r = ask(ctx, std::move(*e), res);
    if (!r) return;
    auto* done = std::get_if<Result>(&r->value);
    if (r->error || !done) return to_response(*r, res);
    auto body = body_of(r->value, r->at);
    body[field] = token_of(done->*owner, secret);
    reply_json(res, 200, body);
  });
}

core::command no_args(command_kind k) {
  switch (k) {
    case command_kind::list_clusters:
      return C::list_clusters{};
    case command_kind::list_worker_images:
      return C::list_worker_images{};
    default:
      return C::salad_status{};
  }
}

}  // namespace

void add_api_routes(router& s, api_context ctx) {
  using K = command_kind;
  add_file_routes(s, ctx);

  // --- workers ---
  hand_out<core::results::registered>(
      s, "/workers/register", ctx, K::register_worker,
      [](const request& rq, const std::string& sha) -> core::command { return build::register_worker(rq, new_uuid(), sha); },
      "worker_token", &core::results::registered::worker_id);
  route(s, "POST", R"(/workers/([^/]+)/heartbeat)", ctx, K::heartbeat, build::heartbeat);
  route(s, "POST", R"(/workers/([^/]+)/deregister)", ctx, K::deregister, of_path_id<C::deregister>);
  list<core::results::worker_page>(s, "/workers", ctx, K::list_workers, build::list_workers);

  // --- jobs, worker side ---
  // Polls: as route() does, also timed and counted by result for GET /metrics.
  s.async("POST", "/jobs/request", [ctx](const request& req, respond_fn respond) {
    auto measured = [m = ctx.polls, started = std::chrono::steady_clock::now(), respond = std::move(respond)](
                        response res, std::string result, std::string reason) {
      if (m) {
        m->seconds.observe(std::chrono::steady_clock::now() - started);
        m->results.count({std::move(result), std::move(reason)});
      }
      respond(std::move(res));
    };
    response res;
    auto e = prepare(ctx, req, res, K::request_job, build::request_job);
    if (!e) {
      bool idle = res.status == 200;  // answered from the idle view
      return measured(std::move(res), idle ? "no_job_available" : "refused",
                      idle ? "no_job_for_this_worker" : std::to_string(res.status));
    }
    actors::submit_async(ctx.scheduler, std::move(*e), [measured = std::move(measured)](core::reply r) {
      const auto* poll = std::get_if<core::results::poll_answer>(&r.value);
      std::string result = r.error ? "refused" : poll && poll->assigned ? "assigned" : "no_job_available";
      std::string reason = r.error ? r.error->code : poll && !poll->assigned ? poll->no_job_reason : "";
      measured(rendered_later(std::move(r)), std::move(result), std::move(reason));
    });
  });
  job_report<C::job_control>(s, "GET", R"(/jobs/([^/]+)/control)", ctx);
  job_report<C::start_job>(s, "POST", R"(/jobs/([^/]+)/start)", ctx);
  job_report<C::checkpoint_job>(s, "POST", R"(/jobs/([^/]+)/checkpoint)", ctx);
  job_report<C::handoff_start>(s, "POST", R"(/jobs/([^/]+)/handoff/start)", ctx);
  job_report<C::handoff_complete>(s, "POST", R"(/jobs/([^/]+)/handoff/complete)", ctx);
  job_report<C::complete_job>(s, "POST", R"(/jobs/([^/]+)/complete)", ctx);
  job_report<C::fail_job>(s, "POST", R"(/jobs/([^/]+)/fail)", ctx);

  // --- jobs, operator side ---
  s.Post("/jobs", [ctx](const request& req, response& res) {
    run(ctx, req, res, K::create_job, [](const request& rq) -> core::command { return build::create_job(rq, new_uuid()); });
  });
  // Up to 10,000 jobs, or one job array, in one request and one durable commit.
  s.Post("/jobs/batch", [ctx](const request& req, response& res) {
    run(ctx, req, res, K::create_jobs, [](const request& rq) -> core::command { return build::create_jobs(rq, new_uuid); });
  });
  list<core::results::job_page>(s, "/jobs", ctx, K::list_jobs, build::list_jobs);
  route(s, "GET", "/summary", ctx, K::summary, [](const request&) -> core::command { return C::summary{}; });
  s.Get(R"(/jobs/([^/]+))", [ctx](const request& req, response& res) {  // blocking: a pruned job is read from the log
    run(ctx, req, res, K::get_job, of_path_id<C::get_job>);
  });
  route(s, "DELETE", R"(/jobs/([^/]+))", ctx, K::cancel_job, [](const request& req) -> core::command {
    return C::cancel_job{build::path_uuid(req), query_bool(req, "force", false)};
  });
  route(s, "POST", R"(/jobs/([^/]+)/requeue)", ctx, K::requeue_job, [](const request& req) -> core::command {
    return C::requeue_job{build::path_uuid(req), new_uuid()};
  });
  s.Delete("/jobs", [ctx](const request& req, response& res) { run(ctx, req, res, K::prune_jobs, build::prune_jobs); });

  // --- who goes first ---
  route(s, "POST", R"(/jobs/([^/]+)/hold)", ctx, K::hold_job, of_path_id<C::hold_job>);
  route(s, "POST", R"(/jobs/([^/]+)/release)", ctx, K::release_job, of_path_id<C::release_job>);
  route(s, "GET", R"(/jobs/([^/]+)/priority)", ctx, K::job_priority, of_path_id<C::job_priority>);
  route(s, "GET", "/priority", ctx, K::list_priorities,
        [](const request& req) -> core::command { return build::list_priorities(req); });
  route(s, "GET", "/fairshare", ctx, K::fairshare, [](const request&) -> core::command { return C::fairshare{}; });
  route(s, "POST", "/priority/recalculate", ctx, K::recalculate_priorities,
        [](const request&) -> core::command { return C::recalculate_priorities{}; });
  route(s, "POST", "/plan", ctx, K::plan_now, [](const request&) -> core::command { return C::plan_now{}; });

  // --- named operators (admins only) ---
  s.Post("/operators", [ctx](const request& req, response& res) {
    // The operator's token: handed back once; only its hash is kept and logged.
    std::string secret = new_secret_hex();
    auto e = prepare(ctx, req, res, K::create_operator,
                     [&](const request& rq) -> core::command { return build::create_operator(rq, hash_of(secret)); });
    if (!e) return;
    auto name = std::get<C::create_operator>(e->cmd).name;
    auto r = ask(ctx, std::move(*e), res);
    if (!r) return;
    if (r->error) return to_response(*r, res);
    auto body = body_of(r->value, r->at)[0];
    body["token"] = token_of(name, secret);
    reply_json(res, 200, body);
  });
  route(s, "DELETE", R"(/operators/([^/]+))", ctx, K::revoke_operator,
        [](const request& req) -> core::command { return C::revoke_operator{build::path_name(req)}; });
  route(s, "GET", "/operators", ctx, K::list_operators, [](const request&) -> core::command { return C::list_operators{}; });

  // --- credential rotation: a new token, handed back once; the old one still works until
  // previous_token_valid_until (body: {"grace_seconds": N}), so its holder switches with no
  // request refused. An operator rotates their own token (an admin anyone's), a worker its own.
  hand_out<core::results::rotated>(
      s, R"(/operators/([^/]+)/token)", ctx, K::rotate_operator_token,
      [](const request& rq, const std::string& sha) -> core::command { return build::rotate_operator_token(rq, sha); }, "token",
      &core::results::rotated::name);
  hand_out<core::results::rotated>(
      s, R"(/workers/([^/]+)/credential)", ctx, K::rotate_worker_credential,
      [](const request& rq, const std::string& sha) -> core::command { return build::rotate_worker_credential(rq, sha); },
      "token", &core::results::rotated::name);

  // --- the pilot token (admins): a new one, handed back once and put where pilots read it;
  // the old one still registers workers until previous_token_valid_until. A token from
  // BATON_PILOT_TOKEN is the operator's to change: 409 pilot_token_from_environment.
  s.Post("/pilot-token", [ctx](const request& req, response& res) {
    std::string secret = new_secret_hex();
    const core::pilot_configured configured = ctx.pilot ? ctx.pilot->configured() : core::pilot_configured{"", true};
    auto e = prepare(ctx, req, res, K::rotate_pilot_token, [&](const request& rq) -> core::command {
      return build::rotate_pilot_token(rq, hash_of(secret), configured);
    });
    if (!e) return;
    const bool kept_here = !configured.from_environment && ctx.pilot_secrets.stage;
    if (kept_here) {
      try {
        ctx.pilot_secrets.stage(secret);
      } catch (const std::exception& x) {
        return refuse(res, {core::error_kind::unavailable, "pilot_token_not_written", x.what(), {}, ""});
      }
    }
    auto r = ask(ctx, std::move(*e), res);
    if (!r) return;  // not known to be durable yet: the staged file stays, batond's next start settles it
    auto* done = std::get_if<core::results::rotated>(&r->value);
    if (r->error || !done) {
      if (kept_here) ctx.pilot_secrets.discard();
      return to_response(*r, res);
    }
    if (kept_here) ctx.pilot_secrets.commit();
    auto body = body_of(r->value, r->at);
    body["token"] = secret;
    reply_json(res, 200, body);
  });

  // --- clusters, configuration, cloud ---
  for (auto [path, kind] : {std::pair<std::string, K>{"/clusters", K::list_clusters},
                            {"/config/worker-images", K::list_worker_images},
                            {"/cloud/salad", K::salad_status}})
    s.Get(path, [ctx, kind = kind](const request& req, response& res) {
      run(ctx, req, res, kind, [kind](const request&) { return no_args(kind); });
    });
  s.Get("/config/slurm-clusters", [ctx](const request& req, response& res) {
    run(ctx, req, res, K::list_clusters, [](const request&) -> core::command { return C::list_clusters{}; });
    if (res.status == 200) reply_json(res, 200, {{"clusters", json::parse(res.body)}});  // RelayMD's shape
  });
  s.Put("/config/slurm-clusters/enabled",
        [ctx](const request& req, response& res) { run(ctx, req, res, K::set_clusters_enabled, build::clusters_enabled); });
  for (bool enable : {true, false})
    route(s, "POST", enable ? R"(/clusters/([^/]+)/enable)" : R"(/clusters/([^/]+)/disable)", ctx, K::set_cluster_enabled,
          [enable](const request& req) -> core::command { return build::cluster_enabled(req, enable); });

  // --- the audit export, from the log itself (events/log_reader.hpp, written by replay's export) ---
  s.Get("/audit/export", [ctx](const request& req, response& res) {
    auto e = prepare(ctx, req, res, K::audit_export, [](const request& rq) -> core::command { return build::audit_export(rq); });
    if (!e) return;
    if (!ctx.log) return refuse(res, {core::error_kind::unavailable, "log_unavailable", "the event log is not open", {}, ""});
    const auto& q = std::get<C::audit_export>(e->cmd);
    // Built whole, then sent (the server sends whole bodies): a bound keeps one export from
    // taking the login node's memory. Narrower exports (from/to, stream, type) stay under it.
    constexpr size_t max_export_bytes = size_t{512} << 20;
    std::ostringstream out;
    auto exported = ctx.log->export_events(q.filter, q.csv ? events::export_format::csv : events::export_format::jsonl, out);
    if (exported.damaged) return refuse(res, {core::error_kind::internal, "log_damaged", *exported.damaged, {}, ""});
    if (out.tellp() > static_cast<std::streamoff>(max_export_bytes))
      return refuse(
          res, {core::error_kind::invalid,
                "export_too_large",
                "the export of " + std::to_string(exported.summary.count) + " events exceeds 512 MiB: narrow it with from and to",
                {},
                "from"});
    res.status = 200;
    res.set_header("Content-Disposition", std::string("attachment; filename=\"baton-audit.") + (q.csv ? "csv" : "jsonl") + "\"");
    res.set_content(out.str(), q.csv ? "text/csv" : "application/x-ndjson");
  });

  // --- Prometheus (http/metrics_text.hpp): the scheduler's counts, the log's head, the projections ---
  s.Get("/metrics", [ctx](const request& req, response& res) {
    auto e = prepare(ctx, req, res, K::metrics, [](const request&) -> core::command { return C::metrics{}; });
    if (!e) return;
    auto r = ask(ctx, std::move(*e), res);
    if (!r) return;
    if (r->error) return refuse(res, *r->error);
    const auto* m = std::get_if<core::results::metrics>(&r->value);
    if (!m)
      return refuse(res, {core::error_kind::internal, "internal", "the scheduler answered metrics with something else", {}, ""});
    res.status = 200;
    metrics_sources from;
    from.transfers = ctx.transfer_counts.get();
    from.log_last_seq = ctx.log ? ctx.log->last_seq() : 0;
    from.projections = ctx.log_fed;
    from.log = ctx.log_metrics.get();
    from.requests = ctx.requests.get();
    from.polls = ctx.polls.get();
    from.slurm = ctx.slurm_calls.get();
    from.cluster_cycles = ctx.cluster_cycles.get();
    from.feed = ctx.feed.get();
    from.process = read_process_figures();
    if (ctx.log) from.log_memory = ctx.log->memory();
    res.set_content(metrics_text(*m, from), "text/plain; version=0.0.4");
  });

  // --- history, from its projection ---
  s.Get(R"(/jobs/([^/]+)/history)", [ctx](const request& req, response& res) {
    auto e = prepare(ctx, req, res, K::job_history, of_path_id<C::job_history>);
    if (!e) return;
    const std::string id = std::get<C::job_history>(e->cmd).id;
    if (!e->caller.admin) {  // a user reads only their own job's history: the core decides whether it is theirs
      core::envelope seen = *e;
      seen.cmd = C::get_job{id};
      auto r = ask(ctx, std::move(seen), res);
      if (!r) return;
      if (r->error) return refuse(res, *r->error);
    }
    // The job's stream, read through the log's index: everything acknowledged is in it.
    auto h = ctx.history->read(id);
    if (!h.available) return refuse(res, {core::error_kind::unavailable, "history_unavailable", h.why, {}, ""});
    if (!h.history) return refuse(res, core::not_found("Job", id));
    reply_json(res, 200, *h.history);
  });

  // --- per-minute counts, from their projection (the dashboard's overview) ---
  s.Get("/stats/minutes", [ctx](const request& req, response& res) {
    auto e = prepare(ctx, req, res, K::minute_stats, [](const request& rq) -> core::command { return build::minute_stats(rq); });
    if (!e) return;
    auto unavailable = [&](const std::string& why) {
      refuse(res, {core::error_kind::unavailable, "stats_unavailable", why, {}, ""});
    };
    if (!ctx.minutes) return unavailable("per-minute counts are not kept by this server");
    // Everything acknowledged before this request is counted: the log's end as of now, ≤ 2 s.
    const uint64_t head = ctx.log ? ctx.log->last_seq() : 0;
    if (!ctx.minutes->wait_applied(head, std::chrono::steady_clock::now() + std::chrono::seconds(2)))
      return unavailable(ctx.minutes->failure().value_or("the per-minute counts are still reading the log (at event " +
                                                         std::to_string(ctx.minutes->applied_seq()) + " of " +
                                                         std::to_string(head) + ")"));
    // As GET /summary: a user counts their own jobs, an admin every job.
    std::optional<std::string> user;
    if (!core::sees_every_job(e->caller)) user = e->caller.name;
    auto series = ctx.minutes->read(user, std::get<C::minute_stats>(e->cmd).since_us);
    json minutes = json::array();
    for (const auto& m : series.minutes)
      minutes.push_back({{"minute", util::format_time_us(m.minute_us)},
                         {"assignments", m.assignments},
                         {"queued", m.queued},
                         {"queued_max", m.queued_max},
                         {"running", m.running}});
    reply_json(res, 200,
               json{{"as_of", series.as_of_us ? json(util::format_time_us(*series.as_of_us)) : json(nullptr)},
                    {"seq", series.seq},
                    {"scope", user ? "own" : "all"},
                    {"window_minutes", ctx.minutes->window_minutes()},
                    {"minutes", std::move(minutes)}});
  });
}

}  // namespace baton::http
