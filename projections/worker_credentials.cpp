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

void worker_credentials::note(const core::decision& d) {
  for (const auto& e : d.events) {
    if (e.type != "worker.registered" && e.type != "worker.placeholder_adopted") continue;
    auto sha = e.payload.value("credential_sha256", "");
    if (sha.empty()) continue;
    std::unique_lock<std::shared_mutex> lock(m_);
    sha256_by_worker_[e.stream.substr(e.stream.find('/') + 1)] = std::move(sha);
  }
}

}  // namespace baton::projections
