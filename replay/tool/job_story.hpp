#pragma once
// `baton-replay history JOB`: the job's events, each explained, interleaved with what the
// scheduler thought of it while it waited: at every priority recalculation and planning cycle
// that changed its place (priority, jobs ahead of it for its image, pending reason,
// reservation), one line. Answers "why did job X wait 6 hours".
#include <string>

#include <nlohmann/json.hpp>

#include "events/event_store.hpp"
#include "replay/recovery/progress.hpp"

namespace baton::replay {

// {"job_id", "found", "entries": [...], "summary": {...}}. Throws events::store_error on a
// damaged log.
nlohmann::json job_story(const events::event_store& store, const std::string& job_id, const progress_fn& progress = {});

// The story as lines for people.
std::string format_story(const nlohmann::json& story);

}  // namespace baton::replay
