#pragma once
// Assignment on poll (seed 000): every idle worker competes on every poll. Queued jobs are
// matched greedily, oldest first (ties by id), each to the best-ranked idle worker able to
// run it; the polling worker gets the job it is matched with, or nothing. Polling faster
// therefore gains nothing, and a Salad worker gets a job only when no idle HPC worker can
// run it (platform ranks first).
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "core/world.hpp"

namespace baton::core {

bool can_run(const worker& w, const job& j);  // same image; unpinned, or pinned to the worker's cluster

struct poll_choice {
  std::optional<std::string> job_id;
  nlohmann::json record;  // what re-derives the decision (goes into job.assigned)
};

// stale: workers whose heartbeat lease ran out (a short list: the reaper removes them
// within one interval). They are left out; those that mattered are recorded, so replaying
// the log and leaving out the same workers re-derives the choice.
poll_choice choose_job_for(const world& w, const std::string& worker_id, const std::set<std::string>& stale);

}  // namespace baton::core
