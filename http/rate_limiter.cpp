#include "http/rate_limiter.hpp"

#include <functional>

namespace baton::http {

const char* rate_limiter::limit_name(const core::principal& who) {
  using K = core::principal::kind;
  return who.k == K::worker || who.k == K::pilot ? "worker_requests" : "operator_requests";
}

std::string rate_limiter::key_of(const core::principal& who) {
  using K = core::principal::kind;
  switch (who.k) {
    case K::worker:
      return "w:" + who.worker_id;
    // The admin token's holder declares a name for the log (X-Baton-Operator); the budget is
    // the token's, whatever the name, so varying it neither escapes the limit nor adds buckets.
    case K::operator_:
      return who.named ? "o:" + who.name : std::string("admin");
    case K::scraper:
      return "scraper";  // a Prometheus server: an operator's budget
    case K::pilot:
      return "pilot";  // every pilot of every cluster shares the pilot token
    case K::nobody:
    case K::internal:
      break;
  }
  return "";
}

std::optional<core::time_us> rate_limiter::admit(const core::principal& who, core::time_us now) {
  using K = core::principal::kind;
  const std::string key = key_of(who);
  if (key.empty()) return std::nullopt;
  // The pilot token spends a worker's budget, not a person's.
  const core::bucket_rule* rule = who.k == K::worker || who.k == K::pilot ? &limits_.workers : &limits_.operators;
  if (rule->refill_per_second <= 0) return std::nullopt;
  auto& s = shards_[std::hash<std::string>{}(key) % shards_.size()];
  std::lock_guard<std::mutex> lock(s.m);
  return core::take_token(s.buckets[key], *rule, now);
}

std::shared_ptr<void> stream_slots::take(const core::principal& who) {
  std::string key = rate_limiter::key_of(who);
  {
    std::lock_guard<std::mutex> g(held_->m);
    int& n = held_->by_key[key];
    if (n >= max_) return nullptr;
    ++n;
  }
  // The handle points at the counts (not null: a null handle means no slot) and frees nothing.
  return std::shared_ptr<void>(held_.get(), [held = held_, key = std::move(key)](void*) {
    std::lock_guard<std::mutex> g(held->m);
    if (auto it = held->by_key.find(key); it != held->by_key.end() && --it->second <= 0) held->by_key.erase(it);
  });
}

}  // namespace baton::http
