#include "actors/caches/operator_credentials.hpp"

#include <mutex>

#include "core/access/credential.hpp"

namespace baton::caches {

std::optional<operator_credentials::who> operator_credentials::verify(const std::string& name, const std::string& secret_sha256,
                                                                      core::time_us now) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  auto it = by_name_.find(name);
  if (it == by_name_.end() || !core::accepts(it->second.token, secret_sha256, now)) return std::nullopt;
  return who{name, it->second.admin};
}

void operator_credentials::rebuild(const core::world& w) {
  std::unique_lock<std::shared_mutex> lock(m_);
  by_name_.clear();
  for (const auto& [name, o] : w.operators)
    if (!o.revoked && !o.token.sha256.empty()) by_name_[name] = {o.token, o.admin};
}

void operator_credentials::update(const core::world& w, const std::vector<std::string>& names) {
  std::unique_lock<std::shared_mutex> lock(m_);
  for (const auto& name : names) {
    auto it = w.operators.find(name);
    if (it == w.operators.end() || it->second.revoked || it->second.token.sha256.empty())
      by_name_.erase(name);
    else
      by_name_[name] = {it->second.token, it->second.admin};
  }
}

}  // namespace baton::caches
