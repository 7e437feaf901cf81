#include "projections/background_priority.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace baton::projections {

background_mode next_background_mode(background_mode now, int64_t lag_us, const background_policy& p) {
  if (now == background_mode::idle) return lag_us > p.escalate_after_us ? background_mode::nice : background_mode::idle;
  return lag_us <= p.relax_within_us ? background_mode::idle : background_mode::nice;
}

bool may_leave_idle(const background_policy& p) {
  if (geteuid() == 0) return true;
  rlimit r{};
  return getrlimit(RLIMIT_NICE, &r) == 0 && (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= static_cast<rlim_t>(20 - p.nice));
}

bool enter_background_mode(background_mode m, const background_policy& p) {
  const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
  sched_param none{};
  if (m == background_mode::idle) return sched_setscheduler(tid, SCHED_IDLE, &none) == 0;
  // Out of SCHED_IDLE first (it keeps the nice value), then the nice value itself.
  if (sched_setscheduler(tid, SCHED_OTHER, &none) != 0) return false;
  return setpriority(PRIO_PROCESS, static_cast<id_t>(tid), p.nice) == 0;
}

}  // namespace baton::projections
