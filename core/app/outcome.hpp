#pragma once
// What decide() answers: the events to append and a typed result, or a domain error. No
// HTTP statuses and no reply bodies here: http/ shapes results and errors for RelayMD's
// clients, the cluster and Salad actors read the typed results directly.
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/provisioning/cloud.hpp"
#include "core/events/domain.hpp"
#include "core/jobs/job.hpp"
#include "core/world/priority.hpp"
#include "core/provisioning/provisioning.hpp"
#include "core/storage/storage.hpp"
#include "core/workers/worker.hpp"

namespace baton::core::results {

struct job_row {
  job j;
  std::string queue_blocked_reason;         // "" when nothing blocks it
  std::string pending_reason;               // queued jobs: Priority, Resources, JobHeld, ... ("" otherwise)
  std::string pending_detail;               // PartitionConfig: why no site could ever run it (core::cannot_run_reason)
  std::optional<planned_slot> reservation;  // where and when the last plan expects it to start
  // A pruned job: j holds only what the world keeps of it (core/world/world.hpp's pruned_job); the
  // HTTP layer replaces it with the job read from its stream before answering.
  bool archived = false;
  std::optional<array_task> array;
};
struct job_page {
  std::vector<job_row> items;
  size_t total = 0, offset = 0, limit = 0;
};
struct worker_row {
  worker w;
  std::string state;  // idle, busy, stale, provisioning, gone
  std::optional<time_us> last_heartbeat;
  std::optional<std::string> job_id;  // none also for a job the caller may not see
  int64_t score = 0;
  bool provider_hidden = false;  // a user's view of a worker not running their job (decide.cpp's list_workers)
};
struct worker_page {
  std::vector<worker_row> items;
  size_t total = 0, offset = 0, limit = 0;
};
struct registered {
  std::string worker_id;
  int heartbeat_interval_seconds = 60;  // what the worker must keep to
  double stale_after_seconds = 120;
};
struct assignment {
  std::string job_id, input_bundle_path, latest_checkpoint_manifest_path;
  uint32_t attempt = 1;
  std::optional<array_task> array;  // a job array's task: BATON_ARRAY_INDEX for its payload
};
// A poll's answer: a job, or why none (no_job_for_this_worker, worker_busy, stale_worker, …).
struct poll_answer {
  std::optional<assignment> assigned;
  std::string no_job_reason;
};
// A preemption the job's worker must act on: hand off ("requeue") or stop ("cancel") by grace_until.
struct preempt_notice {
  std::string job_id, by, mode;
  time_us grace_until = 0;
};
// cancellation_requested: stop the payload (the job is being cancelled, or it no longer
// belongs to the asking worker); preempt: the worker must make room for another job.
struct control {
  std::string job_id;
  job_status status = job_status::queued;
  bool cancellation_requested = false;
  std::optional<preempt_notice> preempt;
};
// A heartbeat's answer when there is something to say (otherwise nothing, as RelayMD's).
struct heartbeat_ack {
  preempt_notice preempt;
};
struct pruned {
  size_t count = 0;
};
struct cluster_row {
  cluster_spec spec;
  bool enabled = true;
  int pending_placeholders = 0, workers = 0;
  nlohmann::json last_submission_failure;  // null when none
};
struct clusters {
  std::vector<cluster_row> items;
};
struct cluster_toggled {
  std::string name;
  bool enabled = true;
};
struct worker_images {
  std::string default_image;
  std::vector<std::string> keys;
};
struct warnings {
  std::vector<std::string> items;
};
struct cluster_watch {
  std::vector<std::string> placeholder_slurm_ids, stale_slurm_ids;
};
struct plans {
  std::vector<submission_plan> items;
};
struct placeholder_made {
  std::string worker_id;
};
// placeholders removed, events written
struct counted {
  size_t count = 0;
};
// sprio's lines: each queued job's priority and its factors, as of the last recalculation.
struct priority_row {
  job j;
  priority_explained explained;
  std::string pending_reason, pending_detail;
};
struct priorities {
  std::string policy;
  time_us calculated_at = 0;
  multifactor_weights weights;
  std::vector<priority_row> items;  // evaluation order
  size_t total = 0;                 // visible queued jobs, the page's or not (list_priorities)
  size_t offset = 0, limit = 0;     // the page asked for (limit 0: all)
};
// sshare -l: the tree now, and what the last recalculation recorded for each association.
struct fairshare {
  std::string policy;
  time_us calculated_at = 0;
  std::vector<fair_share_row> rows;
  std::map<std::string, priority_state::share> recorded;
};
// token hashes never leave the core in a reply
struct operators {
  std::vector<operator_account> items;
};
struct rotated {                     // a credential rotation: the HTTP layer adds the new token, made there
  std::string name;                  // the operator or worker
  time_us previous_valid_until = 0;  // the old token is accepted until then
};
struct salad_view {
  nlohmann::json last;  // last scaling and last failure, as recorded
  std::string worker_image_key;
  int max_replicas = 0;
  replica_target wanted_now;
};

// GET /metrics: what the scheduler counts (the HTTP layer adds the log's and projections' figures).
struct metrics {
  std::map<std::string, uint64_t> jobs;                                 // status -> jobs (pruned ones left out)
  std::map<std::pair<std::string, std::string>, uint64_t> workers;      // (state, cluster) -> workers
  uint64_t eligible_queued = 0;                                         // queued, not held or blocked
  uint64_t pruned = 0;                                                  // pruned jobs (stubs)
  uint64_t stored_blobs = 0, stored_bytes = 0, unreferenced_blobs = 0;  // the storage book (core/storage/storage.hpp)
  std::map<std::string, uint64_t> storage_used_by_user;                 // bytes each user holds
  uint64_t storage_quota_bytes = 0;                                     // storage.user_quota_bytes (0: none)
};

// The data plane (core/app/storage_decide.hpp). Which blobs of a request the caller must send
// (the others its user holds already); `refused` when the quota has no room (its event is
// recorded all the same, so the answer is a result, not an error).
struct storage_plan {
  std::string user;  // whose quota (and whose upload ids)
  std::vector<blob_ref> to_upload;
  std::optional<domain_error> refused;
};
struct stored {
  blob_ref blob;
  std::string set_id;
};
// GET /jobs/{id}/files: what the caller may read of the job.
struct job_files {
  std::string job_id;
  std::optional<blob_ref> bundle;
  std::vector<file_set> checkpoints;  // oldest first (a worker sees the latest only)
  std::optional<file_set> outputs;
};
struct blobs_to_remove {
  std::vector<blob_ref> items;
};
// POST /jobs/batch: the jobs made, in the batch's order, with the priorities they start with.
struct jobs_created {
  struct item {
    std::string id;
    int64_t priority = 0;
    std::optional<uint32_t> array_index;
    std::string pending_detail;  // no site could ever run it (core::cannot_run_reason): a warning
  };
  std::vector<item> items;
  std::string array_id;
};
// A cancel, hold or release of a whole job array: how many tasks it changed, and how many it
// left as they were, by status (a finished task is not cancelled, a running one not held).
struct array_acted {
  std::string array_id;
  size_t changed = 0;
  std::map<std::string, size_t> unchanged;  // status -> tasks
};

}  // namespace baton::core::results

