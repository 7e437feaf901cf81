#pragma once
// What is free on one node over time, Slurm's backfill "node_space" for a single node: a
// piecewise-constant count of free units from `now` on. Outside the node's availability
// window [available_from, available_until) nothing is free; inside it the capacity less what
// running jobs (until their expected end) and planned jobs (in their slot) occupy.
//
// One type serves both users of the backfill planner (core/planning/backfill.hpp): a baton worker is a
// node of capacity 1 (a pilot's allocation end is its `available_until`, a pending Slurm
// allocation one whose `available_from` lies ahead); a simulated machine of N processors is
// one node of capacity N. Pure: times are passed in, nothing reads a clock.
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/events/domain.hpp"

namespace baton::core {

constexpr time_us time_never = std::numeric_limits<time_us>::max();  // no end (and "no limit")

// A stretch of time on one node: [start, end).
struct time_slot {
  time_us start = 0;
  time_us end = 0;
  bool operator==(const time_slot& o) const { return start == o.start && end == o.end; }
};

// What a job asks of one node.
struct slot_request {
  int64_t units = 1;
  time_us duration = 1;      // the time limit (> 0)
  bool checkpoints = false;  // may be cut short by the window's end, then occupies the node until it
  time_us min_useful = 0;    // a checkpointing job needs at least this long (capped at duration)
};

class capacity_profile {
 public:
  struct step {
    time_us at = 0;    // from here to the next step's `at` (the last step: for ever)
    int64_t free = 0;  // may be negative when the input overcommits the node
    bool operator==(const step& o) const { return at == o.at && free == o.free; }
  };

  // `available_until` 0 or time_never: no end. `resolution` > 0 rounds the end of everything
  // occupied up to a multiple of it (Slurm's bf_resolution), so fewer distinct steps arise.
  capacity_profile(time_us now, int64_t capacity, time_us available_from = 0, time_us available_until = time_never,
                   time_us resolution = 0);

  // The earliest slot starting in [max(not_before, now), not_after] where `r` fits: at least
  // r.units free from the start to its end. The end is start + duration; for a checkpointing
  // job whose duration runs past the window's end it is the window's end, if at least
  // min_useful remains. Linear in the number of steps.
  std::optional<time_slot> earliest(const slot_request& r, time_us not_before, time_us not_after = time_never) const;

  // Takes `units` during [start, end) if they are free throughout; false (and no change)
  // otherwise, or when start is before now.
  bool reserve(int64_t units, time_us start, time_us end);

  // Takes `units` during [start, end) clipped to now, whether free or not: a running job,
  // which is there whatever the plan says.
  void occupy(int64_t units, time_us start, time_us end);

  // Kept up to date instead of rebuilt (a caller that plans at every event, as the trace
  // simulator does, would otherwise occupy every running job again at each plan: quadratic in
  // them). `release` gives back what an occupy of the same span took, from now on (a job that
  // ends before its expected end); `advance` moves now forward, forgetting the past. Either
  // leaves the steps exactly as building the profile afresh at the new now from the jobs still
  // there would (both keep no two neighbours equal).
  void release(int64_t units, time_us start, time_us end) { occupy(-units, start, end); }
  void advance(time_us now);  // no change when `now` is not later

  int64_t free_at(time_us t) const;                    // 0 before now
  int64_t min_free(time_us start, time_us end) const;  // over [start, end); capacity when empty

  time_us now() const { return now_; }
  int64_t capacity() const { return capacity_; }
  time_us available_from() const { return from_; }
  time_us available_until() const { return until_; }  // time_never: no end
  const std::vector<step>& steps() const { return steps_; }

 private:
  time_us occupied_end(time_us end) const;  // rounded up to the resolution, never past the window
  size_t split_at(time_us t);               // index of the step starting at t, inserted if needed
  size_t step_index(time_us t) const;       // the step holding t (t >= now)

  time_us now_, from_, until_, resolution_;
  int64_t capacity_;
  std::vector<step> steps_;  // sorted by `at`, the first at now_
};

}  // namespace baton::core
