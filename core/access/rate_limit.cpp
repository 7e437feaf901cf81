#include "core/access/rate_limit.hpp"

#include <algorithm>
#include <cmath>

namespace baton::core {

std::optional<time_us> take_token(token_bucket& b, const bucket_rule& rule, time_us now) {
  if (rule.refill_per_second <= 0) return std::nullopt;
  if (b.tokens < 0) {
    b.tokens = rule.capacity;
    b.at = now;
  }
  if (now > b.at) {
    b.tokens = std::min(rule.capacity, b.tokens + static_cast<double>(now - b.at) / 1e6 * rule.refill_per_second);
    b.at = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return std::nullopt;
  }
  return static_cast<time_us>(std::ceil((1 - b.tokens) / rule.refill_per_second * 1e6));
}

}  // namespace baton::core
