#pragma once
// A cache for the commonest request of all: a worker polling while nothing it could run
// is queued. HTTP threads answer such polls here, without a trip through the scheduler's
// mailbox; every other poll goes to the scheduler as before.
//
// Only the scheduler writes it, in the same step that changes its world (before any reply of
// that step is sent), so a poll that starts after a job's creation was acknowledged sees the
// job's image as busy and goes the slow way. The answer given here is exactly the one the
// scheduler would give: a known, live, idle worker with a fresh lease and its own credential,
// whose image has no queued job, gets no_job_for_this_worker, and nothing is recorded for it
// (the scheduler records nothing for such a poll either).
//
// Written in step by the scheduler, not fed from the log like chain_anchor: a poll that
// follows an acknowledged job creation or registration must see it, and a log-fed view would
// apply it only after the projection actor got its batch, a moment after the reply went out
// (a wrong "no job" window). It also needs heartbeat leases, which are not events at all.
// Rebuilt at start-up from the world recovered from the log and the saved leases.
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/app/decide.hpp"
#include "core/world/world.hpp"

namespace baton::caches {

class idle_poll_view {
 public:
  explicit idle_poll_view(const core::scheduler_settings& s) : liveness_(s.liveness) {}

  // HTTP side, for a caller already allowed to poll for this worker (core/access/access.hpp). True
  // when the poll's answer is no_job_for_this_worker; false means "ask the scheduler" (which
  // may also answer no job, for a reason this view does not know).
  bool answers_no_job(const std::string& worker_id, core::time_us now) const;

  // Scheduler side: everything, at start-up.
  void rebuild(const core::world& w, const core::lease_book& leases);
  // Scheduler side: after a step that touched these workers (their events, their jobs'
  // assignment, their lease), and the queued images if the step had any events.
  void update(const core::world& w, const core::lease_book& leases, const std::vector<std::string>& touched,
              bool images_may_have_changed);

 private:
  struct idle_worker {
    std::string image;
    core::time_us lease = 0;
  };
  void refresh_locked(const core::world& w, const core::lease_book& leases, const std::string& id);
  void images_locked(const core::world& w);

  const core::liveness_rule liveness_;
  mutable std::shared_mutex m_;
  // Lookups only, never iterated: order cannot leak into any decision.
  std::unordered_map<std::string, idle_worker> idle_;
  std::set<std::string> images_with_queued_jobs_;
};

}  // namespace baton::caches
