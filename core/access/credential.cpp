#include "core/access/credential.hpp"

#include "core/access/access.hpp"

namespace baton::core {

bool accepts(const rotating_secret& s, const std::string& presented, time_us now) {
  if (presented.empty()) return false;
  // Both compared every time, so the answer's timing does not tell which one matched.
  const bool current = !s.sha256.empty() && constant_time_equal(s.sha256, presented);
  const bool previous = !s.previous_sha256.empty() && constant_time_equal(s.previous_sha256, presented);
  return current || (previous && now < s.previous_valid_until);
}

void rotate(rotating_secret& s, const std::string& new_sha256, time_us valid_until) {
  s.previous_sha256 = s.sha256;
  s.previous_valid_until = valid_until;
  s.sha256 = new_sha256;
}

}  // namespace baton::core
