#pragma once
// When a background projection (a SQL view, the state snapshots) applies what the log hands
// it. While batches come fast, the worker API is busy: the projection holds them and applies
// them once the log slows down, in one piece. Running beside the API costs it even at the
// lowest priority: on the VM this was measured on, two busy loops under SCHED_IDLE, using only
// spare CPU, cost the request path 40 % of its assigning polls per second, and the SQL view
// applying each batch as it came a sixth (docs/benchmarks.md); so a projection keeps out of
// the API's way by not running while the API is busy.
//
// Held events are released when any of these holds:
//   - the log is quiet: no batch for `quiet_us` (the log writer delivers every 20 ms while it
//     is busy, actors/log_writer.hpp, but only what is durable: at 50 ms, a slow fsync beside
//     PostgreSQL's or SQLite's writes passed for a quiet log mid-burst, docs/benchmarks.md);
//   - the log is not busy: after `sample_us` of holding, fewer than `busy_events_per_second`
//     came (a login node's usual load: what the projection holds is a tenth of a second old);
//   - the oldest held event was recorded `max_hold_us` ago or more (a catch-up's old events
//     go at once; a projection of a log that stays busy is never further behind than this);
//   - `max_held_events` are held (memory).
// Pure: the runner (runner.cpp) gives it the clocks.
#include <cstddef>
#include <cstdint>

namespace baton::projections {

struct hold_policy {
  int64_t quiet_us = 200'000;
  int64_t sample_us = 100'000;
  int64_t busy_events_per_second = 1'000;
  int64_t max_hold_us = 5'000'000;
  size_t max_held_events = 32'768;
};

// What a projection holds.
struct held_events {
  size_t events = 0;
  int64_t first_arrival_us = 0, last_arrival_us = 0;  // when the first and the last held batch came (steady clock)
  int64_t oldest_recorded_at_us = 0;                  // the oldest held event's own time (wall clock, as recorded)
};

// Whether to apply what is held now.
bool release_held(const held_events& h, int64_t steady_now_us, int64_t wall_now_us, const hold_policy& p = {});

}  // namespace baton::projections
