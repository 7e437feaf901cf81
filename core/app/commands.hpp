#pragma once
// Every command the scheduler decides, as a typed value: what the HTTP layer builds from a
// validated request, what the cluster and Salad actors send, what tests and replay call
// core::decide() with. No JSON bags: each field is named and typed here. Optional fields
// are left empty when the request left them out; decide() applies the configured default.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/access/access.hpp"
#include "core/provisioning/cloud.hpp"
#include "core/access/command_kind.hpp"
#include "core/jobs/job.hpp"
#include "core/access/pilot_token.hpp"
#include "core/provisioning/provisioning.hpp"
#include "core/storage/storage.hpp"
#include "core/workers/worker.hpp"
#include "events/event_filter.hpp"

namespace baton::core::commands {

// --- jobs, operator side ---
struct create_job {
  std::string id;  // chosen by the caller, or a fresh UUID from the shell
  std::string title, input_bundle_path;
  std::optional<std::string> worker_image_key;  // default: jobs.default_worker_image
  std::vector<std::string> preferred_clusters;  // trimmed, de-duplicated, first-seen order
  std::string comment;
  std::optional<uint32_t> max_attempts;  // default: jobs.max_attempts
  // Who goes first (all optional; empty means the policy's default). The user is the caller's
  // name unless an admin submits for someone; the account the user's first in the tree, else
  // scheduling.default_account.
  std::optional<std::string> user, account, partition, qos;
  int64_t nice = 0;
  uint32_t gpu_count = 1;
  std::optional<int64_t> time_limit_seconds;
  bool checkpoints = true;   // false: may only start where its whole time limit fits
  bool requeue = true;       // false: a preemption cancels it instead of requeueing it (Slurm's --no-requeue)
  bool interactive = false;  // an interactive session: a preemption cancels it (nobody can resume it)
  std::string conformance;   // run only on workers of this fingerprint (core/workers/worker.hpp); "" any
  bool hold = false;
  // DAGs: wait for these jobs (conditions default to afterok); repeats collapse in the core.
  std::vector<dependency> depends_on;
  std::optional<blob_ref> input_bundle;  // a stored bundle instead of input_bundle_path (docs/storage.md)
  // A job array's task: set by the shell when it expands POST /jobs/batch's "array", never
  // read from a job's body (no one joins another's array).
  std::string array_id;
  uint32_t array_index = 0;
};
// POST /jobs/batch: many jobs, all or none, in one decision and so one durable commit. A
// job may depend on one before it in the batch. At most max_batch_jobs.
struct create_jobs {
  std::vector<create_job> jobs;
  std::string array_id;  // "" unless the batch is one job array's tasks
};
inline constexpr size_t max_batch_jobs = 10'000;
// GET /summary: the dashboard's overview in one call (jobs by status the caller may see,
// workers by state and cluster).
struct summary {};
// GET /stats/minutes: assignments and queue depth per minute from `since` on
// (projections/minute_stats.hpp answers it; the scheduler never sees it).
struct minute_stats {
  int64_t since_us = 0;  // 0: the projection's whole window
};
struct get_job {
  std::string id;
};
struct list_jobs {
  std::set<std::string> statuses;           // empty: any
  std::string worker_id, worker_image_key;  // empty: any
  bool include_pruned = false;
  size_t limit = 500, offset = 0;
  std::string array_id;  // a job array's tasks only, by index; "" any
};
struct cancel_job {
  std::string id;
  bool force = false;
};
struct requeue_job {
  std::string id, new_id;
};
// ended and unchanged that long
struct prune_jobs {
  std::set<std::string> statuses;
  int64_t older_than_seconds = 30 * 86'400;
};
// answered by a read model, never by the scheduler
struct job_history {
  std::string id;
};

// --- workers ---
struct register_worker {
  std::string new_id;  // fresh UUID chosen by the shell (unless a placeholder is adopted)
  platform kind = platform::hpc;
  std::string gpu_model;
  int gpu_count = 1;
  double vram_gb = 0;
  std::optional<std::string> worker_image_key;
  std::string provider_id;
  std::string credential_sha256;              // of the token handed out (the token itself is never kept)
  std::optional<time_us> allocation_ends_at;  // when the worker's allocation ends, if it knows
  std::string driver_version;                 // "" when the worker did not say
};
struct heartbeat {
  std::string worker_id;
  std::optional<std::string> job_id;
  std::optional<double> progress;
  std::optional<nlohmann::json> progress_codes;
};
struct deregister {
  std::string worker_id;
};
struct request_job {
  std::string worker_id;
};
struct list_workers {
  std::set<std::string> states;  // empty: every state but gone
  std::string worker_image_key, cluster;
  size_t limit = 500, offset = 0;
};

// --- a worker's reports on the job it holds ---
struct job_control {
  std::string id;
};
struct start_job {
  std::string id;
};
struct checkpoint_job {
  std::string id;
  checkpoint_report report;
};
struct handoff_start {
  std::string id;
  std::string reason;
  nlohmann::json progress_codes = nlohmann::json::array();
  std::optional<double> progress, deadline_epoch_seconds;
  std::optional<std::string> message;
};
struct handoff_complete {
  std::string id;
  checkpoint_report report;
};
struct complete_job {
  std::string id;
};
struct fail_job {
  std::string id;
  std::optional<std::string> reason, detail, failure_artifact_path;
};

// --- clusters, configuration, health ---
struct list_clusters {};
struct set_cluster_enabled {
  std::string cluster;
  bool enabled = true;
  std::string reason;
};
struct set_clusters_enabled {
  std::map<std::string, bool> enabled;
  std::string reason;
};
struct list_worker_images {};
struct health_warnings {};

// --- from a cluster actor (its cluster's name in each) ---
struct cluster_placeholders {
  std::string cluster;
};
struct placeholders_checked {
  std::string cluster;
  std::vector<std::string> checked;
  std::set<std::string> alive;
};
struct stale_allocations_checked {
  std::string cluster;
  std::vector<std::string> checked;
  std::set<std::string> alive;
};
struct cluster_plan {
  std::string cluster;
};
struct placeholder_submitted {
  std::string cluster, worker_id, image, slurm_id;
  std::optional<ev::placeholder_plan_record> plan_record;  // the plan's inputs, recorded with the placeholder
  std::string registration_sha256;                         // of the one-time credential its pilot registers with ("" none)
};
struct submission_failed {
  std::string cluster, image, stage, stderr_text, target;
  int exit_code = 0;
};

// --- from the Salad autoscaler ---
struct salad_status {};
struct salad_target {};
struct salad_scaled {
  int current = 0;
  replica_target target;
};
struct salad_failed {
  std::string stage, message;
};

// --- who goes first ---
struct hold_job {
  std::string id;
};
struct release_job {
  std::string id;
};
// sprio -j
struct job_priority {
  std::string id;
};
// sprio: the queued jobs in evaluation order; limit 0 is all of them (the CLI's sprio), else a
// page of at most `limit` from `offset` (the dashboard's queue page with 10,000 jobs waiting).
struct list_priorities {
  size_t limit = 0, offset = 0;
};
struct fairshare {};               // sshare -l
struct recalculate_priorities {};  // the periodic loop (or an operator, now)
struct plan_now {};                // the planning cycle, now (an operator; the loop runs it periodically)

// --- named operators ---
struct create_operator {
  std::string name;
  bool admin = false;                 // role admin, else user
  std::vector<std::string> accounts;  // the accounts they may charge (empty: those that list them)
  std::string token_sha256;           // of the token handed out once (the token itself is never kept)
};
struct revoke_operator {
  std::string name;
};
struct list_operators {};

// --- credential rotation (core/access/credential.hpp): the old token is accepted until now + grace ---
struct rotate_operator_token {
  std::string name;
  std::string token_sha256;  // of the new token, handed out once
  int64_t grace_seconds = 3600;
};
struct rotate_worker_credential {
  std::string worker_id;
  std::string credential_sha256;  // of the new token, handed out once
  int64_t grace_seconds = 300;
};
struct rotate_pilot_token {
  std::string token_sha256;  // of the new token, handed out once
  int64_t grace_seconds = 3600;
  pilot_configured configured;  // the configured token batond started with (core/access/pilot_token.hpp)
};

// GET /audit/export: the log's events with their hashes (replay/audit/audit_export.hpp). Answered
// from the log by the HTTP layer once the caller is settled; the scheduler never sees it.
struct audit_export {
  events::event_filter filter;
  bool csv = false;  // else JSON lines
};

// GET /metrics: jobs by status and workers by state and cluster, for Prometheus.
struct metrics {};

// GET /events/stream: the events the caller may see, as they are appended (projections/live_feed.hpp).
struct event_stream {
  uint64_t after = 0;  // Last-Event-ID: resume after this sequence (0 = from now)
};

// --- the data plane (core/app/storage_decide.hpp) ---
// an operator's bundle: held already, or an upload (within the quota)
struct blob_upload {
  blob_ref blob;
};
// that upload arrived and verified: stored, held for the uploader
struct blob_uploaded {
  blob_ref blob;
};
// A worker's file set (checkpoint or outputs): which files the job does not hold yet.
struct files_begin {
  std::string job_id, kind;
  uint32_t attempt = 0;
  std::vector<stored_file> files;
};
// The set's files are stored (`verified`: the blobs this commit's uploads stored, as the shell
// checked them): record the set, keep the last checkpoints.
struct files_commit {
  std::string job_id, set_id, kind;
  uint32_t attempt = 0;
  std::vector<stored_file> files;
  std::vector<blob_ref> verified;
  checkpoint_report report;
};
// GET /jobs/{id}/files
struct job_files {
  std::string job_id;
};
// the collector: blobs nothing holds, marked for removal
struct storage_collect {
  size_t max = 256;
};
struct storage_removed {
  std::vector<std::string> sha256s;
};
struct blob_corrupt {
  std::string sha256, found;
};

}  // namespace baton::core::commands

