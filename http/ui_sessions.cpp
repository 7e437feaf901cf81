#include "http/ui_sessions.hpp"

#include <algorithm>

namespace baton::http {

void ui_sessions::drop(by_id::iterator it) {
  auto owner = by_owner_.find(it->second.owner);
  if (owner != by_owner_.end()) {
    auto& ids = owner->second;
    ids.erase(std::remove(ids.begin(), ids.end(), it->first), ids.end());
    if (ids.empty()) by_owner_.erase(owner);
  }
  by_id_.erase(it);
}

std::optional<ui_session> ui_sessions::open(const std::string& id, std::string owner, std::string credential,
                                            std::string declared_name, std::string csrf, core::time_us now) {
  std::lock_guard<std::mutex> g(mu_);
  if (auto same = by_id_.find(id); same != by_id_.end()) drop(same);
  // The owner's oldest goes first (the one closest to expiring: every session lives ttl), so
  // an operator's own logins make room among their own sessions only.
  auto oldest_of_owner = [&] {
    auto mine = by_owner_.find(owner);
    return mine == by_owner_.end() ? by_id_.end() : by_id_.find(mine->second.front());
  };
  while (by_owner_.count(owner) && by_owner_[owner].size() >= max_per_owner_) drop(oldest_of_owner());
  if (by_id_.size() >= max_) {
    for (auto it = by_id_.begin(); it != by_id_.end();) {
      auto next = std::next(it);
      if (it->second.expires <= now) drop(it);
      it = next;
    }
  }
  if (by_id_.size() >= max_) {
    auto mine = oldest_of_owner();
    if (mine == by_id_.end()) return std::nullopt;  // every place is someone else's
    drop(mine);
  }
  ui_session s{std::move(credential), std::move(declared_name), std::move(csrf), now + ttl_, owner};
  by_id_[id] = s;
  by_owner_[owner].push_back(id);
  return s;
}

std::optional<ui_session> ui_sessions::find(const std::string& id, core::time_us now) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  if (it->second.expires <= now) {
    drop(it);
    return std::nullopt;
  }
  return it->second;
}

void ui_sessions::close(const std::string& id) {
  std::lock_guard<std::mutex> g(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) drop(it);
}

size_t ui_sessions::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return by_id_.size();
}

std::optional<login_failures::refusal> login_failures::check(const std::string& address, const std::string& name,
                                                             core::time_us now) {
  std::lock_guard<std::mutex> g(mu_);
  // Looked at, not taken: a copy of the bucket says how long until it has a token again.
  auto wait_of = [&](const buckets& b, const std::string& key) -> std::optional<core::time_us> {
    auto it = b.find(key);
    if (it == b.end()) return std::nullopt;
    core::token_bucket copy = it->second;
    return core::take_token(copy, rule_, now);
  };
  if (auto w = wait_of(by_address_, address)) return refusal{*w, "login_failures_per_address"};
  if (name.empty()) return std::nullopt;
  if (auto w = wait_of(by_name_, name)) return refusal{*w, "login_failures_per_operator"};
  return std::nullopt;
}

void login_failures::failed(const std::string& address, const std::string& name, core::time_us now) {
  if (rule_.refill_per_second <= 0) return;
  std::lock_guard<std::mutex> g(mu_);
  if (by_address_.size() + by_name_.size() >= forget_at_) {
    forget_refilled(by_address_, now);
    forget_refilled(by_name_, now);
    forget_at_ = std::max<size_t>(1024, 2 * (by_address_.size() + by_name_.size()));
  }
  core::take_token(by_address_[address], rule_, now);
  if (!name.empty()) core::take_token(by_name_[name], rule_, now);
}

void login_failures::forget_refilled(buckets& b, core::time_us now) {
  for (auto it = b.begin(); it != b.end();) {
    const auto& k = it->second;
    bool full = k.tokens < 0 || k.tokens + static_cast<double>(now - k.at) / 1e6 * rule_.refill_per_second >= rule_.capacity;
    it = full ? b.erase(it) : std::next(it);
  }
}

}  // namespace baton::http
