#include "core/jobs/job_events.hpp"

#include <array>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/util/time.hpp"

namespace baton::core {
namespace {

// Each job event type's kind: the one mapping, for evolve's visit and the readers by kind.
template <class T>
constexpr job_event kind_of() {
  using E = job_event;
  if constexpr (std::is_same_v<T, ev::job_created>)
    return E::created;
  else if constexpr (std::is_same_v<T, ev::job_assigned>)
    return E::assigned;
  else if constexpr (std::is_same_v<T, ev::job_started>)
    return E::started;
  else if constexpr (std::is_same_v<T, ev::job_checkpointed>)
    return E::checkpointed;
  else if constexpr (std::is_same_v<T, ev::job_progress_reported>)
    return E::progress_reported;
  else if constexpr (std::is_same_v<T, ev::job_handoff_started>)
    return E::handoff_started;
  else if constexpr (std::is_same_v<T, ev::job_handoff_completed>)
    return E::handoff_completed;
  else if constexpr (std::is_same_v<T, ev::job_requeued_after_deregister>)
    return E::requeued_after_deregister;
  else if constexpr (std::is_same_v<T, ev::job_requeued_after_reap>)
    return E::requeued_after_reap;
  else if constexpr (std::is_same_v<T, ev::job_requeued_after_orphan>)
    return E::requeued_after_orphan;
  else if constexpr (std::is_same_v<T, ev::job_requeued_after_preempt>)
    return E::requeued_after_preempt;
  else if constexpr (std::is_same_v<T, ev::job_completed>)
    return E::completed;
  else if constexpr (std::is_same_v<T, ev::job_failed>)
    return E::failed;
  else if constexpr (std::is_same_v<T, ev::job_cancel_requested>)
    return E::cancel_requested;
  else if constexpr (std::is_same_v<T, ev::job_cancelled>)
    return E::cancelled;
  else if constexpr (std::is_same_v<T, ev::job_requeued_as>)
    return E::requeued_as;
  else if constexpr (std::is_same_v<T, ev::job_pruned>)
    return E::pruned;
  else if constexpr (std::is_same_v<T, ev::job_held>)
    return E::held;
  else if constexpr (std::is_same_v<T, ev::job_released>)
    return E::released;
  else if constexpr (std::is_same_v<T, ev::job_preempted>)
    return E::preempted;
  else
    return E::other;
}

// Each place in the catalogue's variant with its kind (unknown_event's: other).
template <size_t... I>
constexpr std::array<job_event, sizeof...(I)> kinds_by_index(std::index_sequence<I...>) {
  return {kind_of<std::variant_alternative_t<I, ev::payload>>()...};
}
constexpr auto kind_at = kinds_by_index(std::make_index_sequence<std::variant_size_v<ev::payload>>{});

void set_status(job& j, job_status s, time_us at) {
  j.status = s;
  j.status_changed_at = at;
}

void close_segment(job& j, time_us at) {
  if (!j.segments.empty() && !j.segments.back().ended_at) j.segments.back().ended_at = at;
}

// A checkpoint report's fields, where the event carries them. (E is const when the payload is:
// std::move of its fields then copies.)
template <class E>
void apply_checkpoint_fields(job& j, E& p, time_us at) {
  if (p.checkpoint_manifest_path) {
    j.latest_checkpoint_manifest_path = std::move(*p.checkpoint_manifest_path);
    j.last_checkpoint_at = at;
  }
  if (p.progress) j.progress = *p.progress;
  if (p.progress_codes) j.progress_codes = std::move(*p.progress_codes);
  if (p.checkpoint_cycle_status) j.checkpoint_cycle_status = std::move(*p.checkpoint_cycle_status);
  if (p.checkpoint_cycle_failures) j.checkpoint_cycle_failures = std::move(*p.checkpoint_cycle_failures);
  if (p.checkpoint_seconds) j.checkpoint_seconds = *p.checkpoint_seconds;
}

// P: ev::payload, to move from, or const ev::payload&, to copy the fields read from.
template <class P>
void evolve_typed(job& j, P&& payload, time_us at) {
  j.updated_at = at;
  std::visit(
      [&](auto& p) {
        using T = std::decay_t<decltype(p)>;
        constexpr job_event kind = kind_of<T>();
        if constexpr (std::is_same_v<T, ev::unknown_event>) {
          // Kept as its bytes: applies as what they say (a type this build does not know
          // changes nothing but updated_at).
          auto typed = ev::decode(p.type, p.schema, p.bytes);
          if (!std::holds_alternative<ev::unknown_event>(typed)) evolve_typed(j, std::move(typed), at);
        } else if constexpr (kind == job_event::created) {
          j.title = std::move(p.title);
          j.input_bundle_path = std::move(p.input_bundle_path);
          j.worker_image_key = std::move(p.worker_image_key);
          j.preferred_clusters = std::move(p.preferred_clusters);
          j.comment = std::move(p.comment);
          j.max_attempts = p.max_attempts;
          j.requeued_from = std::move(p.requeued_from);
          j.latest_checkpoint_manifest_path = std::move(p.latest_checkpoint_manifest_path);
          if (p.last_checkpoint_at_us) j.last_checkpoint_at = p.last_checkpoint_at_us;
          j.user = std::move(p.user);
          j.account = std::move(p.account);
          j.partition = std::move(p.partition);
          j.qos = std::move(p.qos);
          j.nice = p.nice;
          j.gpu_count = p.gpu_count;
          if (p.time_limit_seconds) j.time_limit_seconds = p.time_limit_seconds;
          j.checkpoints = p.checkpoints;
          j.requeue = p.requeue;
          j.interactive = p.interactive;
          j.conformance = std::move(p.conformance);
          if (p.checkpoint_seconds) j.checkpoint_seconds = p.checkpoint_seconds;
          j.held = p.hold;
          j.depends_on = dependencies_of(p.depends_on);
          j.created_at = at;
          set_status(j, job_status::queued, at);
        } else if constexpr (kind == job_event::assigned) {
          j.assigned_worker_id = std::move(p.worker_id);
          j.attempts = p.attempt ? p.attempt : next_attempt(j);  // (0: not recorded)
          j.assigned_at = at;
          // lattice:sensitive pins the job to its first worker's fingerprint (the decision records it).
          if (p.decision.conformance_pin) j.conformance = std::move(*p.decision.conformance_pin);
          close_segment(j, at);
          j.segments.push_back({j.assigned_worker_id, at, std::nullopt});
          set_status(j, job_status::assigned, at);
        } else if constexpr (kind == job_event::started) {
          j.started_at = at;
          if (!j.segments.empty() && !j.segments.back().ended_at && j.segments.back().worker_id == j.assigned_worker_id) {
            j.segments.back().started_at = at;  // runtime counts from start, as RelayMD's ADR-0001
            j.segments.back().started = true;
          }
          set_status(j, job_status::running, at);
        } else if constexpr (kind == job_event::checkpointed || kind == job_event::progress_reported) {
          apply_checkpoint_fields(j, p, at);
        } else if constexpr (kind == job_event::handoff_started) {
          set_status(j, job_status::handoff, at);
        } else if constexpr (kind == job_event::handoff_completed || kind == job_event::requeued_after_deregister ||
                             kind == job_event::requeued_after_reap || kind == job_event::requeued_after_orphan ||
                             kind == job_event::requeued_after_preempt) {
          if (kind == job_event::requeued_after_reap || kind == job_event::requeued_after_orphan) ++j.lost_workers;
          apply_checkpoint_fields(j, p, at);
          close_segment(j, at);
          j.assigned_worker_id.clear();
          set_status(j, job_status::queued, at);
        } else if constexpr (kind == job_event::completed) {
          close_segment(j, at);
          set_status(j, job_status::completed, at);
        } else if constexpr (kind == job_event::failed) {
          if (p.failure_artifact_path) j.latest_failure_artifact_path = std::move(*p.failure_artifact_path);
          j.failure_reason = std::move(p.reason);
          close_segment(j, at);
          set_status(j, job_status::failed, at);
        } else if constexpr (kind == job_event::cancel_requested) {
          j.cancellation_requested_at = at;
          set_status(j, job_status::cancelling, at);
        } else if constexpr (kind == job_event::cancelled) {
          // Why, when it was not an operator's cancel (dependency_never_satisfied): shown as failure_reason.
          if (p.reason) j.failure_reason = std::move(*p.reason);
          close_segment(j, at);
          j.assigned_worker_id.clear();
          set_status(j, job_status::cancelled, at);
        } else if constexpr (kind == job_event::requeued_as) {
          j.requeued_to.push_back(std::move(p.new_job_id));
        } else if constexpr (kind == job_event::pruned) {
          j.pruned = true;  // the queue's last word on it (none recorded: the job keeps its own)
          if (p.priority) j.priority = *p.priority;
          if (p.priority_tier) j.priority_tier = *p.priority_tier;
        } else if constexpr (kind == job_event::held) {
          j.held = true;
          j.admin_hold = p.admin;
        } else if constexpr (kind == job_event::released) {
          j.held = false;
          j.admin_hold = false;
        } else if constexpr (kind == job_event::preempted) {
          j.preempted_by = std::move(p.by);
          j.preempt_mode = p.mode.empty() ? std::string("requeue") : std::move(p.mode);
          j.preempt_grace_until = util::parse_time_us(p.grace_until).value_or(at);  // unreadable: the event's time
          ++j.preemptions;
          if (j.preempt_mode == "cancel") {  // the cancel path: the worker stops, its next poll closes it
            j.cancellation_requested_at = at;
            j.failure_reason = "preempted";  // why it ends cancelled
            set_status(j, job_status::cancelling, at);
          }
        }
        // Another stream's event changes nothing here.
      },
      payload);
  if (!occupies_worker(j.status) && !j.preempted_by.empty()) {  // it left its worker: the preemption is over
    j.preempted_by.clear();
    j.preempt_mode.clear();
    j.preempt_grace_until = 0;
  }
}

}  // namespace

job_event job_event_of(std::string_view type) { return kind_at[ev::index_of(type)]; }

job_event job_event_of(const ev::payload& p) {
  if (const auto* raw = std::get_if<ev::unknown_event>(&p)) return job_event_of(raw->type);
  return kind_at[p.index()];
}

void evolve(job& j, ev::payload&& p, time_us at) { evolve_typed(j, std::move(p), at); }
void evolve(job& j, const ev::payload& p, time_us at) { evolve_typed(j, p, at); }

std::optional<job_status> status_set_by(job_event k, std::string_view preempt_mode) {
  switch (k) {
    case job_event::created:
    case job_event::requeued_after_reap:
    case job_event::requeued_after_orphan:
    case job_event::handoff_completed:
    case job_event::requeued_after_deregister:
    case job_event::requeued_after_preempt:
      return job_status::queued;
    case job_event::assigned:
      return job_status::assigned;
    case job_event::started:
      return job_status::running;
    case job_event::handoff_started:
      return job_status::handoff;
    case job_event::completed:
      return job_status::completed;
    case job_event::failed:
      return job_status::failed;
    case job_event::cancel_requested:
      return job_status::cancelling;
    case job_event::cancelled:
      return job_status::cancelled;
    case job_event::preempted:
      if (preempt_mode == "cancel") return job_status::cancelling;
      return std::nullopt;
    case job_event::checkpointed:
    case job_event::progress_reported:
    case job_event::requeued_as:
    case job_event::pruned:
    case job_event::held:
    case job_event::released:
    case job_event::other:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace baton::core
