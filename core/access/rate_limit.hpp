#pragma once
// A token bucket (Palmetto's Slurm allows 1000 requests per user, refilled at 2 per
// second): pure, time passed in. The HTTP layer keeps one per operator and one per worker,
// so one busy caller cannot starve the others.
#include <optional>

#include "core/events/domain.hpp"

namespace baton::core {

struct bucket_rule {
  double capacity = 1000;        // burst
  double refill_per_second = 2;  // 0 = no limit at all
};

struct token_bucket {
  double tokens = -1;  // < 0: not used yet (starts full)
  time_us at = 0;      // when tokens was last brought up to date
};

// Takes one token. nullopt when there was one; otherwise how long until there is (the
// caller answers 429 with Retry-After). Time running backwards refills nothing.
std::optional<time_us> take_token(token_bucket& b, const bucket_rule& rule, time_us now);

}  // namespace baton::core
