#include "projections/hold_while_busy.hpp"

namespace baton::projections {

bool release_held(const held_events& h, int64_t steady_now_us, int64_t wall_now_us, const hold_policy& p) {
  if (h.events == 0) return false;
  if (h.events >= p.max_held_events) return true;
  if (wall_now_us - h.oldest_recorded_at_us >= p.max_hold_us) return true;
  if (steady_now_us - h.last_arrival_us >= p.quiet_us) return true;
  const int64_t held_for = steady_now_us - h.first_arrival_us;
  // Fewer than busy_events_per_second over the hold so far (events / held seconds < rate).
  return held_for >= p.sample_us &&
         static_cast<double>(h.events) * 1e6 < static_cast<double>(p.busy_events_per_second) * static_cast<double>(held_for);
}

}  // namespace baton::projections
