#include "http/rate_limiter.hpp"

#include <functional>

namespace baton::http {

const char* rate_limiter::limit_name(const core::principal& who) {
  return who.k == core::principal::kind::worker ? "worker_requests" : "operator_requests";
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
    case K::operator_: key = "o:" + who.name; break;
    case K::pilot: key = "pilot"; break;
    case K::nobody:
    case K::internal: return std::nullopt;
  }
  if (rule->refill_per_second <= 0) return std::nullopt;
  auto& s = shards_[std::hash<std::string>{}(key) % shards_.size()];
  std::lock_guard<std::mutex> lock(s.m);
  return core::take_token(s.buckets[key], *rule, now);
}

}  // namespace baton::http
