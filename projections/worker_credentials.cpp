#include "projections/worker_credentials.hpp"

#include <mutex>

#include "core/access.hpp"

namespace baton::projections {

bool worker_credentials::verify(const std::string& worker_id, const std::string& secret_sha256) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  auto it = sha256_by_worker_.find(worker_id);
  return it != sha256_by_worker_.end() && !it->second.empty() && core::constant_time_equal(it->second, secret_sha256);
}

void worker_credentials::rebuild(const core::world& w) {
  std::unique_lock<std::shared_mutex> lock(m_);
  sha256_by_worker_.clear();
  for (const auto& [id, wk] : w.workers)
    if (!wk.credential_sha256.empty()) sha256_by_worker_[id] = wk.credential_sha256;
}

void worker_credentials::update(const core::world& w, const std::vector<std::string>& touched) {
  for (const auto& id : touched) {
    const core::worker* wk = w.find_worker(id);
    if (!wk || wk->credential_sha256.empty()) continue;
    std::unique_lock<std::shared_mutex> lock(m_);
    sha256_by_worker_[id] = wk->credential_sha256;
  }
}

}  // namespace baton::projections
