#include "http/ui_sessions.hpp"

namespace baton::http {

ui_session ui_sessions::open(const std::string& id, std::string credential, std::string declared_name,
                             std::string csrf, core::time_us now) {
  std::lock_guard<std::mutex> g(mu_);
  if (by_id_.size() >= max_) {
    for (auto it = by_id_.begin(); it != by_id_.end();) it = it->second.expires <= now ? by_id_.erase(it) : std::next(it);
  }
  while (by_id_.size() >= max_) {  // still full: the session closest to expiring goes
    auto oldest = by_id_.begin();
    for (auto it = by_id_.begin(); it != by_id_.end(); ++it)
      if (it->second.expires < oldest->second.expires) oldest = it;
    by_id_.erase(oldest);
  }
  ui_session s{std::move(credential), std::move(declared_name), std::move(csrf), now + ttl_};
  by_id_[id] = s;
  return s;
}

std::optional<ui_session> ui_sessions::find(const std::string& id, core::time_us now) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  if (it->second.expires <= now) {
    by_id_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void ui_sessions::close(const std::string& id) {
  std::lock_guard<std::mutex> g(mu_);
  by_id_.erase(id);
}

size_t ui_sessions::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return by_id_.size();
}

}  // namespace baton::http
