#pragma once
// Per-caller request budgets (core/access/rate_limit.hpp) for the HTTP layer: one bucket per
// operator name and one per worker, soft state like heartbeat leases (not logged: a restart
// refills them). Sharded locks, so callers on different shards never wait for each other.
#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/access/access.hpp"
#include "core/access/rate_limit.hpp"

namespace baton::http {

struct rate_limits {
  core::bucket_rule operators{1000, 2};  // Palmetto's per-user Slurm request limit
  core::bucket_rule workers{600, 50};    // a worker polls every few seconds; a broken one loops
};

class rate_limiter {
 public:
  explicit rate_limiter(rate_limits limits) : limits_(limits) {}
  // nullopt: go ahead; otherwise wait this long (µs). Callers without an identity (401 anyway)
  // and batond's own loops are never limited.
  std::optional<core::time_us> admit(const core::principal& who, core::time_us now);
  // The limit's name for the 429 body (the pilot token spends a worker's budget).
  static const char* limit_name(const core::principal& who);
  // Whose budget a caller spends: one key per operator name, per worker, "admin" for the admin
  // token whatever name its holder declares, "pilot", "scraper"; "" for callers never limited.
  static std::string key_of(const core::principal& who);

 private:
  struct shard {
    std::mutex m;
    std::unordered_map<std::string, core::token_bucket> buckets;  // lookups only, never iterated
  };
  rate_limits limits_;
  std::array<shard, 16> shards_;
};

// Live event streams (GET /events/stream) per caller, by rate_limiter::key_of: a stream holds
// a connection for as long as its client stays, and one user's 200 streams had held every one.
class stream_slots {
 public:
  explicit stream_slots(int max_per_caller) : max_(max_per_caller), held_(std::make_shared<counts>()) {}
  // A slot, given back when the last copy of the handle is dropped; null when who holds max_per_caller.
  std::shared_ptr<void> take(const core::principal& who);
  int max_per_caller() const { return max_; }

 private:
  struct counts {
    std::mutex m;
    std::unordered_map<std::string, int> by_key;  // keys with at least one stream
  };
  const int max_;
  std::shared_ptr<counts> held_;  // shared with the handles, which may outlive this
};

}  // namespace baton::http
