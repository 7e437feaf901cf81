#pragma once
// The job-history read model behind GET /jobs/{id}/history: per job, its events with the
// status change each made, the runtime segments per worker and their totals (RelayMD's
// history shape).
//
// It reads the job's stream through the log's own stream index (event_store::read_stream)
// when asked, and keeps nothing: no rebuild at start-up (a 10,000,000-event log would take
// 14 s to feed through a projection) and no copy of every payload in memory. A read sees
// every event written before it began, so a reply that was acknowledged is always in it.
// Status changes and segments are derived with core::evolve, as the scheduler's world was.
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/jobs/job.hpp"
#include "events/envelope.hpp"
#include "events/store_error.hpp"

namespace baton::events {
class event_store;  // read in job_history.cpp; its HTTP readers do not see the store
}  // namespace baton::events

namespace baton::projections {

// A job as its events make it (core::evolve over its stream in the log): what is left of a
// pruned job, which the worlds hold only as a stub. Empty if the job has no events; throws
// events::store_error if the log could not be read.
std::optional<core::job> job_from_log(const events::event_store& store, const std::string& job_id);

class job_history {
 public:
  explicit job_history(std::shared_ptr<const events::event_store> store);

  struct read_result {
    bool available = true;                  // false: the log could not be read
    std::optional<nlohmann::json> history;  // empty: no such job
    std::string why;                        // when not available
  };
  // For HTTP threads.
  read_result read(const std::string& job_id) const;
  // The job's history; empty if the job has no events. Throws if the job's events could not
  // be interpreted (they were recorded, so the caller answers 500) or the log not read.
  std::optional<nlohmann::json> history(const std::string& job_id) const;

  // The job as its stream makes it (job_from_log): how a pruned job, which the scheduler's
  // world no longer holds, is answered.
  std::optional<core::job> record(const std::string& job_id) const;

  // The rendering, from the job's events in stream order.
  static nlohmann::json render(const std::string& job_id, const std::vector<events::event_envelope>& events);

 private:
  std::shared_ptr<const events::event_store> store_;
};

}  // namespace baton::projections
