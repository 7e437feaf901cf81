#include "core/jobs/job.hpp"
#include "core/jobs/job_text.hpp"
#include "core/events/assignment_record.hpp"
#include "core/util/time.hpp"

#include <algorithm>

namespace baton::core {
namespace {

using nlohmann::json;

const char* status_names[] = {"queued", "assigned", "running", "handoff", "cancelling", "completed", "failed", "cancelled"};

domain_error conflict(const job& j, job_status requested) {
  std::string msg = std::string("cannot move job from ") + to_string(j.status) + " to " + to_string(requested);
  return {error_kind::conflict,
          "job_transition_conflict",
          msg,
          {{"job_id", j.id}, {"current_status", to_string(j.status)}, {"requested_status", to_string(requested)}},
          ""};
}

decision emit(const job& j, ev::payload payload) { return decision::of(job_stream(j.id), std::move(payload)); }

template <class E>
E checkpoint_fields(const checkpoint_report& r, const std::string& worker_id) {
  E p;
  p.checkpoint_manifest_path = r.manifest_path;
  p.progress = r.progress;
  p.progress_codes = r.progress_codes;
  p.checkpoint_cycle_status = r.cycle_status;
  p.checkpoint_cycle_failures = r.cycle_failures;
  p.checkpoint_seconds = r.seconds;
  p.worker_id = worker_id;
  return p;
}

template <class E>
E requeued(const job& j) {
  E p;
  p.worker_id = j.assigned_worker_id;
  p.from_status = to_string(j.status);
  return p;
}

ev::payload requeue_event(loss_cause c, const job& j) {
  switch (c) {
    case loss_cause::deregistered:
      return requeued<ev::job_requeued_after_deregister>(j);
    case loss_cause::reaped:
      return requeued<ev::job_requeued_after_reap>(j);
    case loss_cause::orphaned:
      return requeued<ev::job_requeued_after_orphan>(j);
    case loss_cause::preempted:
      return requeued<ev::job_requeued_after_preempt>(j);
  }
  return requeued<ev::job_requeued_after_reap>(j);
}

}  // namespace

const char* to_string(job_status s) { return status_names[static_cast<int>(s)]; }

std::optional<job_status> job_status_from(const std::string& s) {
  for (int i = 0; i < 8; ++i)
    if (s == status_names[i]) return static_cast<job_status>(i);
  return std::nullopt;
}

bool is_terminal(job_status s) { return s == job_status::completed || s == job_status::failed || s == job_status::cancelled; }

bool occupies_worker(job_status s) {
  return s == job_status::assigned || s == job_status::running || s == job_status::handoff || s == job_status::cancelling;
}

bool transition_allowed(job_status from, job_status to) {
  using S = job_status;
  switch (from) {
    case S::queued:
      return to == S::assigned || to == S::cancelled;
    case S::assigned:
    case S::running:
      return to == S::running || to == S::completed || to == S::failed || to == S::cancelled || to == S::cancelling ||
             to == S::queued || (from == S::running && to == S::handoff);
    case S::handoff:
      return to == S::queued || to == S::cancelled || to == S::cancelling || to == S::failed;
    case S::cancelling:
      return to == S::cancelled;
    default:
      return false;
  }
}

const char* to_string(loss_cause c) {
  switch (c) {
    case loss_cause::deregistered:
      return "deregistered";
    case loss_cause::reaped:
      return "reaped";
    case loss_cause::orphaned:
      return "orphaned";
    case loss_cause::preempted:
      return "preempted";
  }
  return "reaped";
}

std::string job_stream(const std::string& id) { return "job/" + id; }

domain_error job_exists(const std::string& id) {
  return {error_kind::conflict, "job_exists", "Job with id " + id + " already exists", {{"job_id", id}}, ""};
}

domain_error job_pruned(const std::string& id, job_status status) {
  return {error_kind::conflict,
          "job_pruned",
          "job " + id + " was pruned: its record and history stay in the log, nothing more can happen to it",
          {{"job_id", id}, {"current_status", to_string(status)}},
          ""};
}

decision decide_create(const job* existing, const create_job& c, time_us now) {
  if (existing) return decision::refuse(job_exists(c.id));
  ev::job_created p;
  p.title = c.title;
  p.input_bundle_path = c.input_bundle_path;
  p.worker_image_key = c.worker_image_key;
  p.preferred_clusters = c.preferred_clusters;
  p.comment = c.comment;
  p.max_attempts = c.max_attempts;
  p.requeued_from = c.requeued_from;
  p.latest_checkpoint_manifest_path = c.latest_checkpoint_manifest_path;
  p.last_checkpoint_at_us = c.last_checkpoint_at;
  p.user = c.user;
  p.account = c.account;
  p.partition = c.partition;
  p.qos = c.qos;
  p.nice = c.nice;
  p.gpu_count = c.gpu_count;
  p.time_limit_seconds = c.time_limit_seconds;
  p.checkpoints = c.checkpoints;
  p.requeue = c.requeue;
  p.interactive = c.interactive;
  p.conformance = c.conformance;
  p.checkpoint_seconds = c.checkpoint_seconds;
  p.hold = c.hold;
  p.depends_on = to_records(c.depends_on);
  p.array_id = c.array_id;
  p.array_index = c.array_index;
  return decision::of(job_stream(c.id), std::move(p));
}

decision decide_assign(const job& j, const std::string& worker_id, assignment_record decision_record, time_us now) {
  if (j.status != job_status::queued) return decision::refuse(conflict(j, job_status::assigned));
  return emit(j, ev::job_assigned{next_attempt(j), std::move(decision_record), worker_id});
}

decision decide_start(const job& j, time_us now) {
  if (j.status == job_status::running) return {};  // idempotent: a retried start changes nothing
  if (j.status != job_status::assigned) return decision::refuse(conflict(j, job_status::running));
  return emit(j, ev::job_started{j.assigned_worker_id});
}

decision decide_checkpoint(const job& j, const checkpoint_report& r, time_us now) {
  if (!occupies_worker(j.status)) return decision::refuse(conflict(j, j.status));
  return emit(j, checkpoint_fields<ev::job_checkpointed>(r, j.assigned_worker_id));
}

decision decide_handoff_start(const job& j, ev::job_handoff_started details, time_us now) {
  if (j.status != job_status::running) return decision::refuse(conflict(j, job_status::handoff));
  details.worker_id = j.assigned_worker_id;
  return emit(j, std::move(details));
}

decision decide_handoff_complete(const job& j, const checkpoint_report& r, time_us now) {
  // Only from handoff: RelayMD's requeue-in-place let it skip handoff/start entirely.
  if (j.status != job_status::handoff) return decision::refuse(conflict(j, job_status::queued));
  return emit(j, checkpoint_fields<ev::job_handoff_completed>(r, j.assigned_worker_id));
}

decision decide_complete(const job& j, time_us now) {
  if (j.status != job_status::assigned && j.status != job_status::running)
    return decision::refuse(conflict(j, job_status::completed));
  return emit(j, ev::job_completed{j.assigned_worker_id});
}

decision decide_fail(const job& j, ev::job_failed details, time_us now) {
  if (j.status != job_status::assigned && j.status != job_status::running)
    return decision::refuse(conflict(j, job_status::failed));
  details.worker_id = j.assigned_worker_id;
  return emit(j, std::move(details));
}

decision decide_progress(const job& j, const std::string& worker_id, std::optional<double> progress,
                         const std::optional<json>& codes, time_us now) {
  if (j.assigned_worker_id != worker_id || !occupies_worker(j.status)) return {};  // RelayMD: silently ignored
  ev::job_progress_reported p;
  p.worker_id = worker_id;
  if (progress && (!j.progress || *j.progress != *progress)) p.progress = *progress;
  if (codes && *codes != j.progress_codes) p.progress_codes = *codes;
  if (!p.progress && !p.progress_codes) return {};  // heartbeats repeat themselves; the log records changes only
  return emit(j, std::move(p));
}

decision decide_cancel(const job& j, bool force, time_us now) {
  if (j.status == job_status::queued)
    return emit(j, ev::job_cancelled{std::nullopt, std::nullopt, "queued", std::nullopt, std::nullopt});
  if (j.status == job_status::running && !force) {
    std::string msg = "Running job requires force=true";
    return decision::refuse({error_kind::conflict, "force_required", msg, {{"job_id", j.id}, {"current_status", "running"}}, ""});
  }
  if (j.status == job_status::assigned || j.status == job_status::running || j.status == job_status::handoff)
    return emit(j, ev::job_cancel_requested{force, j.assigned_worker_id});
  return decision::refuse(conflict(j, job_status::cancelling));
}

decision decide_finish_cancel(const job& j, time_us now) {
  if (j.status != job_status::cancelling) return decision::refuse(conflict(j, job_status::cancelled));
  return emit(j, ev::job_cancelled{std::nullopt, std::nullopt, "cancelling", std::nullopt, j.assigned_worker_id});
}

bool counts_as_lost(loss_cause c) { return c != loss_cause::deregistered; }

decision decide_worker_lost(const job& j, loss_cause cause, time_us now) {
  if (j.status == job_status::cancelling) return decide_finish_cancel(j, now);
  if (j.status != job_status::assigned && j.status != job_status::running && j.status != job_status::handoff)
    return decision::refuse(conflict(j, job_status::queued));
  // Only an unplanned loss counts against the job: a handoff or a worker that deregisters
  // (a pilot giving back a job it has no time left for) is the relay working as meant.
  if (counts_as_lost(cause) && j.lost_workers + 1 >= j.max_attempts) {
    ev::job_failed f;
    f.worker_id = j.assigned_worker_id;
    f.reason = "max_attempts_exceeded";
    f.detail = "worker " + std::string(to_string(cause)) + ": " + std::to_string(j.lost_workers + 1) + " of " +
               std::to_string(j.max_attempts) + " attempts lost their worker";
    f.cause = to_string(cause);
    return emit(j, std::move(f));
  }
  return emit(j, requeue_event(cause, j));
}

decision decide_requeue(const job& j, const std::string& new_id, time_us now) {
  if (!is_terminal(j.status)) return decision::refuse(conflict(j, job_status::queued));
  if (!j.requeued_to.empty()) {  // a retried or repeated requeue must not make a second clone
    std::string msg = "job " + j.id + " was already requeued as " + j.requeued_to.front();
    return decision::refuse(
        {error_kind::conflict, "already_requeued", msg, {{"job_id", j.id}, {"requeued_as", j.requeued_to.front()}}, ""});
  }
  create_job clone;
  clone.id = new_id;
  clone.title = j.title;
  clone.input_bundle_path = j.input_bundle_path;
  clone.worker_image_key = j.worker_image_key;
  clone.preferred_clusters = j.preferred_clusters;
  clone.comment = j.comment;
  clone.max_attempts = j.max_attempts;
  clone.requeued_from = j.id;
  // The clone resumes from the old job's checkpoint: the path is absolute, not derived from the new id.
  clone.latest_checkpoint_manifest_path = j.latest_checkpoint_manifest_path;
  clone.last_checkpoint_at = j.last_checkpoint_at;
  clone.user = j.user;
  clone.account = j.account;
  clone.partition = j.partition;
  clone.qos = j.qos;
  clone.nice = j.nice;
  clone.gpu_count = j.gpu_count;
  clone.time_limit_seconds = j.time_limit_seconds;
  clone.checkpoints = j.checkpoints;
  clone.requeue = j.requeue;
  clone.interactive = j.interactive;
  clone.conformance = j.conformance;
  clone.checkpoint_seconds = j.checkpoint_seconds;
  clone.depends_on = j.depends_on;
  auto d = decide_create(nullptr, clone, now);
  d.events.insert(d.events.begin(), {job_stream(j.id), ev::job_requeued_as{new_id}});
  return d;
}

static domain_error not_queued(const job& j, const char* what) {
  return {error_kind::conflict,
          "job_not_queued",
          std::string("only a queued job can be ") + what,
          {{"job_id", j.id}, {"current_status", to_string(j.status)}},
          ""};
}

decision decide_hold(const job& j, bool by_admin, time_us now) {
  if (j.status != job_status::queued) return decision::refuse(not_queued(j, "held"));
  if (j.held && (j.admin_hold || !by_admin)) return {};  // already held as firmly: nothing changes
  return emit(j, ev::job_held{by_admin});
}

decision decide_release(const job& j, bool by_admin, time_us now) {
  if (j.status != job_status::queued) return decision::refuse(not_queued(j, "released"));
  if (!j.held) return {};
  if (j.admin_hold && !by_admin)
    return decision::refuse(
        {error_kind::forbidden, "admin_hold", "an admin held this job; only an admin releases it", {{"job_id", j.id}}, ""});
  return emit(j, ev::job_released{});
}

time_us accrued_at(const job& j, time_us at) {
  return j.accrued_us + (j.eligible_since && at > *j.eligible_since ? at - *j.eligible_since : 0);
}

decision decide_prune(const job& j, time_us now) {
  if (!is_terminal(j.status)) return decision::refuse(conflict(j, j.status));
  if (j.pruned) return {};
  // The queue's last word on it, which its own stream cannot tell: a pruned job is read back
  // from its stream alone (the world keeps only a stub), and reads as it was.
  return emit(j, ev::job_pruned{j.priority, j.priority_tier});
}

bool preemptible_state(const job& j) {
  return (j.status == job_status::assigned || j.status == job_status::running) && j.preempted_by.empty();
}

decision decide_preempt(const job& j, const std::string& by, const std::string& mode, time_us grace_until, time_us now) {
  if (!preemptible_state(j))
    return decision::refuse(conflict(j, mode == "cancel" ? job_status::cancelling : job_status::handoff));
  return emit(j, ev::job_preempted{by, util::format_time_us(grace_until), mode, j.assigned_worker_id});
}

void evolve(job& j, const std::string& type, const json& p, time_us at) { evolve(j, ev::from_json(type, p), at); }

double runtime_seconds(const job& j, time_us now) {
  time_us total = 0;
  for (const auto& s : j.segments) total += std::max<time_us>(0, s.ended_at.value_or(now) - s.started_at);
  return static_cast<double>(total) / 1e6;
}

void json_fields::time(std::string_view k, time_us t) { text(k, util::format_time_us(t)); }

void json_fields::texts(std::string_view k, const std::vector<std::string>& v) {
  key(k);
  out_ += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out_ += ',';
    events::append_json_string(out_, v[i], events::invalid_utf8::replace);
  }
  out_ += ']';
}

