#pragma once
// What an assignment decision records (job.assigned's "decision"), as a struct: the scheduler
// writes the event's payload straight from it (no JSON tree on the poll path), and a
// re-derivation compares a decision made again with the recorded JSON field by field, without
// building the JSON of every decision it re-makes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton::core {

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
  std::optional<nlohmann::json> deadline;  // the deadline rule and the chosen job's fit (core/deadline.hpp)
  std::optional<std::string> conformance_pin;
};

nlohmann::json to_json(const assignment_record& r);
// Appends the record's CBOR, byte for byte events::encode_cbor(to_json(r)): a
// re-derivation compares it with the recorded bytes before it decodes them.
void encode_cbor(const assignment_record& r, std::string& out);
// Whether encode_cbor(r) would write exactly `bytes`, found without writing them (a
// re-derivation asks it of every recorded assignment).
bool encodes_to(const assignment_record& r, std::string_view bytes);
// The same answer as to_json(r) == recorded.
bool matches(const assignment_record& r, const nlohmann::json& recorded);

// job.assigned's payload as a poll decides it: {"attempt", "decision", "worker_id"}.
struct assigned_payload {
  std::string worker_id;
  uint32_t attempt = 1;
  assignment_record decision;
};
nlohmann::json to_json(const assigned_payload& p);
// Appends the payload's CBOR, byte for byte events::encode_cbor(to_json(p)), written from the
// struct (an assigning poll's JSON tree and its allocations were a quarter of the
// scheduler's instructions per poll).
void encode_cbor(const assigned_payload& p, std::string& out);

}  // namespace baton::core
