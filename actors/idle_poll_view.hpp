#pragma once
// A read model for the commonest request of all: a worker polling while nothing it could run
// is queued. HTTP threads answer such polls here, without a trip through the scheduler's
// mailbox; every other poll goes to the scheduler as before.
//
// Only the scheduler writes it, in the same step that changes its world (before any reply of
// that step is sent), so a poll that starts after a job's creation was acknowledged sees the
// job's image as busy and goes the slow way. The answer given here is exactly the one the
// scheduler would give: a known, live, idle worker with a fresh lease and its own credential,
// whose image has no queued job, gets no_job_for_this_worker, and nothing is recorded for it
// (the scheduler records nothing for such a poll either).
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/scheduler_commands.hpp"
#include "core/world.hpp"

namespace baton::actors {

class idle_poll_view {
 public:
  explicit idle_poll_view(const scheduler_settings& s)
      : stale_after_us_(s.stale_after_us), grace_from_us_(s.lease_grace_from_us),
        credentials_required_(s.worker_credentials_required) {}

  // HTTP side. secret_sha256 is empty when the caller used the shared token. True when the
  // poll's answer is no_job_for_this_worker; false means "ask the scheduler" (which may also
  // answer no job, for a reason this view does not know).
  bool answers_no_job(const std::string& worker_id, const std::string& secret_sha256, core::time_us now) const;

  // Scheduler side: everything, at start-up.
  void rebuild(const core::world& w, const lease_book& leases);
  // Scheduler side: after a step that touched these workers (their events, their jobs'
  // assignment, their lease), and the queued images if the step had any events.
  void update(const core::world& w, const lease_book& leases, const std::vector<std::string>& touched,
              bool images_may_have_changed);

 private:
  struct idle_worker {
    std::string credential_sha256, image;
    core::time_us lease = 0;
  };
  void refresh_locked(const core::world& w, const lease_book& leases, const std::string& id);
  void images_locked(const core::world& w);

  const core::time_us stale_after_us_, grace_from_us_;
  const bool credentials_required_;
  mutable std::shared_mutex m_;
  // Lookups only, never iterated: order cannot leak into any decision.
  std::unordered_map<std::string, idle_worker> idle_;
  std::set<std::string> images_with_queued_jobs_;
};

}  // namespace baton::actors
