#include "projections/worker_credentials.hpp"

#include <mutex>

#include "core/credential.hpp"

namespace baton::projections {

bool worker_credentials::verify(const std::string& worker_id, const std::string& secret_sha256, core::time_us now) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  auto it = by_worker_.find(worker_id);
  return it != by_worker_.end() && core::accepts(it->second, secret_sha256, now);
}

void worker_credentials::rebuild(const core::world& w) {
  std::unique_lock<std::shared_mutex> lock(m_);
  by_worker_.clear();
  for (const auto& [id, wk] : w.workers)
    if (!wk.gone && !wk.credential.sha256.empty()) by_worker_[id] = wk.credential;
}

void worker_credentials::update(const core::world& w, const std::vector<std::string>& touched) {
  for (const auto& id : touched) {
    const core::worker* wk = w.find_worker(id);
    if (!wk || wk->credential.sha256.empty()) continue;
    std::unique_lock<std::shared_mutex> lock(m_);
    if (wk->gone)
      by_worker_.erase(id);  // a worker that is gone has no credential: its token is 401 from now on
    else
      by_worker_[id] = wk->credential;
  }
}

}  // namespace baton::projections
