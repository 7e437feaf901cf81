#include "core/scheduling.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace baton::core {

bool can_run(const worker& w, const job& j) {
  if (w.worker_image_key != j.worker_image_key) return false;
  if (w.gpu_count < static_cast<int>(j.gpu_count)) return false;
  if (j.preferred_clusters.empty()) return true;
  auto c = w.cluster();
  return !c.empty() && std::find(j.preferred_clusters.begin(), j.preferred_clusters.end(), c) != j.preferred_clusters.end();
}

namespace {

// How many (job, better worker) pairs a decision keeps as its example: the counts re-derive
// the decision; the sample only shows an auditor who went first, and it costs every poll.
constexpr size_t decision_sample_size = 3;

// Without constrained jobs (pinned, or more than one GPU) every idle worker of the image can run every queued job of it, so the
// greedy matching pairs the i-th best fresh idle worker with the i-th oldest job: the poller
// gets job number k, k = fresh idle workers ranked above it. O(log n + stale).
poll_choice choose_unpinned(const world& w, const worker& me, const ranked_set<worker_rank>& idle,
                            const ranked_set<queue_key>& queued, const std::set<std::string>& stale_all) {
  poll_choice out;
  auto my_rank = rank_of(me);
  size_t k = idle.order_of_key(my_rank);
  std::vector<std::string> stale;  // stale workers that would otherwise rank above the poller
  for (const auto& id : stale_all) {
    const worker* s = w.find_worker(id);
    if (s && s->worker_image_key == me.worker_image_key && idle.find(rank_of(*s)) != idle.end() &&
        rank_of(*s) < my_rank) {
      stale.push_back(id);
      --k;
    }
  }
  // Built by assignment, not from initializer lists: this runs on every assigning poll and
  // nlohmann's initializer lists copy every element once more.
  nlohmann::json ahead(nlohmann::json::value_t::array);
  auto job_it = queued.begin();
  auto worker_it = idle.begin();
  for (size_t i = 0; i < std::min<size_t>({k, decision_sample_size, queued.size()}); ++i, ++job_it, ++worker_it) {
    while (stale_all.count(worker_it->id)) ++worker_it;
    nlohmann::json pair(nlohmann::json::value_t::array);
    pair.push_back(std::string(job_it->id));
    pair.push_back(worker_it->id);
    ahead.push_back(std::move(pair));
  }
  if (k < queued.size()) out.job_id = std::string(queued.find_by_order(k)->id);
  auto& r = out.record;
  r["policy"] = "greedy-rank-v1";
  r["worker_id"] = me.id;
  r["worker_score"] = score_of(me);
  r["idle_ranked_above"] = k;
  r["jobs_examined"] = std::min(k + 1, queued.size());
  r["taken_by_better_workers"] = std::min(k, queued.size());
  r["taken_by_better_workers_sample"] = std::move(ahead);
  r["stale_excluded"] = std::move(stale);
  return out;
}

}  // namespace

poll_choice choose_job_for(const world& w, const std::string& worker_id, const std::set<std::string>& stale_all) {
  auto is_stale = [&](const std::string& id) { return stale_all.count(id) > 0; };
  poll_choice out;
  const worker* me = w.find_worker(worker_id);
  if (!me) return out;
  worker_rank my_rank = rank_of(*me);

  // Only idle workers of the poller's image ranked above it can take a job it could run
  // before it does; jobs and workers of other images never meet it.
  static const ranked_set<worker_rank> no_workers;
  static const ranked_set<queue_key> no_jobs;
  auto idle_it = w.idle_by_image.find(me->worker_image_key);
  auto queued_it = w.queued_by_image.find(me->worker_image_key);
  const auto& idle = idle_it == w.idle_by_image.end() ? no_workers : idle_it->second;
  const auto& queued = queued_it == w.queued_by_image.end() ? no_jobs : queued_it->second;
  if (queued.empty()) {
    out.record = {{"policy", "greedy-rank-v1"}, {"worker_id", worker_id}, {"worker_score", score_of(*me)}};
    return out;
  }
  if (!w.constrained_queued_by_image.count(me->worker_image_key)) return choose_unpinned(w, *me, idle, queued, stale_all);
  std::vector<const worker*> above;
  std::vector<std::string> stale;
  for (const auto& r : idle) {
    if (!(r < my_rank)) break;
    if (is_stale(r.id))
      stale.push_back(r.id);
    else
      above.push_back(w.find_worker(r.id));
  }
  std::vector<bool> claimed(above.size(), false);
  size_t first_free = 0;
  // Jobs of one (GPUs, pins) class compete for the same workers: once a class finds no
  // free worker above the poller, it never will again in this pass.
  std::set<std::pair<uint32_t, std::vector<std::string>>> exhausted;
  nlohmann::json ahead = nlohmann::json::array();
  size_t ahead_total = 0, examined = 0;

  for (const auto& key : queued) {
    const std::string job_id(key.id);
    const job& j = *key.owner;
    ++examined;
    auto cls = std::make_pair(j.gpu_count, j.preferred_clusters);
    bool taken_above = false;
    if (!exhausted.count(cls)) {
      while (first_free < above.size() && claimed[first_free]) ++first_free;
      for (size_t i = first_free; i < above.size(); ++i)
        if (!claimed[i] && can_run(*above[i], j)) {
          claimed[i] = true;
          taken_above = true;
          if (ahead.size() < decision_sample_size) ahead.push_back({job_id, above[i]->id});
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
