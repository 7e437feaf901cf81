#include "core/scheduling.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace baton::core {

bool can_run(const worker& w, const job& j) {
  if (w.worker_image_key != j.worker_image_key) return false;
  if (j.preferred_clusters.empty()) return true;
  auto c = w.cluster();
  return !c.empty() && std::find(j.preferred_clusters.begin(), j.preferred_clusters.end(), c) != j.preferred_clusters.end();
}

poll_choice choose_job_for(const world& w, const std::string& worker_id, const std::set<std::string>& stale) {
  return choose_job_for(w, worker_id, [&](const std::string& id) { return stale.count(id) > 0; });
}

poll_choice choose_job_for(const world& w, const std::string& worker_id, const stale_predicate& is_stale) {
  poll_choice out;
  const worker* me = w.find_worker(worker_id);
  if (!me) return out;
  worker_rank my_rank = rank_of(*me);

  // Only idle workers ranked above the poller can take a job before it does.
  std::vector<const worker*> above;
  std::vector<std::string> stale;
  for (const auto& r : w.idle) {
    if (!(r < my_rank)) break;
    if (is_stale(r.id))
      stale.push_back(r.id);
    else
      above.push_back(w.find_worker(r.id));
  }
  std::vector<bool> claimed(above.size(), false);
  size_t first_free = 0;
  // Jobs of one (image, pins) class compete for the same workers: once a class finds no
  // free worker above the poller, it never will again in this pass.
  std::set<std::pair<std::string, std::vector<std::string>>> exhausted;
  nlohmann::json ahead = nlohmann::json::array();
  size_t ahead_total = 0, examined = 0;

  for (const auto& [created, job_id] : w.queued) {
    const job& j = w.jobs.at(job_id);
    ++examined;
    auto cls = std::make_pair(j.worker_image_key, j.preferred_clusters);
    bool taken_above = false;
    if (!exhausted.count(cls)) {
      while (first_free < above.size() && claimed[first_free]) ++first_free;
      for (size_t i = first_free; i < above.size(); ++i)
        if (!claimed[i] && can_run(*above[i], j)) {
          claimed[i] = true;
          taken_above = true;
          if (ahead.size() < 20) ahead.push_back({job_id, above[i]->id});
          ++ahead_total;
          break;
        }
      if (!taken_above) exhausted.insert(cls);
    }
    if (taken_above) continue;
    if (can_run(*me, j)) {
      out.job_id = job_id;
      break;
    }
  }

  out.record = {{"policy", "greedy-rank-v1"},
                {"worker_id", worker_id},
                {"worker_score", score_of(*me)},
                {"idle_ranked_above", above.size()},
                {"jobs_examined", examined},
                {"taken_by_better_workers", ahead_total},
                {"taken_by_better_workers_sample", ahead},
                {"stale_excluded", stale}};
  return out;
}

}  // namespace baton::core