namespace baton::core {

using command = std::variant<
    commands::create_job, commands::get_job, commands::list_jobs, commands::cancel_job, commands::requeue_job,
    commands::prune_jobs, commands::job_control, commands::job_history, commands::register_worker, commands::heartbeat,
    commands::deregister, commands::request_job, commands::list_workers, commands::start_job, commands::checkpoint_job,
    commands::handoff_start, commands::handoff_complete, commands::complete_job, commands::fail_job, commands::list_clusters,
    commands::set_cluster_enabled, commands::set_clusters_enabled, commands::list_worker_images, commands::health_warnings,
    commands::cluster_placeholders, commands::placeholders_checked, commands::cluster_plan, commands::placeholder_submitted,
    commands::submission_failed, commands::stale_allocations_checked, commands::salad_status, commands::salad_target,
    commands::salad_scaled, commands::salad_failed, commands::hold_job, commands::release_job, commands::job_priority,
    commands::list_priorities, commands::fairshare, commands::recalculate_priorities, commands::create_operator,
    commands::revoke_operator, commands::list_operators, commands::plan_now, commands::audit_export, commands::metrics,
    commands::event_stream, commands::rotate_operator_token, commands::rotate_worker_credential, commands::rotate_pilot_token,
    commands::blob_upload, commands::blob_uploaded, commands::files_begin, commands::files_commit, commands::job_files,
    commands::storage_collect, commands::storage_removed, commands::blob_corrupt, commands::create_jobs, commands::summary,
    commands::minute_stats>;

// The alternatives above are in command_kind's order, so a command's kind is its index.
inline command_kind kind_of(const command& c) { return static_cast<command_kind>(c.index()); }

// The kind of a command type, at compile time.
template <class Cmd>
constexpr command_kind kind_of_v = static_cast<command_kind>(ev::detail::index_in<Cmd, command>::value);

// What authorize() needs besides the kind: the worker a worker_self command names, or the
// operator an operator_self command names.
std::string named_target(const command& c);

// A request's body that did not validate (field and why), carried to decide() so that a
// worker's access to the job is checked before the body is judged (see core/access/access.hpp).
struct invalid_field_report {
  std::string field, message;
  nlohmann::json details;  // the reply body the HTTP layer built for it
  bool too_large = false;  // the body past its size limit (413), else a field (422)
};
// Its refusal, once the caller's access is settled.
inline domain_error invalid_body(const invalid_field_report& r) {
  return {r.too_large ? error_kind::too_large : error_kind::invalid, "validation_error", r.field + ": " + r.message, r.details,
          r.field};
}

// A command with who sent it and how it is recorded.
struct envelope {
  principal caller;
  std::string actor;       // the log's actor: "worker:<id>", "operator:<name>", "pilot", "loop:<name>"
  std::string request_id;  // correlation id
  command cmd;
  std::optional<invalid_field_report> invalid;
};

}  // namespace baton::core
