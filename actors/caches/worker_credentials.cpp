#include "actors/caches/worker_credentials.hpp"

#include <mutex>

#include "core/access/access.hpp"
#include "core/access/credential.hpp"

namespace baton::caches {

bool worker_credentials::verify(const std::string& worker_id, const std::string& secret_sha256, core::time_us now) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  auto it = by_worker_.find(worker_id);
  return it != by_worker_.end() && core::accepts(it->second, secret_sha256, now);
}

bool worker_credentials::verify_registration(const std::string& placeholder_id, const std::string& secret_sha256) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  auto it = registration_by_placeholder_.find(placeholder_id);
  return it != registration_by_placeholder_.end() && core::constant_time_equal(it->second, secret_sha256);
}

void worker_credentials::rebuild(const core::world& w) {
  std::unique_lock<std::shared_mutex> lock(m_);
  by_worker_.clear();
  registration_by_placeholder_.clear();
  for (const auto& [id, wk] : w.workers) {
    if (!wk.gone && !wk.credential.sha256.empty()) by_worker_[id] = wk.credential;
    if (wk.placeholder && !wk.gone && !wk.registration_sha256.empty()) registration_by_placeholder_[id] = wk.registration_sha256;
  }
}

void worker_credentials::update(const core::world& w, const std::vector<std::string>& touched) {
  for (const auto& id : touched) {
    const core::worker* wk = w.find_worker(id);
    if (!wk) continue;
    std::unique_lock<std::shared_mutex> lock(m_);
    if (wk->placeholder && !wk->gone && !wk->registration_sha256.empty())
      registration_by_placeholder_[id] = wk->registration_sha256;
    else
      registration_by_placeholder_.erase(id);  // adopted or ended: the credential is spent
    if (wk->credential.sha256.empty()) continue;
    if (wk->gone)
      by_worker_.erase(id);  // a worker that is gone has no credential: its token is 401 from now on
    else
      by_worker_[id] = wk->credential;
  }
}

}  // namespace baton::caches
