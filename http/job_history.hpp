#pragma once
// GET /jobs/{id}/history: the job's own events, read from its stream in the log, with the
// per-worker runtime segments derived from them (RelayMD's history shape).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "events/event_store.hpp"

namespace baton::http {

std::optional<nlohmann::json> job_history(const events::event_store& store, const std::string& job_id);

}  // namespace baton::http
