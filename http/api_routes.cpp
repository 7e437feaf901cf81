#include "http/api_routes.hpp"

#include <atomic>
#include <optional>

#include "events/sha256.hpp"
#include "events/bytes.hpp"
#include "http/json_reply.hpp"
#include "http/request_parsing.hpp"

namespace baton::http {
namespace {

using nlohmann::json;
using actors::api_command;
using actors::op;

// Fills the command from the request; throws invalid_field for a 422.
using builder = std::function<void(const request&, api_command&)>;

// Correlation ids for requests that bring none: unique per daemon run, cheap (no RNG call).
std::string next_request_id() {
  static const std::string run = new_uuid().substr(0, 8);
  static std::atomic<uint64_t> counter{0};
  return "req-" + run + "-" + std::to_string(++counter);
}

void deny(response& res, const core::domain_error& e) { reply_json(res, e.status, e.body); }

// Who is calling, from the credential alone: X-Worker-Token "<worker id>.<secret>" must be a
// registered worker's own; X-API-Token the operator's or the pilot token. Anything else, a
// forged or malformed credential included, is answered 401 here.
std::optional<core::principal> identify(const api_context& ctx, const request& req, response& res) {
  auto worker_token = req.get_header_value("X-Worker-Token");
  if (!worker_token.empty()) {
    auto dot = worker_token.find('.');
    bool ok = dot != std::string::npos && ctx.credentials &&
              ctx.credentials->verify(worker_token.substr(0, dot),
                                      events::to_hex(events::sha256(worker_token.substr(dot + 1))));
    if (!ok) {
      reply_json(res, 401, {{"detail", "Invalid worker token"}, {"error", "invalid_worker_token"},
                            {"message", "Invalid worker token"}});
      return std::nullopt;
    }
    return core::principal::of_worker(worker_token.substr(0, dot));
  }
  auto token = req.get_header_value("X-API-Token");
  if (!token.empty() && core::constant_time_equal(token, ctx.api_token)) {
    auto who = req.get_header_value("X-Baton-Operator");
    return core::principal::operator_named(who.substr(0, 64));
  }
  if (!token.empty() && !ctx.pilot_token.empty() && core::constant_time_equal(token, ctx.pilot_token))
    return core::principal::pilot_token();
  reply_json(res, 401, {{"detail", "Invalid API token"}, {"error", "invalid_api_token"}, {"message", "Invalid API token"}});
  return std::nullopt;
}

// The worker a worker_self command names, as sent (checked for form later).
std::string named_worker(const request& req) {
  return req.path_params.empty() ? req.get_param_value("worker_id") : req.path_params[0];
}

// A poll the scheduler would answer with no job and no event: answered here, on the HTTP
// thread, from the scheduler's read model (projections/idle_poll_view.hpp).
bool answered_from_view(const api_context& ctx, const api_command& c, response& res) {
  if (!ctx.idle_view || !ctx.clock) return false;
  if (!ctx.idle_view->answers_no_job(c.target, ctx.clock())) return false;
  static const std::string body = json{{"status", "no_job_available"}, {"reason", "no_job_for_this_worker"}}.dump();
  res.status = 200;
  res.set_content(body, "application/json");
  return true;
}

// Settles who is calling and whether they may send this kind of command, then (only then)
// validates and shapes the command. Empty when res already holds the answer (401/403/422,
// or an idle poll answered from the view).
std::optional<api_command> prepare(const api_context& ctx, const request& req, response& res, op kind,
                                   const builder& build) {
  auto who = identify(ctx, req, res);
  if (!who) return std::nullopt;
  if (auto denied = core::authorize(*who, kind, named_worker(req), {ctx.accept_shared_token})) {
    deny(res, *denied);
    return std::nullopt;
  }
  api_command c;
  c.kind = kind;
  c.caller = std::move(*who);
  c.actor = c.caller.actor();
  c.request_id = req.get_header_value("X-Request-Id");
  if (c.request_id.empty()) c.request_id = next_request_id();
  try {
    if (build) build(req, c);
  } catch (const invalid_field& e) {
    // A worker's report on a job: whether it may act on the job is the scheduler's to say,
    // and comes first; the scheduler answers this 422 after that check.
    if (core::access_of(kind) != core::access_class::worker_job || c.target.empty()) {
      reply_json(res, 422, validation_body(e));
      return std::nullopt;
    }
    c.invalid_body = validation_body(e);
  }
  if (kind == op::request_job && answered_from_view(ctx, c, res)) return std::nullopt;
  if (c.caller.k == core::principal::kind::operator_ && core::access_of(kind) == core::access_class::worker_self)
    c.actor = "worker:" + c.target;  // a RelayMD worker on the shared token
  return c;
}

void to_response(const actors::api_reply& r, response& res) {
  if (r.status == 204 || r.body.is_null()) {
    res.status = r.status;
    return;
  }
  reply_json(res, r.status, r.body);
}

// Blocking: for routes that reshape the scheduler's answer (run on the server's pool).
void run(const api_context& ctx, const request& req, response& res, op kind, const builder& build) {
  auto c = prepare(ctx, req, res, kind, build);
  if (!c) return;
  auto r = actors::submit(ctx.scheduler, std::move(*c), std::chrono::seconds(30));
  if (!r) {
    reply_error(res, 503, "scheduler_unavailable", "the scheduler did not answer within 30 s");
    return;
  }
  to_response(*r, res);
}

// Non-blocking: the scheduler's reply is sent when it comes (after its events are durable);
// no thread waits for it. For the hot worker calls (poll, heartbeat, job reports).
void run_async(const api_context& ctx, const request& req, op kind, const builder& build, respond_fn respond) {
  response res;
  auto c = prepare(ctx, req, res, kind, build);
  if (!c) return respond(std::move(res));
  actors::submit_async(ctx.scheduler, std::move(*c), [respond = std::move(respond)](actors::api_reply r) {
    response out;
    to_response(r, out);
    respond(std::move(out));
  });
}

// What a path's id names: a job or worker (a UUID), or a configured cluster (a name).
enum class path_id { uuid, name };

// Registers METHOD path -> op, answered asynchronously; the first regex group (if any) is the target.
void route(router& s, const std::string& method, const std::string& path, const api_context& ctx, op kind,
           builder build = nullptr, path_id id = path_id::uuid) {
  s.async(method, path, [ctx, kind, build, id](const request& req, respond_fn respond) {
    run_async(ctx, req, kind, [&](const request& rq, api_command& c) {
      if (!rq.path_params.empty())
        c.target = id == path_id::uuid ? checked_uuid(rq.path_params[0], "id") : checked_id(rq.path_params[0], "name");
      if (build) build(rq, c);
    }, std::move(respond));
  });
}

// RelayMD clients expect a bare list; the page position travels in headers.
void as_bare_list(response& res) {
  if (res.status != 200) return;
  auto page = json::parse(res.body);
  res.set_header("X-Total-Count", std::to_string(page["total"].get<size_t>()));
  res.set_header("X-Offset", std::to_string(page["offset"].get<size_t>()));
  res.set_header("X-Limit", std::to_string(page["limit"].get<size_t>()));
  reply_json(res, 200, page["items"]);
}

json checkpoint_body(const request& req, bool require_path) {
  auto b = object_body(req, true);
  json out = json::object();
  auto path = opt_string(b, "checkpoint_manifest_path");
  if (!path) path = opt_string(b, "checkpoint_path");  // RelayMD's deprecated alias
  if (require_path && !path) throw invalid_field("checkpoint_manifest_path", "checkpoint_manifest_path is required");
  if (path) out["checkpoint_manifest_path"] = *path;
  if (auto p = opt_number(b, "progress", 0, 1)) out["progress"] = *p;
  if (auto c = opt_array(b, "progress_codes")) out["progress_codes"] = *c;
  if (auto s = opt_string(b, "checkpoint_cycle_status", 64)) out["checkpoint_cycle_status"] = *s;
  if (auto f = opt_array(b, "checkpoint_cycle_failures")) out["checkpoint_cycle_failures"] = *f;
  return out;
}

void build_create(const request& req, api_command& c) {
  auto b = object_body(req, false);
  json out;
  auto id = opt_string(b, "id", 128);
  c.target = id ? checked_uuid(*id, "id") : new_uuid();
  out["title"] = req_string(b, "title", 512);
  out["input_bundle_path"] = req_string(b, "input_bundle_path");
  if (auto img = opt_string(b, "worker_image_key", 128)) {
    if (img->find_first_not_of(" \t") == std::string::npos) throw invalid_field("worker_image_key", "must not be blank");
    out["worker_image_key"] = *img;
  }
  std::vector<std::string> pins;
  if (auto arr = opt_array(b, "preferred_clusters"))
    for (const auto& p : *arr) {
      if (!p.is_string()) throw invalid_field("preferred_clusters", "must be a list of cluster names");
      auto name = p.get<std::string>();
      auto start = name.find_first_not_of(" \t"), end = name.find_last_not_of(" \t");
      if (start == std::string::npos) throw invalid_field("preferred_clusters", "must not contain blank names");
      name = name.substr(start, end - start + 1);
      if (std::find(pins.begin(), pins.end(), name) == pins.end()) pins.push_back(name);  // first-seen order
    }
  out["preferred_clusters"] = pins;
  if (auto comment = opt_string(b, "comment", 100000)) {
    auto start = comment->find_first_not_of(" \t\r\n"), end = comment->find_last_not_of(" \t\r\n");
    std::string trimmed = start == std::string::npos ? "" : comment->substr(start, end - start + 1);
    if (trimmed.size() > 2000) throw invalid_field("comment", "must be at most 2000 characters");
    out["comment"] = trimmed;
  }
  if (auto m = opt_int(b, "max_attempts", 1, 1000)) out["max_attempts"] = *m;
  c.body = out;
}

void build_register(const request& req, api_command& c) {
  auto b = object_body(req, false);
  json out;
  auto platform = req_string(b, "platform", 16);
  if (platform != "hpc" && platform != "salad") throw invalid_field("platform", "must be 'hpc' or 'salad'");
  out["platform"] = platform;
  out["gpu_model"] = opt_string(b, "gpu_model", 128).value_or("");
  out["gpu_count"] = opt_int(b, "gpu_count", 0, 1024).value_or(1);
  out["vram_gb"] = opt_number(b, "vram_gb", 0, 100000).value_or(0);
  if (auto img = opt_string(b, "worker_image_key", 128)) out["worker_image_key"] = *img;
  // RelayMD sends provider_id; baton-worker may send slurm_job_id as "<cluster>:<id>".
  auto provider = opt_string(b, "provider_id", 256);
  if (!provider) provider = opt_string(b, "slurm_job_id", 256);
  if (provider && !provider->empty()) out["provider_id"] = checked_id(*provider, "provider_id");
  c.body = out;
  c.new_id = new_uuid();
}

}  // namespace

void add_api_routes(router& s, api_context ctx) {
  const std::string Get = "GET", Post = "POST", Delete = "DELETE";

  // --- workers ---
  s.Post("/workers/register", [ctx](const request& req, response& res) {
    // The worker's own credential: handed back once, only its hash is logged.
    std::string secret = new_secret_hex();
    run(ctx, req, res, op::register_worker, [&](const request& rq, api_command& c) {
      build_register(rq, c);
      c.credential_sha256 = events::to_hex(events::sha256(secret));
    });
    if (res.status == 200) {
      auto body = json::parse(res.body);
      body["worker_token"] = body["worker_id"].get<std::string>() + "." + secret;
      reply_json(res, 200, body);
    }
  });
  route(s, Post, R"(/workers/([^/]+)/heartbeat)", ctx, op::heartbeat, [](const request& req, api_command& c) {
    auto b = object_body(req, true);
    json out = json::object();
    if (auto j = opt_string(b, "job_id", 128)) out["job_id"] = *j;
    if (auto p = opt_number(b, "progress", 0, 1)) out["progress"] = *p;
    if (auto codes = opt_array(b, "progress_codes")) out["progress_codes"] = *codes;
    c.body = out;
  });
  route(s, Post, R"(/workers/([^/]+)/deregister)", ctx, op::deregister);
  s.Get("/workers", [ctx](const request& rq, response& res) {
    run(ctx, rq, res, op::list_workers, [](const request& req, api_command& c) {
    json q = {{"limit", query_int(req, "limit", 500, 1, 10000)}, {"offset", query_int(req, "offset", 0, 0, INT64_MAX)}};
    if (req.has_param("state")) {
      json states = json::array();
      for (size_t i = 0; i < req.get_param_value_count("state"); ++i) {
        auto st = req.get_param_value("state", i);
        if (st != "idle" && st != "busy" && st != "stale" && st != "provisioning" && st != "gone")
          throw invalid_field("state", "must be one of idle, busy, stale, provisioning, gone");
        states.push_back(st);
      }
      q["states"] = states;
    }
    if (req.has_param("worker_image_key")) q["worker_image_key"] = req.get_param_value("worker_image_key");
    if (req.has_param("cluster")) q["cluster"] = req.get_param_value("cluster");
    c.body = q;
    });
    as_bare_list(res);
  });

  // --- jobs, worker side ---
  s.async("POST", "/jobs/request", [ctx](const request& req, respond_fn respond) {
    run_async(ctx, req, op::request_job, [](const request& rq, api_command& c) {
      if (!rq.has_param("worker_id")) throw invalid_field("worker_id", "query parameter worker_id is required");
      c.target = checked_uuid(rq.get_param_value("worker_id"), "worker_id");
    }, std::move(respond));
  });
  route(s, Get, R"(/jobs/([^/]+)/control)", ctx, op::job_control);
  route(s, Post, R"(/jobs/([^/]+)/start)", ctx, op::start_job);
  route(s, Post, R"(/jobs/([^/]+)/checkpoint)", ctx, op::checkpoint_job,
        [](const request& req, api_command& c) { c.body = checkpoint_body(req, true); });
  route(s, Post, R"(/jobs/([^/]+)/handoff/start)", ctx, op::handoff_start, [](const request& req, api_command& c) {
    auto b = object_body(req, false);
    json out = {{"reason", req_string(b, "reason", 256)}};
    out["progress_codes"] = opt_array(b, "progress_codes").value_or(json::array());
    if (auto p = opt_number(b, "progress", 0, 1)) out["progress"] = *p;
    if (auto d = opt_number(b, "deadline_epoch_seconds", 0, 1e12)) out["deadline_epoch_seconds"] = *d;
    if (auto m = opt_string(b, "message", 2000)) out["message"] = *m;
    c.body = out;
  });
  route(s, Post, R"(/jobs/([^/]+)/handoff/complete)", ctx, op::handoff_complete,
        [](const request& req, api_command& c) { c.body = checkpoint_body(req, false); });
  route(s, Post, R"(/jobs/([^/]+)/complete)", ctx, op::complete_job);
  route(s, Post, R"(/jobs/([^/]+)/fail)", ctx, op::fail_job, [](const request& req, api_command& c) {
    auto b = object_body(req, true);
    json out = json::object();
    if (auto p = opt_string(b, "failure_artifact_path")) out["failure_artifact_path"] = *p;
    if (auto r = opt_string(b, "reason", 256)) out["reason"] = *r;
    if (auto d = opt_string(b, "detail", 10000)) out["detail"] = *d;
    c.body = out;
  });

  // --- jobs, operator side ---
  s.Post("/jobs", [ctx](const request& req, response& res) { run(ctx, req, res, op::create_job, build_create); });
  s.Get("/jobs", [ctx](const request& req, response& res) {
    run(ctx, req, res, op::list_jobs, [](const request& rq, api_command& c) {
      json q = {{"limit", query_int(rq, "limit", 500, 1, 10000)}, {"offset", query_int(rq, "offset", 0, 0, INT64_MAX)},
                {"include_pruned", query_bool(rq, "include_pruned", false)}};
      json statuses = json::array();
      for (size_t i = 0; i < rq.get_param_value_count("status"); ++i) {
        auto st = rq.get_param_value("status", i);
        if (!core::job_status_from(st)) throw invalid_field("status", "unknown job status '" + st + "'");
        statuses.push_back(st);
      }
      q["statuses"] = statuses;
      if (rq.has_param("worker_id")) q["worker_id"] = rq.get_param_value("worker_id");
      if (rq.has_param("worker_image_key")) q["worker_image_key"] = rq.get_param_value("worker_image_key");
      c.body = q;
    });
    as_bare_list(res);
  });
  route(s, Get, R"(/jobs/([^/]+))", ctx, op::get_job);
  route(s, Delete, R"(/jobs/([^/]+))", ctx, op::cancel_job,
        [](const request& req, api_command& c) { c.body = {{"force", query_bool(req, "force", false)}}; });
  route(s, Post, R"(/jobs/([^/]+)/requeue)", ctx, op::requeue_job,
        [](const request&, api_command& c) { c.new_id = new_uuid(); });
  s.Delete("/jobs", [ctx](const request& req, response& res) {
    run(ctx, req, res, op::prune_jobs, [](const request& rq, api_command& c) {
      json statuses = json::array();
      for (size_t i = 0; i < rq.get_param_value_count("status"); ++i) {
        auto st = rq.get_param_value("status", i);
        auto parsed = core::job_status_from(st);
        if (!parsed || !core::is_terminal(*parsed))
          throw invalid_field("status", "only terminal statuses (completed, failed, cancelled) can be pruned, got '" + st + "'");
        statuses.push_back(st);
      }
      if (statuses.empty()) statuses = {"completed", "failed", "cancelled"};
      c.body = {{"statuses", statuses}, {"older_than_days", query_int(rq, "older_than_days", 30, 1, 100000)}};
    });
  });
  // --- clusters ---
  s.Get("/clusters", [ctx](const request& req, response& res) { run(ctx, req, res, op::list_clusters, nullptr); });
  s.Get("/config/slurm-clusters", [ctx](const request& req, response& res) {
    run(ctx, req, res, op::list_clusters, nullptr);
    if (res.status == 200) reply_json(res, 200, {{"clusters", json::parse(res.body)}});  // RelayMD's shape
  });
  s.Put("/config/slurm-clusters/enabled", [ctx](const request& req, response& res) {
    run(ctx, req, res, op::set_clusters_enabled, [](const request& rq, api_command& c) {
      auto b = object_body(rq, false);
      if (!b.contains("enabled") || !b["enabled"].is_object())
        throw invalid_field("enabled", "enabled must be an object of cluster name -> true/false");
      for (const auto& [name, value] : b["enabled"].items())
        if (!value.is_boolean()) throw invalid_field("enabled." + name, "must be true or false");
      c.body = {{"enabled", b["enabled"]}, {"reason", opt_string(b, "reason", 500).value_or("")}};
    });
  });
  s.Get("/config/worker-images", [ctx](const request& req, response& res) {
    run(ctx, req, res, op::list_worker_images, nullptr);
  });
  s.Get("/cloud/salad", [ctx](const request& req, response& res) { run(ctx, req, res, op::salad_status, nullptr); });
  for (bool enable : {true, false})
    route(s, Post, enable ? R"(/clusters/([^/]+)/enable)" : R"(/clusters/([^/]+)/disable)", ctx, op::set_cluster_enabled,
          [enable](const request& req, api_command& c) {
            auto b = object_body(req, true);
            c.body = {{"enabled", enable}, {"reason", opt_string(b, "reason", 500).value_or("")}};
          }, path_id::name);
  s.Get(R"(/jobs/([^/]+)/history)", [ctx](const request& req, response& res) {
    auto c = prepare(ctx, req, res, op::job_history,
                     [](const request& rq, api_command& cmd) { cmd.target = checked_uuid(rq.path_params[0], "id"); });
    if (!c) return;
    const std::string& id = c->target;
    // Waits (briefly) until the projection holds everything the log held when the read began.
    auto h = ctx.history->read(id, std::chrono::seconds(2));
    if (!h.available) {
      reply_error(res, 503, "history_unavailable", h.why);
      return;
    }
    if (!h.history) {
      reply_json(res, 404, {{"detail", "Job not found"}, {"error", "not_found"}, {"id", id}});
      return;
    }
    reply_json(res, 200, *h.history);
  });
}

}  // namespace baton::http
