#include "actors/caches/idle_poll_view.hpp"

#include <algorithm>
#include <mutex>

namespace baton::caches {

bool idle_poll_view::answers_no_job(const std::string& worker_id, core::time_us now) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  auto it = idle_.find(worker_id);
  if (it == idle_.end()) return false;
  const auto& wk = it->second;
  if (!liveness_.fresh(wk.lease, now)) return false;  // stale: the scheduler says so
  return !images_with_queued_jobs_.count(wk.image);
}

void idle_poll_view::refresh_locked(const core::world& w, const core::lease_book& leases, const std::string& id) {
  const core::worker* wk = w.find_worker(id);
  auto lease = leases.last(id);
  if (!wk || wk->gone || wk->placeholder || w.held_job(id) || !lease) {
    idle_.erase(id);
    return;
  }
  idle_[id] = idle_worker{wk->worker_image_key, *lease};
}

void idle_poll_view::images_locked(const core::world& w) {
  images_with_queued_jobs_.clear();
  for (const auto& [image, jobs] : w.queued_by_image)
    if (!jobs.empty()) images_with_queued_jobs_.insert(image);
}

void idle_poll_view::rebuild(const core::world& w, const core::lease_book& leases) {
  std::unique_lock<std::shared_mutex> lock(m_);
  idle_.clear();
  for (const auto& [id, wk] : w.workers) refresh_locked(w, leases, id);
  images_locked(w);
}

void idle_poll_view::update(const core::world& w, const core::lease_book& leases, const std::vector<std::string>& touched,
                            bool images_may_have_changed) {
  if (touched.empty() && !images_may_have_changed) return;
  std::unique_lock<std::shared_mutex> lock(m_);
  for (const auto& id : touched) refresh_locked(w, leases, id);
  if (images_may_have_changed) images_locked(w);
}

}  // namespace baton::caches
