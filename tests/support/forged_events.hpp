#pragma once
// Events a decision would not make, as another writer might have written them: a job.assigned
// whose decision record is any JSON (numbers as floats, fields left out). The event keeps the
// bytes as written (ev::unknown_event), and applies as what they read as.
#include <nlohmann/json.hpp>

#include <string>

#include "core/jobs/job.hpp"
#include "events/cbor_encode.hpp"

namespace baton::test {

inline core::decision forged_assignment(const core::job& j, const std::string& worker_id, nlohmann::json record,
                                        core::time_us /*now*/) {
  if (j.status != core::job_status::queued)
    return core::decision::refuse({core::error_kind::conflict, "job_transition_conflict", "not queued", {}, ""});
  nlohmann::json p = {{"attempt", core::next_attempt(j)}, {"decision", std::move(record)}, {"worker_id", worker_id}};
  core::decision d;
  d.events.push_back({core::job_stream(j.id), core::ev::unknown_event{"job.assigned", 1, events::encode_cbor(p)}});
  return d;
}

}  // namespace baton::test