namespace baton::core {

using result =
    std::variant<std::monostate, results::job_row, results::job_page, results::worker_page, results::registered,
                 results::poll_answer, results::control, results::pruned, results::clusters, results::cluster_toggled,
                 results::worker_images, results::warnings, results::cluster_watch, results::plans, results::placeholder_made,
                 results::counted, results::salad_view, replica_target, results::priorities, results::fairshare,
                 results::operators, results::heartbeat_ack, results::metrics, results::rotated, results::storage_plan,
                 results::stored, results::job_files, results::blobs_to_remove, results::jobs_created, results::array_acted>;

// The answer to one command, as the caller gets it once its events are durable.
struct reply {
  result value;                       // monostate: nothing to say (a 204)
  std::optional<domain_error> error;  // set when refused
  time_us at = 0;                     // decision time: runtime figures in views are computed at it
};

struct outcome {
  std::vector<domain_event> events;
  reply answer;
  bool again = false;  // apply and decide again (a poll that first closed a cancelled job)
  // Answer only once everything decided before is durable, though this decides nothing new:
  // it repeats an earlier decision whose own reply may not have been sent yet.
  bool after_durable = false;
  // POST /plan, allowed: the planning cycle is to run now. It is not run here: the scheduler
  // actor plans on its planner thread, as its periodic cycle, so polls go on meanwhile, and
  // answers with the plan's count of starts (results::counted) once the plan is durable.
  bool plan_requested = false;
};

// The outcomes decide() builds: a refusal; a result with the events to append first.
inline outcome refused(domain_error e, time_us at) {
  outcome o;
  o.answer.error = std::move(e);
  o.answer.at = at;
  return o;
}
inline outcome answered(result value, time_us at, std::vector<domain_event> events = {}) {
  outcome o;
  o.events = std::move(events);
  o.answer.value = std::move(value);
  o.answer.at = at;
  return o;
}

}  // namespace baton::core
