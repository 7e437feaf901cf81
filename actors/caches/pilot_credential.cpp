#include "actors/caches/pilot_credential.hpp"

#include <mutex>

namespace baton::caches {

bool pilot_credential::accepts(const std::string& presented_sha256, core::time_us now) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  return core::pilot_accepts(recorded_, configured_, presented_sha256, now);
}

void pilot_credential::rebuild(const core::world& w) {
  std::unique_lock<std::shared_mutex> lock(m_);
  recorded_ = w.pilot_token;
}

}  // namespace baton::caches