void append_job_fields(json_fields& f, const job& j, time_us now) {
  const double runtime = runtime_seconds(j, now);
  std::optional<double> etc, ett;
  if ((j.status == job_status::assigned || j.status == job_status::running) && j.progress && *j.progress > 0 && *j.progress < 1) {
    etc = runtime / *j.progress - runtime;
    ett = runtime + *etc;
  }
  f.text("id", j.id);
  f.text("title", j.title);
  f.text("status", to_string(j.status));
  f.text("input_bundle_path", j.input_bundle_path);
  f.text("worker_image_key", j.worker_image_key);
  f.texts("preferred_clusters", j.preferred_clusters);
  f.text_or_null("comment", j.comment);
  f.time_or_null("assigned_at", j.assigned_at);
  f.time_or_null("started_at", j.started_at);
  f.time("status_changed_at", j.status_changed_at);
  f.time("created_at", j.created_at);
  f.time("updated_at", j.updated_at);
  f.text_or_null("latest_checkpoint_manifest_path", j.latest_checkpoint_manifest_path);
  f.text_or_null("latest_failure_artifact_path", j.latest_failure_artifact_path);
  f.time_or_null("cancellation_requested_at", j.cancellation_requested_at);
  f.time_or_null("last_checkpoint_at", j.last_checkpoint_at);
  f.number_or_null("progress", j.progress);
  f.number("runtime_seconds", runtime);
  f.number_or_null("etc_seconds", etc);
  f.number_or_null("ett_seconds", ett);
  f.value("progress_codes", j.progress_codes);
  f.text_or_null("checkpoint_cycle_status", j.checkpoint_cycle_status);
  f.value("checkpoint_cycle_failures", j.checkpoint_cycle_failures);
  f.text_or_null("assigned_worker_id", j.assigned_worker_id);
  f.integer("attempts", j.attempts);
  f.integer("lost_workers", j.lost_workers);
  f.integer("max_attempts", j.max_attempts);
  f.text_or_null("failure_reason", j.failure_reason);
  f.text_or_null("requeued_from", j.requeued_from);
  f.texts("requeued_to", j.requeued_to);
  f.text_or_null("user", j.user);
  f.text_or_null("account", j.account);
  f.text_or_null("partition", j.partition);
  f.text_or_null("qos", j.qos);
  f.integer("nice", j.nice);
  f.integer("gpu_count", j.gpu_count);
  f.integer_or_null("time_limit_seconds", j.time_limit_seconds);
  f.boolean("checkpoints", j.checkpoints);
  f.boolean("requeue", j.requeue);
  f.boolean("interactive", j.interactive);
  f.text_or_null("conformance", j.conformance);
  f.number_or_null("checkpoint_seconds", j.checkpoint_seconds);
  f.text_or_null("preempted_by", j.preempted_by);
  f.text_or_null("preempt_mode", j.preempt_mode);
  if (j.preempt_grace_until)
    f.time("preempt_grace_until", j.preempt_grace_until);
  else
    f.null("preempt_grace_until");
  f.integer("preemptions", j.preemptions);
  f.boolean("held", j.held);
  f.boolean("admin_hold", j.admin_hold);
  f.integer("priority", j.priority);
  f.integer("priority_tier", j.priority_tier);
  f.value("depends_on", to_json(j.depends_on));  // (the dependency records' one shape)
}

json to_json(const job& j, time_us now) {
  std::string text = "{";
  json_fields f(text);
  append_job_fields(f, j, now);
  f.null("queue_blocked_reason");
  text += '}';
  return json::parse(text);
}

}  // namespace baton::core
