#pragma once
// `baton-replay state --at SEQ|TIME`: the world as it was at one point of the log, in the
// shapes the API answers with (jobs, workers, sprio's queue, sshare's tree), plus the last
// plan's starts and reservations and the clusters' and Salad's provisioning state.
#include <optional>

#include <nlohmann/json.hpp>

#include "core/events/domain.hpp"
#include "events/event_store.hpp"
#include "replay/recovery/progress.hpp"

namespace baton::replay {

struct state_query {
  std::optional<uint64_t> seq;        // replay up to and including this event
  std::optional<core::time_us> time;  // or every event recorded at or before this time
  bool all_jobs = false;              // also finished jobs (default: queued, assigned, running, handing off)
};

// Throws events::store_error on a damaged log.
nlohmann::json state_at(const events::event_store& store, const state_query& q, const progress_fn& progress = {});

}  // namespace baton::replay
