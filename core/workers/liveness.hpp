#pragma once
// When a worker is stale: the one rule, and the heartbeat leases it is applied to.
// Leases are soft state (not events): see core/workers/worker.hpp.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "core/events/domain.hpp"

namespace baton::core {

struct liveness_rule {
  time_us stale_after_us = 120'000'000;  // heartbeat interval × multiplier
  // Leases count from no earlier than this (batond's start): a restart shows each worker's
  // real last heartbeat but gives every worker a full lease before it can be reaped.
  time_us grace_from_us = 0;

  bool fresh(time_us last_heartbeat, time_us now) const {
    return now - std::max(last_heartbeat, grace_from_us) <= stale_after_us;
  }
  // Heartbeats older than this are stale; nullopt while everyone is within the start-up grace.
  std::optional<time_us> stale_cutoff(time_us now) const {
    if (now - grace_from_us <= stale_after_us) return std::nullopt;
    return now - stale_after_us;
  }
};

using lease_table = std::map<std::string, time_us>;  // worker id -> last heartbeat

// Heartbeat leases with an index by time, so the stale ones (a short prefix) are found
// without looking at every worker on every poll.
class lease_book {
 public:
  void touch(const std::string& id, time_us at);
  void erase(const std::string& id);
  std::optional<time_us> last(const std::string& id) const;
  lease_table all() const { return {by_id_.begin(), by_id_.end()}; }  // ordered, for saving at a clean stop
  // Workers whose last heartbeat is older than cutoff.
  std::set<std::string> older_than(time_us cutoff) const;

  bool fresh(const std::string& id, const liveness_rule& rule, time_us now) const {
    auto l = last(id);
    return l && rule.fresh(*l, now);
  }
  std::set<std::string> stale(const liveness_rule& rule, time_us now) const {
    auto cutoff = rule.stale_cutoff(now);
    return cutoff ? older_than(*cutoff) : std::set<std::string>{};
  }

 private:
  std::unordered_map<std::string, time_us> by_id_;  // hashed for the per-poll lookup; never iterated in a decision
  std::set<std::pair<time_us, std::string>> by_time_;
};

}  // namespace baton::core
