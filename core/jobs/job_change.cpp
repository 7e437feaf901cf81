#include "core/jobs/job_change.hpp"

#include <variant>
#include <utility>

#include "core/events/assignment_record.hpp"
#include "core/events/payload_numbers.hpp"
#include "core/util/time.hpp"

namespace baton::core {
namespace {

using nlohmann::json;

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

// (P: the payload, to move from, or const, to copy the fields read from)
template <class P>
void created_into(create_job& c, P&& p) {  // (filled in place: its strings are moved once)
  c.title = std::move(p.title);
  c.input_bundle_path = std::move(p.input_bundle_path);
  c.worker_image_key = std::move(p.worker_image_key);
  c.preferred_clusters = std::move(p.preferred_clusters);
  c.comment = std::move(p.comment);
  c.max_attempts = p.max_attempts;
  c.requeued_from = std::move(p.requeued_from);
  c.latest_checkpoint_manifest_path = std::move(p.latest_checkpoint_manifest_path);
  c.last_checkpoint_at = p.last_checkpoint_at_us;
  c.user = std::move(p.user);
  c.account = std::move(p.account);
  c.partition = std::move(p.partition);
  c.qos = std::move(p.qos);
  c.nice = p.nice;
  c.gpu_count = p.gpu_count;
  c.time_limit_seconds = p.time_limit_seconds;
  c.checkpoints = p.checkpoints;
  c.requeue = p.requeue;
  c.interactive = p.interactive;
  c.conformance = std::move(p.conformance);
  c.checkpoint_seconds = p.checkpoint_seconds;
  c.hold = p.hold;
  c.depends_on = dependencies_from_json(p.depends_on.is_null() ? json::array() : p.depends_on);
  c.array_id = std::move(p.array_id);
  c.array_index = p.array_index;
}

template <class E>
checkpoint_report checkpoint_of(E&& p) {
  checkpoint_report r;
  r.manifest_path = std::move(p.checkpoint_manifest_path);
  r.progress = p.progress;
  r.progress_codes = std::move(p.progress_codes);
  r.cycle_status = std::move(p.checkpoint_cycle_status);
  r.cycle_failures = std::move(p.checkpoint_cycle_failures);
  r.seconds = p.checkpoint_seconds;
  return r;
}

}  // namespace

namespace {

// Each job event type's kind: the one mapping, for the typed reading (change_from) and the
// reading by type name (job_event_of).
template <class T>
constexpr job_event kind_of() {
  using E = job_event;
  if constexpr (std::is_same_v<T, ev::job_created>) return E::created;
  else if constexpr (std::is_same_v<T, ev::job_assigned>) return E::assigned;
  else if constexpr (std::is_same_v<T, ev::job_started>) return E::started;
  else if constexpr (std::is_same_v<T, ev::job_checkpointed>) return E::checkpointed;
  else if constexpr (std::is_same_v<T, ev::job_progress_reported>) return E::progress_reported;
  else if constexpr (std::is_same_v<T, ev::job_handoff_started>) return E::handoff_started;
  else if constexpr (std::is_same_v<T, ev::job_handoff_completed>) return E::handoff_completed;
  else if constexpr (std::is_same_v<T, ev::job_requeued_after_deregister>) return E::requeued_after_deregister;
  else if constexpr (std::is_same_v<T, ev::job_requeued_after_reap>) return E::requeued_after_reap;
  else if constexpr (std::is_same_v<T, ev::job_requeued_after_orphan>) return E::requeued_after_orphan;
  else if constexpr (std::is_same_v<T, ev::job_requeued_after_preempt>) return E::requeued_after_preempt;
  else if constexpr (std::is_same_v<T, ev::job_completed>) return E::completed;
  else if constexpr (std::is_same_v<T, ev::job_failed>) return E::failed;
  else if constexpr (std::is_same_v<T, ev::job_cancel_requested>) return E::cancel_requested;
  else if constexpr (std::is_same_v<T, ev::job_cancelled>) return E::cancelled;
  else if constexpr (std::is_same_v<T, ev::job_requeued_as>) return E::requeued_as;
  else if constexpr (std::is_same_v<T, ev::job_pruned>) return E::pruned;
  else if constexpr (std::is_same_v<T, ev::job_held>) return E::held;
  else if constexpr (std::is_same_v<T, ev::job_released>) return E::released;
  else if constexpr (std::is_same_v<T, ev::job_preempted>) return E::preempted;
  else return E::other;
}

// The types whose payload carries a checkpoint report's fields.
template <class T>
constexpr bool carries_checkpoint() {
  constexpr job_event k = kind_of<T>();
  return k == job_event::checkpointed || k == job_event::progress_reported || k == job_event::handoff_completed ||
         k == job_event::requeued_after_deregister || k == job_event::requeued_after_reap ||
         k == job_event::requeued_after_orphan || k == job_event::requeued_after_preempt;
}

template <size_t... I>
job_event kind_named(std::string_view type, std::index_sequence<I...>) {
  job_event k = job_event::other;
  (void)((kind_of<std::variant_alternative_t<I, ev::payload>>() != job_event::other &&
          std::variant_alternative_t<I, ev::payload>::type == type &&
          (k = kind_of<std::variant_alternative_t<I, ev::payload>>(), true)) ||
         ...);
  return k;
}

}  // namespace

job_event job_event_of(std::string_view type) {
  return kind_named(type, std::make_index_sequence<std::variant_size_v<ev::payload> - 1>{});  // (not unknown_event)
}

namespace {

template <class Payload>
job_change change_from(Payload&& payload) {
  job_change c;
  std::visit(
      [&](auto&& p) {
        using T = std::decay_t<decltype(p)>;
        c.kind = kind_of<T>();
        if constexpr (carries_checkpoint<T>()) {
          c.checkpoint = checkpoint_of(std::forward<decltype(p)>(p));
        } else if constexpr (std::is_same_v<T, ev::job_created>) {
          created_into(c.created.emplace(), std::forward<decltype(p)>(p));
        } else if constexpr (std::is_same_v<T, ev::job_assigned>) {
          c.worker_id = std::move(p.worker_id);
          if (p.attempt) c.attempt = p.attempt;
          c.conformance_pin = std::move(p.decision.conformance_pin);
        } else if constexpr (std::is_same_v<T, ev::job_failed>) {
          c.failure_artifact_path = std::move(p.failure_artifact_path);
          c.reason = std::move(p.reason);
        } else if constexpr (std::is_same_v<T, ev::job_cancelled>) {
          c.reason = std::move(p.reason);
        } else if constexpr (std::is_same_v<T, ev::job_requeued_as>) {
          c.new_job_id = std::move(p.new_job_id);
        } else if constexpr (std::is_same_v<T, ev::job_pruned>) {
          c.priority = p.priority;
          c.priority_tier = p.priority_tier;
        } else if constexpr (std::is_same_v<T, ev::job_held>) {
          c.admin = p.admin;
        } else if constexpr (std::is_same_v<T, ev::job_preempted>) {
          c.by = std::move(p.by);
          c.mode = p.mode.empty() ? std::string("requeue") : std::move(p.mode);
          c.grace_until = util::parse_time_us(p.grace_until);
        } else if constexpr (std::is_same_v<T, ev::unknown_event>) {
          // An event kept as its bytes applies as what they say (a type this build does not
          // know changes nothing but the job's updated_at: forward compatibility).
          auto typed = ev::decode(p.type, p.schema, p.bytes);
          if (!std::holds_alternative<ev::unknown_event>(typed)) c = change_of(std::move(typed));
        }
        // Another stream's event changes nothing here.
      },
      std::forward<Payload>(payload));
  return c;
}

}  // namespace

job_change change_of(ev::payload&& p) { return change_from(std::move(p)); }
job_change change_of(const ev::payload& p) { return change_from(p); }

job_change read_job_change(std::string_view type, const json& p) { return change_of(ev::from_json(type, p)); }

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

}  // namespace baton::core
