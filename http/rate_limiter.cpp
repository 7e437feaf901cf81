#include "http/rate_limiter.hpp"

#include <functional>

namespace baton::http {

const char* rate_limiter::limit_name(const core::principal& who) {
  using K = core::principal::kind;
  return who.k == K::worker || who.k == K::pilot ? "worker_requests" : "operator_requests";
}

std::optional<core::time_us> rate_limiter::admit(const core::principal& who, core::time_us now) {
  using K = core::principal::kind;
  std::string key;
  const core::bucket_rule* rule = &limits_.operators;
  switch (who.k) {
    case K::worker:
      key = "w:" + who.worker_id;
      rule = &limits_.workers;
      break;
    // The admin token's holder declares a name for the log (X-Baton-Operator); the budget is
    // the token's, whatever the name, so varying it neither escapes the limit nor adds buckets.
    case K::operator_: key = who.named ? "o:" + who.name : std::string("admin"); break;
    case K::scraper: key = "scraper"; break;  // a Prometheus server: an operator's budget
    case K::pilot:  // every pilot of every cluster shares the pilot token: a worker's budget, not a person's
      key = "pilot";
      rule = &limits_.workers;
      break;
    case K::nobody:
    case K::internal: return std::nullopt;
  }
  if (rule->refill_per_second <= 0) return std::nullopt;
  auto& s = shards_[std::hash<std::string>{}(key) % shards_.size()];
  std::lock_guard<std::mutex> lock(s.m);
  return core::take_token(s.buckets[key], *rule, now);
}

}  // namespace baton::http
