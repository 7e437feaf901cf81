#include "core/job_change.hpp"

#include <array>
#include <utility>

#include "core/assignment_record.hpp"
#include "core/payload_numbers.hpp"
#include "core/util/time.hpp"

namespace baton::core {
namespace {

using nlohmann::json;

// The fields a checkpoint report, a handoff or a requeue may carry, each only when present.
checkpoint_report read_checkpoint_fields(const json& p) {
  checkpoint_report r;
  if (auto it = p.find("checkpoint_manifest_path"); it != p.end()) r.manifest_path = it->get<std::string>();
  if (auto it = p.find("progress"); it != p.end()) r.progress = it->get<double>();
  if (auto it = p.find("progress_codes"); it != p.end()) r.progress_codes = *it;
  if (auto it = p.find("checkpoint_cycle_status"); it != p.end()) r.cycle_status = it->get<std::string>();
  if (auto it = p.find("checkpoint_cycle_failures"); it != p.end()) r.cycle_failures = *it;
  if (auto it = p.find("checkpoint_seconds"); it != p.end()) r.seconds = it->get<double>();
  return r;
}

void apply_checkpoint_fields(job& j, checkpoint_report&& r, time_us at) {
  if (r.manifest_path) {
    j.latest_checkpoint_manifest_path = std::move(*r.manifest_path);
    j.last_checkpoint_at = at;
  }
  if (r.progress) j.progress = *r.progress;
  if (r.progress_codes) j.progress_codes = std::move(*r.progress_codes);
  if (r.cycle_status) j.checkpoint_cycle_status = std::move(*r.cycle_status);
  if (r.cycle_failures) j.checkpoint_cycle_failures = std::move(*r.cycle_failures);
  if (r.seconds) j.checkpoint_seconds = *r.seconds;
}

void set_status(job& j, job_status s, time_us at) {
  j.status = s;
  j.status_changed_at = at;
}

void close_segment(job& j, time_us at) {
  if (!j.segments.empty() && !j.segments.back().ended_at) j.segments.back().ended_at = at;
}

create_job read_created(const json& p) {
  create_job c;
  c.title = p.value("title", "");
  c.input_bundle_path = p.value("input_bundle_path", "");
  c.worker_image_key = p.value("worker_image_key", "");
  c.preferred_clusters = p.value("preferred_clusters", std::vector<std::string>{});
  c.comment = p.value("comment", "");
  c.max_attempts = number_or(p, "max_attempts", 5u);
  c.requeued_from = p.value("requeued_from", "");
  c.latest_checkpoint_manifest_path = p.value("latest_checkpoint_manifest_path", "");
  if (p.contains("last_checkpoint_at_us")) c.last_checkpoint_at = number_or(p, "last_checkpoint_at_us", time_us{0});
  c.user = p.value("user", "");
  c.account = p.value("account", "");
  c.partition = p.value("partition", "");
  c.qos = p.value("qos", "");
  c.nice = number_or(p, "nice", int64_t{0});
  c.gpu_count = number_or(p, "gpu_count", 1u);
  if (auto it = p.find("time_limit_seconds"); it != p.end() && it->is_number())
    c.time_limit_seconds = number_or(p, "time_limit_seconds", int64_t{0});
  c.checkpoints = p.value("checkpoints", true);
  c.requeue = p.value("requeue", true);
  c.interactive = p.value("interactive", false);
  c.conformance = p.value("conformance", "");
  if (auto it = p.find("checkpoint_seconds"); it != p.end()) c.checkpoint_seconds = it->get<double>();
  c.hold = p.value("hold", false);
  c.depends_on = dependencies_from_json(p.value("depends_on", json::array()));
  c.array_id = p.value("array_id", "");
  c.array_index = number_or(p, "array_index", 0u);
  return c;
}

}  // namespace

job_event job_event_of(std::string_view type) {
  static constexpr std::array<std::pair<std::string_view, job_event>, 20> names{{
      {"job.created", job_event::created},
      {"job.assigned", job_event::assigned},
      {"job.started", job_event::started},
      {"job.checkpointed", job_event::checkpointed},
      {"job.progress_reported", job_event::progress_reported},
      {"job.handoff_started", job_event::handoff_started},
      {"job.handoff_completed", job_event::handoff_completed},
      {"job.requeued_after_deregister", job_event::requeued_after_deregister},
      {"job.requeued_after_reap", job_event::requeued_after_reap},
      {"job.requeued_after_orphan", job_event::requeued_after_orphan},
      {"job.requeued_after_preempt", job_event::requeued_after_preempt},
      {"job.completed", job_event::completed},
      {"job.failed", job_event::failed},
      {"job.cancel_requested", job_event::cancel_requested},
      {"job.cancelled", job_event::cancelled},
      {"job.requeued_as", job_event::requeued_as},
      {"job.pruned", job_event::pruned},
      {"job.held", job_event::held},
      {"job.released", job_event::released},
      {"job.preempted", job_event::preempted},
  }};
  // (Every name is "job." and a word: the word's first letter, then the whole, so that a name
  // of the same length compares in full only when it is likely the one.)
  for (const auto& [name, kind] : names)
    if (name.size() == type.size() && name[4] == type[4] && name == type) return kind;
  return job_event::other;
}

job_change read_job_change(std::string_view type, const json& p) {
  job_change c;
  c.kind = job_event_of(type);
  switch (c.kind) {
    case job_event::created:
      c.created = read_created(p);
      break;
    case job_event::assigned:
      c.worker_id = p.at("worker_id").get<std::string>();
      c.attempt = number_if<uint32_t>(p, "attempt");
      if (auto d = p.find("decision"); d != p.end() && d->is_object() && d->contains("conformance_pin"))
        c.conformance_pin = (*d)["conformance_pin"].get<std::string>();
      break;
    case job_event::checkpointed:
    case job_event::progress_reported:
    case job_event::handoff_completed:
    case job_event::requeued_after_deregister:
    case job_event::requeued_after_reap:
    case job_event::requeued_after_orphan:
    case job_event::requeued_after_preempt:
      c.checkpoint = read_checkpoint_fields(p);
      break;
    case job_event::failed:
      if (auto it = p.find("failure_artifact_path"); it != p.end()) c.failure_artifact_path = it->get<std::string>();
      c.reason = p.value("reason", "");
      break;
    case job_event::cancelled:
      if (auto it = p.find("reason"); it != p.end()) c.reason = it->get<std::string>();
      break;
    case job_event::requeued_as:
      c.new_job_id = p.at("new_job_id").get<std::string>();
      break;
    case job_event::pruned:
      c.priority = number_if<int64_t>(p, "priority");
      c.priority_tier = number_if<int>(p, "priority_tier");
      break;
    case job_event::held:
      c.admin = p.value("admin", false);
      break;
    case job_event::preempted:
      c.by = p.value("by", "");
      c.mode = p.value("mode", "requeue");
      c.grace_until = util::parse_time_us(p.value("grace_until", ""));
      break;
    default:
      break;
  }
  return c;
}

void evolve(job& j, job_change&& c, time_us at) {
  j.updated_at = at;
  switch (c.kind) {
    case job_event::created: {
      create_job& n = *c.created;
      j.title = std::move(n.title);
      j.input_bundle_path = std::move(n.input_bundle_path);
      j.worker_image_key = std::move(n.worker_image_key);
      j.preferred_clusters = std::move(n.preferred_clusters);
      j.comment = std::move(n.comment);
      j.max_attempts = n.max_attempts;
      j.requeued_from = std::move(n.requeued_from);
      j.latest_checkpoint_manifest_path = std::move(n.latest_checkpoint_manifest_path);
      if (n.last_checkpoint_at) j.last_checkpoint_at = n.last_checkpoint_at;
      j.user = std::move(n.user);
      j.account = std::move(n.account);
      j.partition = std::move(n.partition);
      j.qos = std::move(n.qos);
      j.nice = n.nice;
      j.gpu_count = n.gpu_count;
      if (n.time_limit_seconds) j.time_limit_seconds = n.time_limit_seconds;
      j.checkpoints = n.checkpoints;
      j.requeue = n.requeue;
      j.interactive = n.interactive;
      j.conformance = std::move(n.conformance);
      if (n.checkpoint_seconds) j.checkpoint_seconds = n.checkpoint_seconds;
      j.held = n.hold;
      j.depends_on = std::move(n.depends_on);
      j.created_at = at;
      set_status(j, job_status::queued, at);
      break;
    }
    case job_event::assigned:
      j.assigned_worker_id = std::move(c.worker_id);
      j.attempts = c.attempt.value_or(next_attempt(j));
      j.assigned_at = at;
      // lattice:sensitive pins the job to its first worker's fingerprint (the decision records it).
      if (c.conformance_pin) j.conformance = std::move(*c.conformance_pin);
      close_segment(j, at);
      j.segments.push_back({j.assigned_worker_id, at, std::nullopt});
      set_status(j, job_status::assigned, at);
      break;
    case job_event::started:
      j.started_at = at;
      if (!j.segments.empty() && !j.segments.back().ended_at && j.segments.back().worker_id == j.assigned_worker_id) {
        j.segments.back().started_at = at;  // runtime counts from start, as RelayMD's ADR-0001
        j.segments.back().started = true;
      }
      set_status(j, job_status::running, at);
      break;
    case job_event::checkpointed:
    case job_event::progress_reported:
      apply_checkpoint_fields(j, std::move(c.checkpoint), at);
      break;
    case job_event::handoff_started:
      set_status(j, job_status::handoff, at);
      break;
    case job_event::requeued_after_reap:
    case job_event::requeued_after_orphan:
      ++j.lost_workers;
      [[fallthrough]];
    case job_event::handoff_completed:
    case job_event::requeued_after_deregister:
    case job_event::requeued_after_preempt:
      apply_checkpoint_fields(j, std::move(c.checkpoint), at);
      close_segment(j, at);
      j.assigned_worker_id.clear();
      set_status(j, job_status::queued, at);
      break;
    case job_event::completed:
      close_segment(j, at);
      set_status(j, job_status::completed, at);
      break;
    case job_event::failed:
      if (c.failure_artifact_path) j.latest_failure_artifact_path = std::move(*c.failure_artifact_path);
      j.failure_reason = c.reason.value_or("");
      close_segment(j, at);
      set_status(j, job_status::failed, at);
      break;
    case job_event::cancel_requested:
      j.cancellation_requested_at = at;
      set_status(j, job_status::cancelling, at);
      break;
    case job_event::cancelled:
      // Why, when it was not an operator's cancel (dependency_never_satisfied): shown as failure_reason.
      if (c.reason) j.failure_reason = std::move(*c.reason);
      close_segment(j, at);
      j.assigned_worker_id.clear();
      set_status(j, job_status::cancelled, at);
      break;
    case job_event::requeued_as:
      j.requeued_to.push_back(std::move(c.new_job_id));
      break;
    case job_event::pruned:
      j.pruned = true;
      j.priority = c.priority.value_or(j.priority);
      j.priority_tier = c.priority_tier.value_or(j.priority_tier);
      break;
    case job_event::held:
      j.held = true;
      j.admin_hold = c.admin;
      break;
    case job_event::released:
      j.held = false;
      j.admin_hold = false;
      break;
    case job_event::preempted:
      j.preempted_by = std::move(c.by);
      j.preempt_mode = std::move(c.mode);
      j.preempt_grace_until = c.grace_until.value_or(at);
      ++j.preemptions;
      if (j.preempt_mode == "cancel") {  // the cancel path: the worker stops, its next poll closes it
        j.cancellation_requested_at = at;
        j.failure_reason = "preempted";  // why it ends cancelled
        set_status(j, job_status::cancelling, at);
      }
      break;
    case job_event::other:
      break;
  }
  if (!occupies_worker(j.status) && !j.preempted_by.empty()) {  // it left its worker: the preemption is over
    j.preempted_by.clear();
    j.preempt_mode.clear();
    j.preempt_grace_until = 0;
  }
}

std::optional<job_status> status_set_by(job_event k, std::string_view preempt_mode) {
  switch (k) {
    case job_event::created:
    case job_event::requeued_after_reap:
    case job_event::requeued_after_orphan:
    case job_event::handoff_completed:
    case job_event::requeued_after_deregister:
    case job_event::requeued_after_preempt: return job_status::queued;
    case job_event::assigned: return job_status::assigned;
    case job_event::started: return job_status::running;
    case job_event::handoff_started: return job_status::handoff;
    case job_event::completed: return job_status::completed;
    case job_event::failed: return job_status::failed;
    case job_event::cancel_requested: return job_status::cancelling;
    case job_event::cancelled: return job_status::cancelled;
    case job_event::preempted:
      if (preempt_mode == "cancel") return job_status::cancelling;
      return std::nullopt;
    case job_event::checkpointed:
    case job_event::progress_reported:
    case job_event::requeued_as:
    case job_event::pruned:
    case job_event::held:
    case job_event::released:
    case job_event::other: return std::nullopt;
  }
  return std::nullopt;
}

job_change assigned_change(const assigned_payload& p) {
  job_change c;
  c.kind = job_event::assigned;
  c.worker_id = p.worker_id;
  c.attempt = p.attempt;
  c.conformance_pin = p.decision.conformance_pin;
  return c;
}

}  // namespace baton::core
