#pragma once
// How a projection that only readers wait for (a SQL view, the state snapshots) shares the CPU
// with the worker API. Under `nice 10` alone the kernel let such a thread finish its time
// slice before a woken request-path thread ran, and an assigning poll, which hops through
// four threads, waited behind it at every hop (2.4x fewer polls per second with the SQLite
// view attached). So while it keeps up, its thread runs under SCHED_IDLE: any other thread
// that wakes takes the core at once. Once it falls more than `escalate_after_us` behind (the
// newest event it applied was recorded that long ago), it runs as a normal thread at nice 10,
// which a busy machine slows but cannot starve, until it is back within `relax_within_us`.
//
// Leaving SCHED_IDLE needs CAP_SYS_NICE or RLIMIT_NICE >= 20 - nice (sched(7)); a process
// without either keeps the plain nice value, as it could not escalate.
#include <cstdint>

namespace baton::projections {

enum class background_mode { idle, nice };

struct background_policy {
  int64_t escalate_after_us = 5'000'000;
  int64_t relax_within_us = 1'000'000;
  int nice = 10;
};

// The mode for a projection in mode `now` whose newest applied event is `lag_us` old.
background_mode next_background_mode(background_mode now, int64_t lag_us, const background_policy& p = {});

// Whether this process may move a thread out of SCHED_IDLE again (root, CAP_SYS_NICE or
// RLIMIT_NICE high enough for p.nice).
bool may_leave_idle(const background_policy& p = {});

// Puts the calling thread in the mode (Linux: scheduling policy and nice value are per
// thread). False if the kernel refused.
bool enter_background_mode(background_mode m, const background_policy& p = {});

}  // namespace baton::projections
