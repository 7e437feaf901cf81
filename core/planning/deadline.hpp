#pragma once
// Time in the model: how long a job is expected to hold a worker, and whether it fits the
// time a pilot worker's allocation has left. Pure: `now` is always passed in.
#include <optional>

#include "core/jobs/job.hpp"
#include "core/workers/worker.hpp"

namespace baton::core {
namespace ev {
struct deadline_rule_record;  // core/events/event_types.hpp
}
struct deadline_fit_record;  // core/events/assignment_record.hpp

struct deadline_rule {
  // A job without time_limit_seconds is expected to run this long (scheduling.default_time_limit_seconds).
  int64_t default_time_limit_seconds = 3600;
  // A checkpointing job may start on a worker whose allocation ends before its limit if at
  // least this much remains: it runs, checkpoints and is handed on (scheduling.min_useful_seconds).
  int64_t min_useful_seconds = 600;
};

// The rule as decisions record it, and read back (absent values keep the defaults above): in
// plans, preemption decisions and provisioning bases, and within an assignment's deadline fit.
ev::deadline_rule_record to_record(const deadline_rule& r);
deadline_rule rule_of(const ev::deadline_rule_record& r);
deadline_rule rule_of(const deadline_fit_record& r);

// The job's time limit, or the rule's default when it has none.
int64_t time_limit_of(const job& j, const deadline_rule& r);
int64_t time_limit_of(const std::optional<int64_t>& limit, const deadline_rule& r);

// When a running job is expected to end: its current run segment's start + its time limit.
// nullopt when no segment is open (the job holds no worker).
std::optional<time_us> expected_end(const job& j, const deadline_rule& r);

// Whether a job may start on a worker with `remaining_us` of allocation left, and why.
struct fit {
  bool admitted = false;
  // "fits": the limit fits in what remains; "checkpoint_min_useful": it does not, but the
  // job checkpoints and at least min_useful_seconds remain; "too_short": neither.
  const char* rule = "too_short";
  int64_t time_limit_seconds = 0;  // the job's limit (or the default)
};

// THE fit rule: remaining >= limit, or (checkpoints and remaining >= min_useful). Monotone:
// more remaining time, or a shorter limit, never turns an admission into a refusal.
fit fit_of(time_us remaining_us, const std::optional<int64_t>& limit, bool checkpoints, const deadline_rule& r);
// A worker without a known allocation end takes anything ("no_deadline").
fit fit_of(const worker& w, const job& j, const deadline_rule& r, time_us now);

// Whole seconds left in a worker's allocation at `now` (floored; negative once it ended).
int64_t remaining_seconds(const worker& w, time_us now);

}  // namespace baton::core
