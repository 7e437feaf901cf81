#include "actors/scheduler_commands.hpp"

#include "core/access.hpp"
#include "core/scheduling.hpp"

namespace baton::actors {
namespace {

using nlohmann::json;
using namespace baton::core;

handled refuse(const domain_error& e) { return {decision::refuse(e), {e.status, e.body}}; }

handled from(decision d, int status = 204, json body = nullptr) {
  handled h;
  if (d.error) return refuse(*d.error);
  h.decision = std::move(d);
  h.reply = {status, std::move(body)};
  return h;
}

bool fresh(const lease_book& leases, const std::string& worker_id, const scheduler_settings& s, time_us now) {
  return leases.fresh(worker_id, s.liveness, now);
}

std::set<std::string> stale_workers(const lease_book& leases, const scheduler_settings& s, time_us now) {
  return leases.stale(s.liveness, now);
}

std::string derived_state(const world& w, const worker& wk, const lease_book& leases, const scheduler_settings& s,
                          time_us now) {
  if (wk.gone) return "gone";
  if (wk.placeholder) return "provisioning";
  if (!fresh(leases, wk.id, s, now)) return "stale";
  return w.held_job(wk.id) ? "busy" : "idle";
}

std::optional<time_us> lease_of(const lease_book& leases, const std::string& id) { return leases.last(id); }

bool on_configured_cluster(const scheduler_settings& s, const worker& wk) {
  auto c = wk.cluster();
  if (c.empty()) return false;
  for (const auto& spec : s.clusters)
    if (spec.name == c) return true;
  return false;
}

std::string slurm_id_of(const worker& wk) { return wk.provider_id.substr(wk.provider_id.find(':') + 1); }

decision reap_one(const world& w, const worker& wk, time_us lease, time_us now, const std::string& why) {
  auto d = decide_reap(wk, lease, now);
  for (auto& e : d.events) e.payload["why"] = why;
  if (const std::string* held = w.held_job(wk.id)) {
    auto lost = decide_worker_lost(*w.find_job(*held), loss_cause::reaped, now);
    d.events.insert(d.events.end(), lost.events.begin(), lost.events.end());
  }
  return d;
}

checkpoint_report report_from(const json& b) {
  checkpoint_report r;
  if (b.contains("checkpoint_manifest_path")) r.manifest_path = b["checkpoint_manifest_path"].get<std::string>();
  if (b.contains("progress")) r.progress = b["progress"].get<double>();
  if (b.contains("progress_codes")) r.progress_codes = b["progress_codes"];
  if (b.contains("checkpoint_cycle_status")) r.cycle_status = b["checkpoint_cycle_status"].get<std::string>();
  if (b.contains("checkpoint_cycle_failures")) r.cycle_failures = b["checkpoint_cycle_failures"];
  return r;
}

json no_job(const std::string& reason) { return {{"status", "no_job_available"}, {"reason", reason}}; }

handled poll(const world& w, const lease_book& leases, const scheduler_settings& s, const api_command& c, time_us now) {
  const worker* wk = w.find_worker(c.target);
  if (!wk || wk->gone || wk->placeholder)
    return from({}, 200, no_job(wk && wk->gone ? "worker_" + wk->gone_reason : "unknown_worker"));
  if (!fresh(leases, wk->id, s, now)) return from({}, 200, no_job("stale_worker"));
  if (const std::string* held_id = w.held_job(wk->id)) {
    const job& held = *w.find_job(*held_id);
    if (held.status != job_status::cancelling) return from({}, 200, no_job("worker_busy"));
    // The worker is back for more: its cancelled job is finished, then it competes as usual.
    handled h = from(decide_finish_cancel(held, now), 200, no_job("worker_busy"));
    h.again = true;
    return h;
  }
  auto choice = choose_job_for(w, wk->id, stale_workers(leases, s, now));
  if (!choice.job_id) return from({}, 200, no_job("no_job_for_this_worker"));
  const job& j = *w.find_job(*choice.job_id);
  return from(decide_assign(j, wk->id, std::move(choice.record), now), 200,
              {{"status", "assigned"},
               {"job_id", j.id},
               {"input_bundle_path", j.input_bundle_path},
               {"latest_checkpoint_manifest_path",
                j.latest_checkpoint_manifest_path.empty() ? json(nullptr) : json(j.latest_checkpoint_manifest_path)},
               {"attempt", j.attempts + 1}});
}

// Worker-side commands on a job: first whether this caller may act on it, then the body.
handled on_job(const world& w, const api_command& c, time_us now) {
  const job* j = w.find_job(c.target);
  if (!j) return refuse(not_found("Job", c.target));
  if (auto denied = authorize_job(c.caller, c.kind, *j)) return refuse(*denied);
  if (c.invalid_body) return refuse({422, "validation_error", "invalid request", *c.invalid_body});
  switch (c.kind) {
    case op::job_control: {
      bool cancel = j->status == job_status::cancelling || j->status == job_status::cancelled;
      return from({}, 200, {{"job_id", j->id}, {"status", to_string(j->status)}, {"cancellation_requested", cancel}});
    }
    case op::start_job: return from(decide_start(*j, now));
    case op::checkpoint_job: return from(decide_checkpoint(*j, report_from(c.body), now));
    case op::handoff_start: return from(decide_handoff_start(*j, c.body, now));
    case op::handoff_complete: return from(decide_handoff_complete(*j, report_from(c.body), now));
    case op::complete_job: return from(decide_complete(*j, now));
    case op::fail_job: return from(decide_fail(*j, c.body, now));
    default: return refuse({500, "internal", "not a job command", {{"error", "internal"}}});
  }
}

json job_json(const world& w, const scheduler_settings& s, const job& j, time_us now) {
  auto out = to_json(j, now);
  auto reason = queue_blocked_reason(w, s.clusters, j);
  out["queue_blocked_reason"] = reason.empty() ? json(nullptr) : json(reason);
  return out;
}

handled list_jobs(const world& w, const scheduler_settings& s, const api_command& c, time_us now) {
  const auto& q = c.body;  // validated filters: statuses[], worker_id, image, limit, offset
  std::set<std::string> statuses;
  for (const auto& st : q.value("statuses", json::array())) statuses.insert(st.get<std::string>());
  auto worker_id = q.value("worker_id", ""), image = q.value("worker_image_key", "");
  bool include_pruned = q.value("include_pruned", false);
  size_t limit = q.value("limit", 500), offset = q.value("offset", 0), matched = 0;
  json items = json::array();
  for (auto it = w.by_created.rbegin(); it != w.by_created.rend(); ++it) {
    const job& j = w.jobs.at(std::get<1>(*it));
    if ((!statuses.empty() && !statuses.count(to_string(j.status))) || (!worker_id.empty() && j.assigned_worker_id != worker_id) ||
        (!image.empty() && j.worker_image_key != image) || (j.pruned && !include_pruned))
      continue;
    if (matched++ >= offset && items.size() < limit) items.push_back(job_json(w, s, j, now));
  }
  return from({}, 200, {{"items", items}, {"total", matched}, {"offset", offset}, {"limit", limit}});
}

handled list_workers(const world& w, const lease_book& leases, const scheduler_settings& s, const api_command& c,
                     time_us now) {
  const auto& q = c.body;
  std::set<std::string> states;
  for (const auto& st : q.value("states", json::array())) states.insert(st.get<std::string>());
  auto image = q.value("worker_image_key", ""), cluster = q.value("cluster", "");
  size_t limit = q.value("limit", 500), offset = q.value("offset", 0), matched = 0;
  json items = json::array();
  for (auto it = w.by_registered.rbegin(); it != w.by_registered.rend(); ++it) {
    const worker& wk = w.workers.at(std::get<1>(*it));
    auto state = derived_state(w, wk, leases, s, now);
    if (states.empty() ? state == "gone" : !states.count(state)) continue;  // gone workers only when asked for
    if ((!image.empty() && wk.worker_image_key != image) || (!cluster.empty() && wk.cluster() != cluster)) continue;
    if (matched++ >= offset && items.size() < limit) {
      auto j = to_json(wk, state, lease_of(leases, wk.id));
      auto held = w.job_of_worker.find(wk.id);
      j["job_id"] = held == w.job_of_worker.end() ? json(nullptr) : json(held->second);
      j["score"] = score_of(wk);
      items.push_back(std::move(j));
    }
  }
  return from({}, 200, {{"items", items}, {"total", matched}, {"offset", offset}, {"limit", limit}});
}

handled deregister(const world& w, const api_command& c, time_us now) {
  const worker* wk = w.find_worker(c.target);
  if (!wk || wk->gone) return refuse(not_found("Worker", c.target));
  auto d = decide_deregister(*wk, now);
  if (const std::string* held = w.held_job(wk->id)) {
    auto lost = decide_worker_lost(*w.find_job(*held), loss_cause::deregistered, now);
    d.events.insert(d.events.end(), lost.events.begin(), lost.events.end());
  }
  return from(std::move(d));
}

handled prune(const world& w, const api_command& c, time_us now) {
  std::set<std::string> statuses;
  for (const auto& st : c.body.value("statuses", json::array())) statuses.insert(st.get<std::string>());
  time_us cutoff = now - c.body.value("older_than_days", 30) * 86'400'000'000LL;
  decision d;
  for (const auto& [id, j] : w.jobs)
    if (is_terminal(j.status) && !j.pruned && statuses.count(to_string(j.status)) && j.updated_at < cutoff) {
      auto p = decide_prune(j, now);
      d.events.insert(d.events.end(), p.events.begin(), p.events.end());
    }
  size_t n = d.events.size();
  return from(std::move(d), 200, {{"deleted", n}, {"pruned", n}});
}

const cluster_spec* find_cluster(const scheduler_settings& s, const std::string& name) {
  for (const auto& c : s.clusters)
    if (c.name == name) return &c;
  return nullptr;
}

handled cluster_command(const world& w, const lease_book& leases, const scheduler_settings& s, const api_command& c,
                        time_us now) {
  const cluster_spec* spec = find_cluster(s, c.target);
  if (!spec) return refuse(not_found("Cluster", c.target));
  switch (c.kind) {
    case op::set_cluster_enabled: {
      bool enabled = c.body.at("enabled").get<bool>();
      return from(decide_cluster_enabled(w, spec->name, enabled, c.body.value("reason", "")), 200,
                  {{"name", spec->name}, {"enabled", enabled}});
    }
    case op::cluster_placeholders: {
      // Also the stale workers of this cluster: the reaper waits for squeue's word on them.
      std::vector<std::string> stale_ids;
      for (const auto& id : stale_workers(leases, s, now)) {
        const worker* wk = w.find_worker(id);
        if (wk && !wk->gone && !wk->placeholder && wk->cluster() == spec->name) stale_ids.push_back(slurm_id_of(*wk));
      }
      return from({}, 200, {{"slurm_ids", placeholder_slurm_ids(w, spec->name)}, {"stale_slurm_ids", stale_ids}});
    }
    case op::stale_allocations_checked: {
      auto checked = c.body.at("checked").get<std::vector<std::string>>();
      auto alive = c.body.at("alive").get<std::set<std::string>>();
      decision d;
      for (const auto& id : checked) {
        if (alive.count(id)) continue;
        for (const auto& [wid, wk] : w.workers)
          if (!wk.gone && !wk.placeholder && wk.provider_id == spec->name + ":" + id && !fresh(leases, wid, s, now)) {
            auto r = reap_one(w, wk, lease_of(leases, wid).value_or(wk.registered_at), now, "allocation_gone");
            d.events.insert(d.events.end(), r.events.begin(), r.events.end());
          }
      }
      size_t n = d.events.size();
      return from(std::move(d), 200, {{"events", n}});
    }
    case op::placeholders_checked: {
      auto checked = c.body.at("checked").get<std::vector<std::string>>();
      auto alive = c.body.at("alive").get<std::set<std::string>>();
      auto d = decide_placeholders_checked(w, spec->name, checked, alive, now);
      size_t n = d.events.size();
      return from(std::move(d), 200, {{"removed", n}});
    }
    case op::cluster_plan: {
      json plans = json::array();
      for (const auto& p : plan_submissions(w, *spec, stale_workers(leases, s, now), now))
        plans.push_back({{"image", p.image}, {"count", p.count}, {"record", p.record}});
      return from({}, 200, {{"plans", plans}});
    }
    case op::placeholder_submitted: {
      auto d = decide_placeholder(w, *spec, c.new_id, c.body.at("image"), c.body.at("slurm_id"), c.body.at("plan"), now);
      json reply = d.reply;
      return from(std::move(d), 200, reply);
    }
    case op::submission_failed:
      return from(decide_submission_failed(spec->name, c.body.value("image", ""), c.body), 204);
    default: return refuse({500, "internal", "not a cluster command", {{"error", "internal"}}});
  }
}

handled salad_command(const world& w, const lease_book& leases, const scheduler_settings& s, const api_command& c,
                      time_us now) {
  if (!s.salad_enabled) return refuse({404, "not_configured", "Salad is not configured", {{"detail", "Salad is not configured"}, {"error", "not_configured"}}});
  switch (c.kind) {
    case op::salad_status: {
      auto t = salad_target(w, s.salad_image, s.salad_max_replicas, stale_workers(leases, s, now));
      json out = w.salad_status;
      out["enabled"] = true;
      out["worker_image_key"] = s.salad_image;
      out["max_replicas"] = s.salad_max_replicas;
      out["wanted_now"] = t.record;
      return from({}, 200, out);
    }
    case op::salad_target: {
      auto t = salad_target(w, s.salad_image, s.salad_max_replicas, stale_workers(leases, s, now));
      return from({}, 200, {{"target", t.target}, {"record", t.record}});
    }
    case op::salad_scaled: {
      replica_target t{c.body.at("target").get<int>(), c.body.at("record")};
      return from(decide_salad_scaled(c.body.at("current").get<int>(), t), 204);
    }
    case op::salad_failed:
      return from(decide_salad_failed(c.body.value("stage", ""), c.body.value("message", "")), 204);
    default: return refuse({500, "internal", "not a salad command", {{"error", "internal"}}});
  }
}

handled list_clusters(const world& w, const scheduler_settings& s) {
  json items = json::array();
  for (const auto& c : s.clusters) {
    int pending = 0, active = 0;
    for (const auto& [id, wk] : w.workers) {
      if (wk.gone || wk.cluster() != c.name) continue;
      ++(wk.placeholder ? pending : active);
    }
    items.push_back({{"name", c.name},
                     {"enabled", !w.disabled_clusters.count(c.name)},
                     {"strategy", c.strategy},
                     {"worker_images", c.images},
                     {"max_pending_jobs", c.max_pending},
                     {"pending_placeholders", pending},
                     {"workers", active},
                     {"last_submission_failure", w.last_submission_failure.count(c.name)
                                                     ? w.last_submission_failure.at(c.name)
                                                     : json(nullptr)}});
  }
  return from({}, 200, items);
}

// Every image key batond knows from its config: the default, jobs.worker_images, the
// clusters' and Salad's.
std::set<std::string> known_images(const scheduler_settings& s) {
  std::set<std::string> keys = {s.default_worker_image};
  keys.insert(s.extra_worker_images.begin(), s.extra_worker_images.end());
  for (const auto& c : s.clusters) keys.insert(c.images.begin(), c.images.end());
  if (s.salad_enabled && !s.salad_image.empty()) keys.insert(s.salad_image);
  return keys;
}

// RelayMD's 422 for a job naming an image no profile has; baton asks the same of workers.
std::optional<handled> unknown_image(const scheduler_settings& s, const std::string& image) {
  if (known_images(s).count(image)) return std::nullopt;
  std::string message = "Unknown worker image profile: " + image;
  return refuse({422, "unknown_worker_image", message,
                 {{"detail", message}, {"error", "unknown_worker_image"}, {"message", message}, {"field", "worker_image_key"}}});
}

// RelayMD's 422 for a pin no configured cluster has. With no clusters configured, pins name
// the cluster part of hand-started workers' provider ids, and any name is accepted.
std::optional<handled> unknown_pin(const scheduler_settings& s, const std::vector<std::string>& pins) {
  if (s.clusters.empty()) return std::nullopt;
  json known = json::array();
  for (const auto& c : s.clusters) known.push_back(c.name);
  for (const auto& p : pins)
    if (!find_cluster(s, p)) {
      auto message = "unknown preferred cluster '" + p + "'";
      return refuse({422, "unknown_preferred_cluster", message,
                     {{"detail", {{"error", "unknown_preferred_cluster"}, {"cluster_name", p}, {"known_cluster_names", known}}},
                      {"error", "unknown_preferred_cluster"},
                      {"message", message},
                      {"field", "preferred_clusters"}}});
    }
  return std::nullopt;
}

// RelayMD's PUT /config/slurm-clusters/enabled: the body names every configured cluster,
// no more and no fewer; each change is recorded with the operator's identity.
handled set_clusters_enabled(const world& w, const scheduler_settings& s, const api_command& c) {
  const json& wanted = c.body.at("enabled");
  json unknown = json::array(), missing = json::array();
  for (const auto& [name, value] : wanted.items())
    if (!find_cluster(s, name)) unknown.push_back(name);
  for (const auto& spec : s.clusters)
    if (!wanted.contains(spec.name)) missing.push_back(spec.name);
  if (!unknown.empty() || !missing.empty()) {
    std::string message = "the body must name every configured cluster exactly";
    return refuse({400, "cluster_names_mismatch", message,
                   {{"detail", {{"unknown_cluster_names", unknown}, {"missing_cluster_names", missing}}},
                    {"error", "cluster_names_mismatch"},
                    {"message", message},
                    {"field", "enabled"}}});
  }
  decision all;
  for (const auto& spec : s.clusters) {  // config order: a stable event order
    auto d = decide_cluster_enabled(w, spec.name, wanted.at(spec.name).get<bool>(), c.body.value("reason", ""));
    all.events.insert(all.events.end(), d.events.begin(), d.events.end());
  }
  return from(std::move(all));
}

// What GET /healthz warns about (RelayMD's wording for the first).
handled health_warnings(const world& w, const scheduler_settings& s) {
  json warnings = json::array();
  bool all_disabled = !s.clusters.empty();
  for (const auto& c : s.clusters)
    if (!w.disabled_clusters.count(c.name)) all_disabled = false;
  if (all_disabled && !w.queued.empty())
    warnings.push_back("Queued jobs are waiting, but all SLURM clusters are disabled for provisioning.");
  return from({}, 200, warnings);
}

// RelayMD's GET /config/worker-images: every image key batond knows from its config.
handled list_worker_images(const scheduler_settings& s) {
  auto keys = known_images(s);
  json items = json::array();
  for (const auto& k : keys) items.push_back({{"key", k}, {"display_name", k}});
  return from({}, 200, {{"default_worker_image", s.default_worker_image}, {"worker_images", items}});
}

}  // namespace

handled handle(const world& w, const lease_book& leases, const scheduler_settings& s, const api_command& c, time_us now) {
  // The HTTP layer asked the same question before reading the body; asked again here so
  // that no path into the scheduler skips it.
  if (auto denied = authorize(c.caller, c.kind, c.target, {!s.worker_credentials_required})) return refuse(*denied);
  switch (c.kind) {
    case op::create_job: {
      if (auto unknown = unknown_pin(s, c.body.value("preferred_clusters", std::vector<std::string>{}))) return *unknown;
      if (auto unknown = unknown_image(s, c.body.value("worker_image_key", s.default_worker_image))) return *unknown;
      create_job cj;
      cj.id = c.target;
      cj.title = c.body.value("title", "");
      cj.input_bundle_path = c.body.value("input_bundle_path", "");
      cj.worker_image_key = c.body.value("worker_image_key", s.default_worker_image);
      cj.comment = c.body.value("comment", "");
      cj.preferred_clusters = c.body.value("preferred_clusters", std::vector<std::string>{});
      cj.max_attempts = c.body.value("max_attempts", s.max_attempts);
      auto d = decide_create(w.find_job(c.target), cj, now);
      if (d.error) return refuse(*d.error);
      // The reply is the job as it will be once the event is applied.
      job preview;
      preview.id = c.target;
      for (const auto& e : d.events) evolve(preview, e.type, e.payload, now);
      return from(std::move(d), 200, to_json(preview, now));
    }
    case op::get_job: {
      const job* j = w.find_job(c.target);
      return j ? from({}, 200, job_json(w, s, *j, now)) : refuse(not_found("Job", c.target));
    }
    case op::list_jobs: return list_jobs(w, s, c, now);
    case op::cancel_job: {
      const job* j = w.find_job(c.target);
      return j ? from(decide_cancel(*j, c.body.value("force", false), now)) : refuse(not_found("Job", c.target));
    }
    case op::requeue_job: {
      const job* j = w.find_job(c.target);
      if (!j) return refuse(not_found("Job", c.target));
      auto d = decide_requeue(*j, c.new_id, now);
      if (d.error) return refuse(*d.error);
      job preview;
      preview.id = c.new_id;
      for (const auto& e : d.events)
        if (e.stream == job_stream(c.new_id)) evolve(preview, e.type, e.payload, now);
      return from(std::move(d), 200, to_json(preview, now));
    }
    case op::prune_jobs: return prune(w, c, now);
    case op::job_history: return refuse({500, "internal", "job history is read from its projection", {{"error", "internal"}}});
    case op::register_worker: {
      register_worker r;
      r.id = c.new_id;
      r.kind = platform_from(c.body.value("platform", "hpc")).value_or(platform::hpc);
      r.gpu_model = c.body.value("gpu_model", "");
      r.gpu_count = c.body.value("gpu_count", 1);
      r.vram_gb = c.body.value("vram_gb", 0.0);
      r.worker_image_key = c.body.value("worker_image_key", s.default_worker_image);
      r.provider_id = c.body.value("provider_id", "");
      r.credential_sha256 = c.credential_sha256;
      if (auto unknown = unknown_image(s, r.worker_image_key)) return *unknown;
      const worker* placeholder = nullptr;
      if (auto it = w.placeholder_by_provider.find(r.provider_id); !r.provider_id.empty() && it != w.placeholder_by_provider.end())
        placeholder = w.find_worker(it->second);
      auto d = decide_register(placeholder, r, now);
      if (d.error) return refuse(*d.error);
      // One live worker per allocation: a worker registering again from the same allocation
      // (its agent restarted) retires the earlier one, whose job goes back to the queue.
      if (!placeholder && !r.provider_id.empty())
        for (const auto& [id, old] : w.workers)
          if (!old.gone && !old.placeholder && old.provider_id == r.provider_id) {
            auto retire = decide_deregister(old, now);
            for (auto& e : retire.events) e.payload["replaced_by"] = r.id;
            if (const std::string* held = w.held_job(old.id)) {
              auto lost = decide_worker_lost(*w.find_job(*held), loss_cause::orphaned, now);
              retire.events.insert(retire.events.end(), lost.events.begin(), lost.events.end());
            }
            d.events.insert(d.events.begin(), retire.events.begin(), retire.events.end());
          }
      json body = d.reply;
      // What the worker must keep to: heartbeats this often, stale after this long.
      body["heartbeat_interval_seconds"] = s.heartbeat_interval_seconds;
      body["stale_after_seconds"] = static_cast<double>(s.liveness.stale_after_us) / 1e6;
      return from(std::move(d), 200, body);
    }
    case op::heartbeat: {
      const worker* wk = w.find_worker(c.target);
      if (!wk || wk->gone) return refuse(not_found("Worker", c.target));
      decision d;
      if (const std::string* held = w.held_job(wk->id); held && c.body.value("job_id", "") == *held) {
        std::optional<double> progress;
        std::optional<json> codes;
        if (c.body.contains("progress")) progress = c.body["progress"].get<double>();
        if (c.body.contains("progress_codes")) codes = c.body["progress_codes"];
        d = decide_progress(*w.find_job(*held), wk->id, progress, codes, now);
      }
      return from(std::move(d));
    }
    case op::deregister: return deregister(w, c, now);
    case op::request_job: return poll(w, leases, s, c, now);
    case op::list_workers: return list_workers(w, leases, s, c, now);
    case op::list_clusters: return list_clusters(w, s);
    case op::set_clusters_enabled: return set_clusters_enabled(w, s, c);
    case op::list_worker_images: return list_worker_images(s);
    case op::health_warnings: return health_warnings(w, s);
    case op::set_cluster_enabled: case op::cluster_placeholders: case op::placeholders_checked:
    case op::cluster_plan: case op::placeholder_submitted: case op::submission_failed:
    case op::stale_allocations_checked:
      return cluster_command(w, leases, s, c, now);
    case op::salad_status: case op::salad_target: case op::salad_scaled: case op::salad_failed:
      return salad_command(w, leases, s, c, now);
    default: return on_job(w, c, now);
  }
}

decision reap(const world& w, const lease_book& leases, const scheduler_settings& s, time_us now) {
  decision out;
  auto add = [&](const decision& d) { out.events.insert(out.events.end(), d.events.begin(), d.events.end()); };
  for (const auto& [id, wk] : w.workers) {
    if (wk.gone || wk.placeholder || fresh(leases, id, s, now)) continue;
    auto lease = lease_of(leases, id).value_or(wk.registered_at);
    bool slurm = on_configured_cluster(s, wk);
    // Its allocation may still run (a network blip, a busy login node): requeueing now
    // could put the job on two workers. The cluster actor's squeue check decides, unless
    // the silence has gone on too long.
    if (slurm && now - std::max(lease, s.liveness.grace_from_us) < s.hpc_silent_cap_us) continue;
    add(reap_one(w, wk, lease, now, slurm ? "silent_past_cap" : "heartbeat_timeout"));
  }
  add(decide_unconfigured_placeholders(w, s.clusters));
  // Jobs still held by a worker that is gone (or never known): nothing else will free them.
  for (const auto& [worker_id, job_id] : w.job_of_worker) {
    const worker* wk = w.find_worker(worker_id);
    if (!wk || wk->gone) add(decide_worker_lost(w.jobs.at(job_id), loss_cause::orphaned, now));
  }
  return out;
}

}  // namespace baton::actors
