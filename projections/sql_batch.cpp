#include "projections/sql_batch.hpp"

#include "events/payload.hpp"
#include "projections/sql_rows.hpp"

namespace baton::projections {

std::set<std::string> clusters_known(const core::world& w) {
  std::set<std::string> out(w.disabled_clusters.begin(), w.disabled_clusters.end());
  for (const auto& [name, failure] : w.last_submission_failure) out.insert(name);
  for (const auto& [id, wk] : w.workers)
    if (auto c = wk.cluster(); !c.empty()) out.insert(std::move(c));
  return out;
}

sql_batch apply_batch(core::world& w, const std::vector<events::event_envelope>& batch, std::set<std::string>& clusters) {
  sql_batch out;
  out.payloads.reserve(batch.size());
  for (const auto& e : batch) {
    out.payloads.push_back(events::from_payload(e.payload));
    const sql_touch t = touched_by(e, out.payloads.back());
    if (t.job_id && !out.jobs.count(*t.job_id)) {  // its segments before this batch, from the world before this event
      auto j = w.jobs.find(*t.job_id);
      out.jobs.emplace(*t.job_id, j == w.jobs.end() ? 0 : j->second.segments.size());
    }
    if (t.worker_id) out.workers.insert(*t.worker_id);
    const bool rekeys = changes_priorities(e.type);
    std::map<std::string, int64_t> before;
    if (rekeys) before = queued_priorities(w);
    core::apply(w, e.stream_id, e.type, out.payloads.back(), e.recorded_at_us);
    for (const auto& [id, priority] : before)
      if (auto j = w.jobs.find(id); j != w.jobs.end() && j->second.priority != priority)
        out.jobs.emplace(id, j->second.segments.size());
    out.fair_share |= rekeys;
    if (changes_clusters(e.type)) {
      out.clusters = true;
      clusters.insert(e.stream_id.substr(8));  // "cluster/<name>"
    }
  }
  for (const auto& id : out.workers)
    if (auto wk = w.workers.find(id); wk != w.workers.end())
      if (auto c = wk->second.cluster(); !c.empty() && clusters.insert(c).second) out.clusters = true;
  return out;
}

}  // namespace baton::projections
