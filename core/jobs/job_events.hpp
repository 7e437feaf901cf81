#pragma once
// The kinds of job events, for readers that follow a job's status without keeping whole jobs
// (projections/minute_stats.hpp, projections/live_feed.hpp). evolve() itself (core/jobs/job.hpp)
// visits each event's typed payload (core/events/event_types.hpp).
#include <optional>
#include <string_view>

#include "core/jobs/job.hpp"

namespace baton::core {

// Every job event type evolve() knows; `other` for any it does not (it changes nothing but
// the job's updated_at: forward compatibility).
enum class job_event : uint8_t {
  created,
  assigned,
  started,
  checkpointed,
  progress_reported,
  handoff_started,
  handoff_completed,
  requeued_after_deregister,
  requeued_after_reap,
  requeued_after_orphan,
  requeued_after_preempt,
  completed,
  failed,
  cancel_requested,
  cancelled,
  requeued_as,
  pruned,
  held,
  released,
  preempted,
  other
};
job_event job_event_of(std::string_view type);
// A payload's kind (one kept as its bytes: the kind its type names).
job_event job_event_of(const ev::payload& p);

// The status evolve() leaves a job in after an event of this kind, when the kind sets one
// (job.preempted only in mode "cancel"). tests/projections_test.cpp holds it to evolve().
std::optional<job_status> status_set_by(job_event k, std::string_view preempt_mode);

}  // namespace baton::core
