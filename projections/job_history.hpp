#pragma once
// The job-history read model behind GET /jobs/{id}/history: per job, its events with the
// status change each made, the runtime segments per worker and their totals (RelayMD's
// history shape). Fed from the log by a projection runner (runner.hpp); written only by that
// actor, read by HTTP threads under a shared lock.
//
// It lives in memory and is rebuilt from sequence 1 at every start (the daemon waits for
// the rebuild before it serves). Per job it keeps only each event's sequences, time, type,
// actor and its payload still CBOR-encoded. Status changes and segments are derived when the
// history is read: applying an event is on the path of every decision (the projection shares
// the actor threads with the scheduler), reading a history is rare.
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/job.hpp"
#include "projections/projection.hpp"

namespace baton::projections {

class job_history : public projection {
 public:
  static constexpr const char* projection_name = "job_history";

  // log_end: the log's last sequence now (callable from any thread). read() first waits
  // until this projection has applied that much, so it shows every event acknowledged
  // before the read began. Without it reads answer from what is applied.
  explicit job_history(std::function<uint64_t()> log_end = nullptr);

  struct read_result {
    bool available = true;                 // false: the projection did not catch up in time, or failed
    std::optional<nlohmann::json> history;  // empty: no such job
    std::string why;                        // when not available
  };
  // For HTTP threads: waits at most max_wait for the log's end as it is now (see above).
  read_result read(const std::string& job_id, std::chrono::steady_clock::duration max_wait) const;
  // The job's history as applied so far; empty if the job has no events. Throws if the
  // job's events could not be interpreted (it was recorded, so the caller answers 500).
  std::optional<nlohmann::json> history(const std::string& job_id) const;

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  struct item {
    uint64_t seq = 0, stream_version = 0;
    int64_t recorded_at_us = 0;
    const std::string* type = nullptr;  // interned in types_
    std::string actor;
    std::string payload;  // CBOR, as in the log
  };
  struct job_entry {
    std::vector<item> items;
  };
  void apply_job_event(const std::string& job_id, const events::event_envelope& e);
  nlohmann::json render(const std::string& job_id, const job_entry& j) const;

  std::function<uint64_t()> log_end_;
  mutable std::shared_mutex m_;
  std::unordered_map<std::string, job_entry> jobs_;  // lookups only, never iterated
  std::unordered_set<std::string> types_;            // event type names; nodes never move
};

}  // namespace baton::projections
