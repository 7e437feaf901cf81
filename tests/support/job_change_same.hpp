#pragma once
// Whether two core::job_change values are the same, field by field (the creation they carry
// included): the empty string, or the first field that differs. For the tests and the fuzz
// target that hold replay/job_payload_cbor's reading equal to core::read_job_change's.
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job_change.hpp"
#include "events/payload.hpp"
#include "replay/job_payload_cbor.hpp"

namespace baton::test {

// A JSON value's text, damaged strings (invalid UTF-8) included, NaN as null.
inline std::string json_text(const nlohmann::json& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

inline bool same_double(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || std::memcmp(&*a, &*b, sizeof(double)) == 0;  // (NaN from damaged bytes included)
}

inline bool same_json(const std::optional<nlohmann::json>& a, const std::optional<nlohmann::json>& b) {
  return a.has_value() == b.has_value() && (!a || json_text(*a) == json_text(*b));
}

inline std::string job_change_difference(const core::job_change& a, const core::job_change& b) {
#define BATON_SAME(cond, field) \
  if (!(cond)) return field
  BATON_SAME(a.kind == b.kind, "kind");
  BATON_SAME(a.created.has_value() == b.created.has_value(), "created");
  if (a.created) {
    const auto &x = *a.created, &y = *b.created;
    BATON_SAME(x.id == y.id, "created.id");
    BATON_SAME(x.title == y.title, "created.title");
    BATON_SAME(x.input_bundle_path == y.input_bundle_path, "created.input_bundle_path");
    BATON_SAME(x.worker_image_key == y.worker_image_key, "created.worker_image_key");
    BATON_SAME(x.comment == y.comment, "created.comment");
    BATON_SAME(x.preferred_clusters == y.preferred_clusters, "created.preferred_clusters");
    BATON_SAME(x.max_attempts == y.max_attempts, "created.max_attempts");
    BATON_SAME(x.requeued_from == y.requeued_from, "created.requeued_from");
    BATON_SAME(x.latest_checkpoint_manifest_path == y.latest_checkpoint_manifest_path, "created.latest_checkpoint_manifest_path");
    BATON_SAME(x.last_checkpoint_at == y.last_checkpoint_at, "created.last_checkpoint_at");
    BATON_SAME(x.user == y.user, "created.user");
    BATON_SAME(x.account == y.account, "created.account");
    BATON_SAME(x.partition == y.partition, "created.partition");
    BATON_SAME(x.qos == y.qos, "created.qos");
    BATON_SAME(x.nice == y.nice, "created.nice");
    BATON_SAME(x.gpu_count == y.gpu_count, "created.gpu_count");
    BATON_SAME(x.time_limit_seconds == y.time_limit_seconds, "created.time_limit_seconds");
    BATON_SAME(x.checkpoints == y.checkpoints, "created.checkpoints");
    BATON_SAME(x.requeue == y.requeue, "created.requeue");
    BATON_SAME(x.interactive == y.interactive, "created.interactive");
    BATON_SAME(x.conformance == y.conformance, "created.conformance");
    BATON_SAME(same_double(x.checkpoint_seconds, y.checkpoint_seconds), "created.checkpoint_seconds");
    BATON_SAME(x.hold == y.hold, "created.hold");
    BATON_SAME(x.depends_on == y.depends_on, "created.depends_on");
  }
  BATON_SAME(a.worker_id == b.worker_id, "worker_id");
  BATON_SAME(a.attempt == b.attempt, "attempt");
  BATON_SAME(a.conformance_pin == b.conformance_pin, "conformance_pin");
  BATON_SAME(a.checkpoint.manifest_path == b.checkpoint.manifest_path, "checkpoint.manifest_path");
  BATON_SAME(same_double(a.checkpoint.progress, b.checkpoint.progress), "checkpoint.progress");
  BATON_SAME(same_json(a.checkpoint.progress_codes, b.checkpoint.progress_codes), "checkpoint.progress_codes");
  BATON_SAME(a.checkpoint.cycle_status == b.checkpoint.cycle_status, "checkpoint.cycle_status");
  BATON_SAME(same_json(a.checkpoint.cycle_failures, b.checkpoint.cycle_failures), "checkpoint.cycle_failures");
  BATON_SAME(same_double(a.checkpoint.seconds, b.checkpoint.seconds), "checkpoint.seconds");
  BATON_SAME(a.failure_artifact_path == b.failure_artifact_path, "failure_artifact_path");
  BATON_SAME(a.reason == b.reason, "reason");
  BATON_SAME(a.new_job_id == b.new_job_id, "new_job_id");
  BATON_SAME(a.priority == b.priority, "priority");
  BATON_SAME(a.priority_tier == b.priority_tier, "priority_tier");
  BATON_SAME(a.admin == b.admin, "admin");
  BATON_SAME(a.by == b.by, "by");
  BATON_SAME(a.mode == b.mode, "mode");
  BATON_SAME(a.grace_until == b.grace_until, "grace_until");
#undef BATON_SAME
  return "";
}

// job.assigned's decision record as read_job_payload gave it against the decoded one: decoded
// the same, or left in place as bytes that decode to it, with the fields read from them
// ("stale_excluded", "deadline") those of the decoded record. The empty string, or what differs.
inline std::string decision_difference(const replay::job_payload& fast, std::string_view bytes, const nlohmann::json& want) {
  if (!fast.decision_at) return json_text(fast.decision) != json_text(want) ? "a different decision record" : "";
  const auto& d = *fast.decision_at;
  if (!fast.decision.is_null()) return "a decision record both decoded and left as bytes";
  if (d.offset > bytes.size() || d.size > bytes.size() - d.offset) return "a decision record's place outside the payload";
  try {
    if (json_text(events::from_payload(bytes.substr(d.offset, d.size))) != json_text(want)) return "a different decision record in place";
    std::vector<std::string> stale;
    if (want.contains("stale_excluded"))
      for (const auto& id : want.at("stale_excluded")) stale.push_back(id.get<std::string>());
    if (stale != d.stale_excluded) return "different stale workers";
    if (want.contains("deadline") != d.deadline.has_value() || (d.deadline && json_text(*d.deadline) != json_text(want.at("deadline"))))
      return "a different deadline entry";
  } catch (const std::exception& e) {
    return std::string("a decision record in place that the ordinary reading does not read: ") + e.what();
  }
  return "";
}

// The property replay::read_job_payload keeps, on one payload's bytes: where it answers, the
// ordinary reading (decode, then core::read_job_change) succeeds with the same change, and
// job.assigned's decision record is the decoded one (decision_difference). The empty string,
// or what broke it.
inline std::string fast_reading_difference(const std::string& type, std::string_view bytes, bool* answered = nullptr) {
  auto fast = replay::read_job_payload(type, bytes);
  if (answered) *answered = fast.has_value();
  if (!fast) return "";
  nlohmann::json decoded;
  core::job_change ordinary;
  try {
    decoded = events::from_payload(bytes);
    ordinary = core::read_job_change(type, decoded);
  } catch (const std::exception& e) {
    return std::string("answered where the ordinary reading fails: ") + e.what();
  }
  if (auto field = job_change_difference(fast->change, ordinary); !field.empty()) return "a different " + field;
  if (type == "job.assigned") return decision_difference(*fast, bytes, decoded.at("decision"));
  if (!fast->decision.is_null() || fast->decision_at) return "a decision record for another type";
  return "";
}

}  // namespace baton::test
