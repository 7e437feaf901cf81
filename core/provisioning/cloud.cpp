#include "core/provisioning/cloud.hpp"

#include <algorithm>

namespace baton::core {

replica_target salad_target(const world& w, const std::string& image, int max_replicas, const std::set<std::string>& stale) {
  int queued = 0, idle_hpc = 0, busy_salad = 0, idle_salad = 0;
  if (auto q = w.queued_by_image.find(image); q != w.queued_by_image.end())
    for (const auto& key : q->second)
      if (key.owner->preferred_clusters.empty()) ++queued;  // pinned jobs wait for their clusters
  for (const auto& [id, wk] : w.workers) {
    if (wk.gone || wk.placeholder || wk.worker_image_key != image || stale.count(id)) continue;
    bool busy = w.held_job(id) != nullptr;
    if (wk.kind == platform::hpc && !busy) ++idle_hpc;
    if (wk.kind == platform::salad) ++(busy ? busy_salad : idle_salad);
  }
  int overflow = std::max(0, queued - idle_hpc);
  replica_target t;
  t.target = std::max(busy_salad, std::min(max_replicas, busy_salad + overflow));
  auto& r = t.record;
  r.image = image;
  r.queued_unpinned = queued;
  r.idle_hpc_workers = idle_hpc;
  r.busy_salad_workers = busy_salad;
  r.idle_salad_workers = idle_salad;
  r.max_replicas = max_replicas;
  r.target = t.target;
  return t;
}

nlohmann::json to_json(const replica_target& t) {
  auto j = events::to_json(t.record);
  j.erase("from");
  j.erase("to");
  return j;
}

decision decide_salad_scaled(int current, const replica_target& t) {
  if (current == t.target) return {};
  auto p = t.record;
  p.from = current;
  p.to = t.target;
  return decision::of(salad_stream, std::move(p));
}

decision decide_salad_failed(const std::string& stage, const std::string& message) {
  return decision::of(salad_stream, ev::cloud_scale_failed{message, stage});
}

}  // namespace baton::core
