#include "projections/operator_credentials.hpp"

#include <mutex>

#include "core/access.hpp"

namespace baton::projections {

std::optional<operator_credentials::who> operator_credentials::verify(const std::string& name,
                                                                      const std::string& secret_sha256) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  auto it = by_name_.find(name);
  if (it == by_name_.end() || !core::constant_time_equal(it->second.sha256, secret_sha256)) return std::nullopt;
  return who{name, it->second.admin};
}

void operator_credentials::rebuild(const core::world& w) {
  std::unique_lock<std::shared_mutex> lock(m_);
  by_name_.clear();
  for (const auto& [name, o] : w.operators)
    if (!o.revoked && !o.token_sha256.empty()) by_name_[name] = {o.token_sha256, o.admin};
}

void operator_credentials::update(const core::world& w, const std::vector<std::string>& names) {
  std::unique_lock<std::shared_mutex> lock(m_);
  for (const auto& name : names) {
    auto it = w.operators.find(name);
    if (it == w.operators.end() || it->second.revoked || it->second.token_sha256.empty())
      by_name_.erase(name);
    else
      by_name_[name] = {it->second.token_sha256, it->second.admin};
  }
}

}  // namespace baton::projections
