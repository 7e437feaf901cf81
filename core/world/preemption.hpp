#pragma once
// Preemption (Palmetto's condo model): jobs whose partition or QOS may preempt
// others (core/policy/priority_policy.hpp) come first in the evaluation order; one that cannot be
// placed on an idle worker makes room by preempting the fewest, lowest-priority jobs.
//
// Workers are exclusive (one job each), so "the fewest" is always one victim per preemptor,
// on a worker that can run the preemptor and whose remaining allocation fits it. Among the
// candidates the victim is the one considered last in the evaluation order (not a preemptor,
// lowest tier, lowest priority), then the one that started last (least work lost), then the
// smaller id. A job never preempts one that comes before it in the evaluation order, so two
// preemptors never take turns preempting each other. A worker whose victim is still leaving
// counts as free for the first waiting preemptor it can run, whichever preemptor chose that
// victim: a freed worker goes to the first preemptor in the order, and a cancelled victim
// leaves long before one that hands off, so counting by preemptor preempted a third job.
//
// A victim that may be requeued (requeue true, not interactive) is told to hand off: it
// checkpoints, goes back to the queue through the hand-off path and later resumes from that
// checkpoint; a hand-off charges no attempt. Any other victim is cancelled through the cancel
// path. Either way it has the policy's preempt_grace_seconds to leave its worker; after that
// batond takes the worker back (job.requeued_after_preempt, or job.cancelled with reason
// preempted) and the worker is told to stop on its next heartbeat. A victim not yet started
// (assigned) is requeued at once: there is nothing to checkpoint.
//
// Each decision is one scheduler.preemptions_decided event (what was decided and the inputs
// that re-derive it: the stale workers left out and the deadline rule; the policy is the one
// in force) followed by its job events; nothing is written when nothing is decided.
#include <optional>
#include <set>
#include <string>

#include "core/planning/deadline.hpp"
#include "core/world/world.hpp"

namespace baton::core {

// Preemptions and expired grace periods as of `now`. stale: workers whose lease ran out
// (they are not told anything, and are not offered to a preemptor).
decision decide_preemptions(const world& w, const std::set<std::string>& stale, const deadline_rule& rule, time_us now);

// Whether a check could decide anything: the policy in force lets some job preempt, or a
// preemption is in progress.
bool preemption_in_play(const world& w);

// The earliest grace end among victims still on their workers, if any.
std::optional<time_us> next_grace_end(const world& w);

// What re-derives a recorded decision besides the world and its time.
struct recorded_preemption_inputs {
  std::set<std::string> stale;
  deadline_rule rule;
};
recorded_preemption_inputs preemption_inputs_of(const ev::preemptions_decided& recorded);

}  // namespace baton::core
