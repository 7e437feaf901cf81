#pragma once
// What an assignment decision records (job.assigned's "decision"), as a struct described once
// (events/described.hpp): the scheduler writes the event's payload straight from it (no JSON
// tree on the poll path), and a re-derivation compares a decision made again with the
// recorded bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "events/described.hpp"

namespace baton::core {

// Why the chosen job fits a poller whose allocation ends (core/world/scheduling.cpp's
// deadline_record): the deadline rule in force, the allocation's remaining seconds (null: no
// end known), and the job's time limit and the rule that admitted it.
struct deadline_fit_record {
  std::optional<int64_t> default_time_limit_seconds;
  std::optional<int64_t> min_useful_seconds;
  events::nullable<int64_t> remaining_seconds;
  std::optional<std::string> rule;  // core/planning/deadline.hpp's fit: fits, checkpoint_min_useful, ...
  std::optional<int64_t> time_limit_seconds;
  BATON_DESCRIBE(default_time_limit_seconds, min_useful_seconds, remaining_seconds, rule, time_limit_seconds)
};

struct assignment_record {
  std::string policy;  // "greedy-rank-v1", or "plan" (the planning cycle's start for the worker)
  std::string worker_id;
  int64_t worker_score = 0;
  std::optional<std::string> planned_at;  // "plan": when the plan was made
  // The greedy matching's account (absent when no eligible job of the image was queued).
  bool matched = false;
  uint64_t idle_ranked_above = 0, jobs_examined = 0, taken_by_better_workers = 0;
  std::vector<std::pair<std::string, std::string>> taken_sample;  // (job, the better worker that took it)
  std::vector<std::string> stale_excluded;
  std::optional<deadline_fit_record> deadline;
  std::optional<std::string> conformance_pin;

  // The log's form (events/described.hpp): the walk's five fields only when it matched.
  template <class S, class F>
  static void describe(S& x, F&& f) {
    events::omit_unless walked{x.matched};
    f("conformance_pin", x.conformance_pin);
    f("deadline", x.deadline);
    f("idle_ranked_above", x.idle_ranked_above, walked);
    f("jobs_examined", x.jobs_examined, walked);
    f("planned_at", x.planned_at);
    f("policy", x.policy);
    f("stale_excluded", x.stale_excluded, walked);
    f("taken_by_better_workers", x.taken_by_better_workers, walked);
    f("taken_by_better_workers_sample", x.taken_sample, walked);
    f("worker_id", x.worker_id);
    f("worker_score", x.worker_score);
  }
};

inline nlohmann::json to_json(const assignment_record& r) { return events::to_json(r); }

// job.assigned's payload as a poll decides it (core/events/event_types.hpp's job_assigned): the
// scheduler writes it and applies it without a JSON tree (building, encoding and freeing one
// was a quarter of the scheduler's instructions per assigning poll).
struct assigned_payload {
  static constexpr std::string_view type = "job.assigned";
  static constexpr uint32_t schema = 1;
  uint32_t attempt = 0;  // 0: not recorded (older logs): the job's next attempt
  assignment_record decision;
  std::string worker_id;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("attempt", x.attempt, events::omit_if{x.attempt == 0});
    f("decision", x.decision);
    f("worker_id", x.worker_id, events::required);
  }
};
inline nlohmann::json to_json(const assigned_payload& p) { return events::to_json(p); }

}  // namespace baton::core
