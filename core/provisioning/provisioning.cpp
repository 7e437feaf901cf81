#include "core/provisioning/provisioning.hpp"

#include <algorithm>

#include "core/util/time.hpp"

namespace baton::core {

std::string cluster_stream(const std::string& name) { return "cluster/" + name; }

std::string slurm_id_of(const worker& wk) {
  auto colon = wk.provider_id.find(':');
  return colon == std::string::npos ? "" : wk.provider_id.substr(colon + 1);
}

namespace {

bool serves(const cluster_spec& c, const job& j) {
  if (c.gpu_count > 0 && c.gpu_count < static_cast<int>(j.gpu_count)) return false;  // its allocations are too small
  return j.preferred_clusters.empty() ||
         std::find(j.preferred_clusters.begin(), j.preferred_clusters.end(), c.name) != j.preferred_clusters.end();
}

}  // namespace

std::vector<submission_plan> plan_submissions(const world& w, const cluster_spec& c, const std::set<std::string>& stale,
                                              const deadline_rule& rule, time_us soon, time_us now) {
  std::vector<submission_plan> out;
  if (w.disabled_clusters.count(c.name)) return out;
  // What the last plan already provides for: workers with a planned start, placeholders with
  // a reservation on them.
  std::set<std::string> planned_workers, planned_jobs;
  for (const auto& [worker_id, job_id] : w.plan.start_for_worker) {
    planned_workers.insert(worker_id);
    planned_jobs.insert(job_id);
  }
  for (const auto& [job_id, slot] : w.plan.reservations) planned_workers.insert(slot.worker_id);
  auto covered = [&](const job& j) {
    if (planned_jobs.count(j.id)) return true;
    auto r = w.plan.reservations.find(j.id);
    if (r == w.plan.reservations.end()) return false;
    const worker* on = w.find_worker(r->second.worker_id);
    return (on && on->placeholder) || r->second.start <= now + soon;
  };
  // The entry's allocations fit the job: a pilot of wall_time_seconds (0: unlimited) holds it.
  auto fits_wall_time = [&](const job& j) {
    return c.wall_time_seconds <= 0 ||
           fit_of(c.wall_time_seconds * 1'000'000, j.time_limit_seconds, j.checkpoints, rule).admitted;
  };
  for (const auto& image : c.images) {
    auto q = w.queued_by_image.find(image);
    if (q == w.queued_by_image.end()) continue;
    int demand = 0, too_long = 0, placed = 0;
    time_us oldest = 0;
    for (const auto& key : q->second) {
      const job& j = *key.owner;
      if (!serves(c, j)) continue;
      if (!fits_wall_time(j)) {
        ++too_long;
        continue;
      }
      if (covered(j)) {
        ++placed;
        continue;
      }
      // when it (re)entered the queue; the queue is in priority order, not age order
      oldest = demand++ == 0 ? j.status_changed_at : std::min(oldest, j.status_changed_at);
    }
    if (demand == 0) continue;
    int idle = 0;
    if (auto it = w.idle_by_image.find(image); it != w.idle_by_image.end())
      for (const auto& r : it->second)
        if (!stale.count(r.owner->id) && !planned_workers.count(r.owner->id)) ++idle;
    int pending_here = 0, pending_all = 0, pending_free = 0;
    for (const auto& [provider, worker_id] : w.placeholder_by_provider) {
      const worker& p = w.workers.at(worker_id);
      if (p.worker_image_key != image) continue;
      ++pending_all;
      if (!planned_workers.count(worker_id)) ++pending_free;
      if (p.cluster() == c.name) ++pending_here;
    }
    int room = c.max_pending - pending_here, count = 0;
    if (c.strategy == "continuous")
      count = room;
    else if (c.strategy == "jit_threshold" && now - oldest < c.jit_threshold_us)
      count = 0;
    else
      count = std::min(room, demand - idle - pending_free);  // only demand nobody will serve soon
    const int n = std::max(count, 0);
    if (n == 0) continue;
    submission_plan p{image, n, {}};
    auto& r = p.record;
    r.strategy = c.strategy;
    r.count = n;
    r.image = image;
    r.queued_compatible = demand;
    r.placed_by_plan = placed;
    r.longer_than_wall_time = too_long;
    r.oldest_queued_at = util::format_time_us(oldest);
    r.idle_workers = idle;
    r.pending_placeholders = pending_all;
    r.pending_unplanned = pending_free;
    r.pending_here = pending_here;
    r.max_pending_jobs = c.max_pending;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::string> placeholder_slurm_ids(const world& w, const std::string& cluster) {
  std::vector<std::pair<long long, std::string>> ids;
  for (const auto& [provider, worker_id] : w.placeholder_by_provider) {
    const worker& p = w.workers.at(worker_id);
    if (p.cluster() != cluster) continue;
    auto id = slurm_id_of(p);
    ids.emplace_back(std::atoll(id.c_str()), id);
  }
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> out;
  for (auto& [n, id] : ids) out.push_back(id);
  return out;
}

decision decide_placeholder(const world& w, const cluster_spec& c, const std::string& worker_id, const std::string& image,
                            const std::string& slurm_id, const std::optional<ev::placeholder_plan_record>& plan, time_us now,
                            const std::string& registration_sha256) {
  std::string provider = c.name + ":" + slurm_id;
  if (w.placeholder_by_provider.count(provider) || w.find_worker(worker_id))
    return decision::refuse(
        {error_kind::conflict, "duplicate_placeholder", "placeholder exists: " + provider, {{"provider_id", provider}}, ""});
  // The allocation started and its worker registered before sbatch's answer got here: a
  // placeholder now would never be adopted and would hold a max_pending slot.
  for (const auto& [id, wk] : w.workers)
    if (!wk.gone && !wk.placeholder && wk.provider_id == provider) return {};
  ev::worker_placeholder_created p;
  p.provider_id = provider;
  p.cluster = c.name;
  p.slurm_job_id = slurm_id;
  p.worker_image_key = image;
  p.gpu_model = c.gpu_type;
  p.gpu_count = c.gpu_count;
  p.wall_time_seconds = c.wall_time_seconds;
  if (plan) p.plan = *plan;
  if (!registration_sha256.empty()) p.registration_sha256 = registration_sha256;
  return decision::of(worker_stream(worker_id), std::move(p));
}

decision decide_placeholders_checked(const world& w, const std::string& cluster, const std::vector<std::string>& checked,
                                     const std::set<std::string>& alive, time_us now) {
  decision d;
  for (const auto& id : checked) {
    if (alive.count(id)) continue;
    auto it = w.placeholder_by_provider.find(cluster + ":" + id);
    if (it == w.placeholder_by_provider.end()) continue;  // adopted (or removed) while squeue ran
    d.events.push_back({worker_stream(it->second), ev::worker_placeholder_removed{cluster, "allocation_gone", id}});
  }
  return d;
}

decision decide_unconfigured_placeholders(const world& w, const std::vector<cluster_spec>& clusters) {
  decision d;
  for (const auto& [provider, worker_id] : w.placeholder_by_provider) {
    auto cluster = w.workers.at(worker_id).cluster();
    if (!find_named(clusters, cluster))
      d.events.push_back({worker_stream(worker_id), ev::worker_placeholder_removed{cluster, "cluster_not_configured",
                                                                                   slurm_id_of(w.workers.at(worker_id))}});
  }
  return d;
}

decision decide_submission_failed(const std::string& cluster, const std::string& image, ev::cluster_submission_failed failure) {
  failure.image = image;
  return decision::of(cluster_stream(cluster), std::move(failure));
}

decision decide_cluster_enabled(const world& w, const std::string& cluster, bool enabled, const std::string& reason) {
  decision d;
  bool now_enabled = !w.disabled_clusters.count(cluster);
  if (now_enabled != enabled)
    d.events.push_back({cluster_stream(cluster),
                        enabled ? ev::payload(ev::cluster_enabled{reason}) : ev::payload(ev::cluster_disabled{reason})});
  return d;
}

std::string queue_blocked_reason(const world& w, const std::vector<cluster_spec>& clusters, const job& j) {
  if (clusters.empty() || j.status != job_status::queued) return "";  // workers started by hand: nothing to say
  auto has_image = [&](const cluster_spec& c) {
    return std::find(c.images.begin(), c.images.end(), j.worker_image_key) != c.images.end();
  };
  auto enabled = [&](const cluster_spec& c) { return !w.disabled_clusters.count(c.name); };
  if (!j.preferred_clusters.empty()) {
    bool named = false, named_enabled = false;
    for (const auto& c : clusters) {
      if (!serves(c, j)) continue;
      named = true;
      if (!enabled(c)) continue;
      named_enabled = true;
      if (has_image(c)) return "";
    }
    if (!named) return "no_matching_pinned_clusters";
    if (!named_enabled) return "no_enabled_pinned_clusters";
    return "no_compatible_pinned_worker_image_clusters";
  }
  bool image_somewhere = false;
  for (const auto& c : clusters) {
    if (!has_image(c)) continue;
    if (enabled(c)) return "";
    image_somewhere = true;
  }
  return image_somewhere ? "no_enabled_worker_image_clusters" : "no_compatible_worker_image_clusters";
}

}  // namespace baton::core
