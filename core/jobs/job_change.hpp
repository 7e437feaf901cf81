#pragma once
// What one job event changes, read from its typed payload once. evolve() (core/jobs/job.hpp)
// applies a job_change, so there is one rule. A replay reads them on its reading thread, ahead
// of the thread that applies them (replay/audit/rederive.cpp), which then looks up no payload field
// and compares no type string.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/jobs/job.hpp"

namespace baton::core {

// Every job event type evolve() knows; `other` for any it does not (it changes nothing but
// the job's updated_at: forward compatibility).
enum class job_event : uint8_t {
  created, assigned, started, checkpointed, progress_reported, handoff_started, handoff_completed,
  requeued_after_deregister, requeued_after_reap, requeued_after_orphan, requeued_after_preempt,
  completed, failed, cancel_requested, cancelled, requeued_as, pruned, held, released, preempted, other
};
job_event job_event_of(std::string_view type);

struct job_change {
  job_event kind = job_event::other;
  // job.created: the creation as its payload records it, in the command's shape (fields the
  // payload leaves out at the command's defaults; the id is the stream's, not read here).
  std::optional<create_job> created;
  // job.assigned
  std::string worker_id;
  std::optional<uint32_t> attempt;              // absent (or not a count): the next attempt
  std::optional<std::string> conformance_pin;   // lattice:sensitive's pin, from the decision record
  // job.checkpointed, job.progress_reported, handoffs and requeues
  checkpoint_report checkpoint;
  // job.failed ("reason" absent is ""), job.cancelled (only when present)
  std::optional<std::string> failure_artifact_path, reason;
  std::string new_job_id;  // job.requeued_as
  // job.pruned: the queue's last word on it (absent: the job keeps its own)
  std::optional<int64_t> priority;
  std::optional<int> priority_tier;
  bool admin = false;  // job.held
  // job.preempted
  std::string by, mode;
  std::optional<time_us> grace_until;  // absent or unreadable: the event's own time
};

// What a job event's typed payload changes (core/events/event_types.hpp): the one reading of job
// events. Another stream's event, or one this build does not know, changes nothing.
job_change change_of(ev::payload&& p);
job_change change_of(const ev::payload& p);  // (copies only what it reads)
// The same from a JSON payload (ev::from_json, then change_of); throws events::payload_error
// naming a field that does not read.
job_change read_job_change(std::string_view type, const nlohmann::json& payload);

// The status evolve() leaves a job in after an event of this kind, when the kind sets one
// (job.preempted only in mode "cancel"): for readers that follow statuses without keeping
// whole jobs (projections/minute_stats.hpp). tests/projections_test.cpp holds it to evolve().
std::optional<job_status> status_set_by(job_event k, std::string_view preempt_mode);

// Applies one job event (core/jobs/job.hpp's evolve on the JSON payload is this on its reading).
// Takes the change apart (its strings move into the job).
void evolve(job& j, job_change&& c, time_us at);

}  // namespace baton::core
