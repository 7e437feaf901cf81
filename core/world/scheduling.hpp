#pragma once
// Assignment on poll: every idle worker competes on every poll. Queued jobs are matched
// greedily in evaluation order, each to the best-ranked idle worker able to run it now; the
// polling worker gets the job it is matched with, or nothing. Polling faster therefore gains
// nothing, and a Salad worker gets a job only when no idle HPC worker can run it (platform
// ranks first). "Able to run it now" includes the deadline rule (core/planning/deadline.hpp): a
// pilot whose allocation ends too soon for a job is passed over for it.
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "core/events/assignment_record.hpp"
#include "core/planning/deadline.hpp"
#include "core/world/world.hpp"

namespace baton::core {

bool can_run(const worker& w, const job& j);  // same image; unpinned, or pinned to the worker's cluster

struct poll_choice {
  std::optional<std::string> job_id;
  nlohmann::json record;  // what re-derives the decision (goes into job.assigned)
};

// stale: workers whose heartbeat lease ran out (a short list: the reaper removes them
// within one interval). They are left out; those that mattered are recorded, so replaying
// the log and leaving out the same workers re-derives the choice.
// rule and now decide which jobs fit the time idle workers have left; when any idle worker
// of the image reported an allocation end, the record carries the rule and the fit of the
// chosen job ("deadline"), so replay re-derives the choice with the same rule.
poll_choice choose_job_for(const world& w, const std::string& worker_id, const std::set<std::string>& stale,
                           const deadline_rule& rule, time_us now);

// The same choice with its record as a struct (choose_job_for's record is to_json of it; no
// record: null). A re-derivation compares it with the recorded one (matches()).
struct assignment_choice {
  std::optional<std::string> job_id;
  std::optional<assignment_record> record;
};
assignment_choice choose_assignment(const world& w, const std::string& worker_id, const std::set<std::string>& stale,
                                    const deadline_rule& rule, time_us now);
// The same choice into `out`, written over the one it held: the record's strings keep their
// memory (a re-derivation makes a choice per recorded assignment, and copying the ids into new
// strings each time was most of its allocations). `out` ends as choose_assignment's answer.
void choose_assignment_into(const world& w, const std::string& worker_id, const std::set<std::string>& stale,
                            const deadline_rule& rule, time_us now, assignment_choice& out);

}  // namespace baton::core
