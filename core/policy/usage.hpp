#pragma once
// Decayed usage (Slurm's PriorityDecayHalfLife, in continuous time): a GPU-second spent at
// time τ counts 2^(-(at - τ) / half_life) at time `at`. Pure and exact, so a usage figure
// re-derives from the run segments in the log at any recorded time.
#include <cstdint>

#include "core/events/domain.hpp"

namespace baton::core {

// Slurm's PriorityDecayHalfLife default, 7 days.
inline constexpr time_us default_decay_half_life = 7LL * 24 * 3600 * 1000000;

// GPU-seconds of a run segment [start, end) on `gpus` GPUs, decayed to `at`. The part of
// the segment after `at` does not count; half_life <= 0 means no decay.
double decayed_gpu_seconds(int gpus, time_us start, time_us end, time_us at, time_us half_life);

// `usage` measured at `from`, decayed to `to` (to >= from).
double decay(double usage, time_us from, time_us to, time_us half_life);

}  // namespace baton::core
