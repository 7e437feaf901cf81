#pragma once
// A job's state and its lifecycle: decide (command -> events | error) and evolve
// (state + event -> state). The transition table is RelayMD's (§2.1 of the reference),
// with its gaps closed: handoff is recoverable, requeues keep the checkpoint, attempts are
// capped, and every cause of a requeue has its own event type.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/jobs/dependency.hpp"
#include "core/events/domain.hpp"

namespace baton::core {

enum class job_status : uint8_t { queued, assigned, running, handoff, cancelling, completed, failed, cancelled };

const char* to_string(job_status s);
std::optional<job_status> job_status_from(const std::string& s);
bool is_terminal(job_status s);
bool transition_allowed(job_status from, job_status to);
// Holds a worker: assigned, running, handoff or cancelling (RelayMD forgot handoff).
bool occupies_worker(job_status s);

struct runtime_segment {
  std::string worker_id;
  time_us started_at = 0;  // assignment, then the payload's start once it started
  std::optional<time_us> ended_at;
  bool started = false;  // the payload started (job.started): only then is usage charged, as Slurm's
};

struct association_usage;
// Where the figures of a group of jobs (account, user, QOS) live in a world: its association's
// usage, its QOS/user group's running count and queued jobs, its user's active count. One per
// group, in world::group_slots, found once by core/world/world.cpp's slots_of().
struct job_group_slots {
  association_usage* usage = nullptr;
  const std::string* association = nullptr;  // "account/user", the key of `usage` in the world
  uint32_t* running_in_qos = nullptr;
  std::map<std::pair<time_us, std::string_view>, struct job*>* queued_in_qos = nullptr;
  uint32_t* active_of_user = nullptr;
};

// A job's group in the world that holds it, set after job.created set the job's qos, user and
// account (they never change), so applying an event builds and looks up no group key. One
// pointer, not the group's five: a quarter of a million jobs are a replay's largest memory.
// Not state: never encoded, and a copied or moved job starts without it (it is not the job
// its world holds); only the world that holds the job sets it.
struct job_group_ref {
  job_group_slots* group = nullptr;

  job_group_ref() = default;
  job_group_ref(const job_group_ref&) noexcept {}
  job_group_ref& operator=(const job_group_ref&) noexcept {
    group = nullptr;
    return *this;
  }
};

// Every member has a default initializer (or a constructor): the job table builds jobs
// default-initialised, without zeroing them first (core/memory/job_table.hpp).
struct job {
  std::string id;
  std::string title;
  std::string input_bundle_path;
  std::string worker_image_key;
  std::vector<std::string> preferred_clusters;
  std::string comment;
  job_status status = job_status::queued;
  // (Small fields of other groups below, kept here where the padding after `status` had room:
  // so the struct came to 960 bytes, 15 cache lines, the job table's place for it rather than
  // 17, core/memory/job_pool.hpp; a replay holds a quarter of a million jobs.)
  bool pruned = false;
  bool held = false;        // by an operator: waits with reason JobHeld
  bool admin_hold = false;  // held by an admin: only an admin releases it
  time_us created_at = 0, updated_at = 0, status_changed_at = 0;
  std::optional<time_us> assigned_at, started_at, cancellation_requested_at, last_checkpoint_at;
  std::string latest_checkpoint_manifest_path;
  std::string latest_failure_artifact_path;
  std::optional<double> progress;
  // (Built by type: array() goes through an initializer list, and braces, {value_t::array},
  // would make the array [[]].)
  nlohmann::json progress_codes = nlohmann::json(nlohmann::json::value_t::array);
  std::string checkpoint_cycle_status;
  nlohmann::json checkpoint_cycle_failures = nlohmann::json(nlohmann::json::value_t::array);
  // How long its last checkpoint took to write, as its worker measured it (Lattice f8); kept
  // by requeue clones.
  std::optional<double> checkpoint_seconds;
  std::string assigned_worker_id;
  uint32_t attempts = 0;      // assignments so far (planned handoffs and give-backs included)
  uint32_t lost_workers = 0;  // assignments that ended with the worker reaped or vanished
  uint32_t max_attempts = 5;  // the loss that makes lost_workers reach it fails the job instead
  std::string failure_reason;
  std::string requeued_from;             // job this one was cloned from
  std::vector<std::string> requeued_to;  // clones made from this one
  std::vector<runtime_segment> segments;
  // Who goes first (core/world/priority.hpp). Defaults keep RelayMD clients working unchanged.
  std::string user, account, partition, qos;  // set at creation (the policy's defaults when absent)
  int64_t nice = 0;
  uint32_t gpu_count = 1;                     // a worker must have at least this many
  std::optional<int64_t> time_limit_seconds;  // the run-time estimate (backfill)
  // It checkpoints and can be handed on before its worker's allocation ends, so it may start
  // on a worker with less time left than its limit (core/planning/deadline.hpp).
  bool checkpoints = true;
  // Preemption (core/world/preemption.hpp): a victim that may be requeued goes back to the queue and
  // resumes from its checkpoint; one that may not (requeue false, or interactive: nobody can
  // resume a session) is cancelled, as Palmetto does.
  bool requeue = true;
  bool interactive = false;
  // The conformance fingerprint (core/workers/worker.hpp's fingerprint_of) every worker that carries
  // it must have: asked for at submission, or pinned by its first assignment under
  // lattice:sensitive (Lattice's hard conformance filter). "" any worker.
  std::string conformance;
  // (Held by an operator or an admin: `held` and `admin_hold`, after `status` above.)
  // Age accrual (Slurm's accrue time): time spent eligible in the queue, held or blocked
  // periods excluded. Kept by the world, which knows what makes a job eligible.
  time_us accrued_us = 0;
  std::optional<time_us> eligible_since;
  int64_t priority = 0;    // from the last recalculation (or creation); the queue's order
  int priority_tier = 0;   // the partition's tier, considered before priority
  bool preemptor = false;  // its partition or QOS may preempt others: considered before every other job
  // DAGs (core/world/dag.hpp): the jobs this one waits for, and whether they hold it back now
  // (kept by the world, which sees the parents; a blocked job is not eligible).
  std::vector<dependency> depends_on;
  bool blocked = false;
  // Its user already runs the QOS's max_running_per_user jobs in its QOS (kept by the world;
  // such a job is not eligible and accrues no age).
  bool over_limit = false;
  // A preemption in progress (job.preempted until the job leaves its worker): who preempts
  // it, how ("requeue" or "cancel") and when batond takes the worker back.
  std::string preempted_by, preempt_mode;
  time_us preempt_grace_until = 0;
  uint32_t preemptions = 0;  // times it was preempted
  job_group_ref slots;       // see job_group_ref
};

// Time the job has accrued as eligible up to `at`.
time_us accrued_at(const job& j, time_us at);

std::string job_stream(const std::string& id);

// A job array's task (create_job::array_id): which array, and its index there.
struct array_task {
  std::string array_id;
  uint32_t index = 0;
};

// --- commands -------------------------------------------------------------------------
struct create_job {
  std::string id, title, input_bundle_path, worker_image_key, comment;
  std::vector<std::string> preferred_clusters;
  uint32_t max_attempts = 5;
  std::string requeued_from;                    // set for requeue clones
  std::string latest_checkpoint_manifest_path;  // carried over by requeue clones
  std::optional<time_us> last_checkpoint_at;
  std::string user, account, partition, qos;
  int64_t nice = 0;
  uint32_t gpu_count = 1;
  std::optional<int64_t> time_limit_seconds;
  bool checkpoints = true;
  bool requeue = true;
  bool interactive = false;
  std::string conformance;
  std::optional<double> checkpoint_seconds;  // carried over by requeue clones
  bool hold = false;
  std::vector<dependency> depends_on;  // checked by the caller (core/world/dag.hpp); kept by requeue clones
  // A task of a job array (POST /jobs/batch's "array"): the array's id and the task's index
  // (BATON_ARRAY_INDEX in its payload). Kept by the world beside the job (world::array_of_job),
  // not in it: most jobs are no array's, and a replay holds a quarter of a million.
  std::string array_id;
  uint32_t array_index = 0;
};

// Optional fields a worker may send with checkpoint / handoff-complete reports.
struct checkpoint_report {
  std::optional<std::string> manifest_path;
  std::optional<double> progress;
  std::optional<nlohmann::json> progress_codes;
  std::optional<std::string> cycle_status;
  std::optional<nlohmann::json> cycle_failures;
  std::optional<double> seconds;  // how long writing this checkpoint took, as the worker measured it
};

// Why a job lost its worker; each has its own event type.
enum class loss_cause { deregistered, reaped, orphaned, preempted };
const char* to_string(loss_cause c);

// The attempt number the job's next assignment gets: its job.assigned event and the poll's
// answer, and the count an older job.assigned without one implies.
inline uint32_t next_attempt(const job& j) { return j.attempts + 1; }

// Whether the loss counts against the job's max_attempts: a reaped or vanished worker does,
// a worker that deregistered (gave the job back on purpose) or was taken back for a
// preemptor does not.
bool counts_as_lost(loss_cause c);

decision decide_create(const job* existing, const create_job& c, time_us now);
// 409s: the id is taken (by a job, pruned or not); the job was pruned (any change to it).
domain_error job_exists(const std::string& id);
domain_error job_pruned(const std::string& id, job_status status);
// A poll's assignment, with the decision's record.
decision decide_assign(const job& j, const std::string& worker_id, assignment_record decision_record, time_us now);
// Worker reports on a job. Who may send them is core/access/access.hpp's authorize_job().
decision decide_start(const job& j, time_us now);
decision decide_checkpoint(const job& j, const checkpoint_report& r, time_us now);
// (details: what the worker said; the worker's id is filled in)
decision decide_handoff_start(const job& j, ev::job_handoff_started details, time_us now);
decision decide_handoff_complete(const job& j, const checkpoint_report& r, time_us now);
decision decide_complete(const job& j, time_us now);
decision decide_fail(const job& j, ev::job_failed details, time_us now);
decision decide_progress(const job& j, const std::string& worker_id, std::optional<double> progress,
                         const std::optional<nlohmann::json>& codes, time_us now);
decision decide_cancel(const job& j, bool force, time_us now);
// The worker holding a cancelling job polled again, deregistered or was lost.
decision decide_finish_cancel(const job& j, time_us now);
// The job's worker is gone: back to the queue (keeping the checkpoint), failed when out of
// attempts, cancelled if it was cancelling.
decision decide_worker_lost(const job& j, loss_cause cause, time_us now);
// Operator requeue of a terminal job: events for the old job and the new clone.
decision decide_requeue(const job& j, const std::string& new_id, time_us now);
decision decide_prune(const job& j, time_us now);
// Tells the job's worker to make room for `by` (core/world/preemption.hpp decides who): "requeue"
// (hand off with a checkpoint, then queued) or "cancel"; it has until grace_until.
decision decide_preempt(const job& j, const std::string& by, const std::string& mode, time_us grace_until, time_us now);
// The job may be a preemption victim now: it holds a worker, is not already leaving it.
bool preemptible_state(const job& j);
// Operator hold and release (Slurm's scontrol hold / release): only a queued job.
// An admin's hold can be released only by an admin (Slurm's admin hold); a user's by either.
decision decide_hold(const job& j, bool by_admin, time_us now);
decision decide_release(const job& j, bool by_admin, time_us now);

// Applies one job event: a visit of its typed payload (core/jobs/job_events.cpp). Another
// stream's event, or a type this build does not know, changes nothing but the job's updated_at
// (forward compatibility). The rvalue form moves the payload's strings into the job; the const
// one copies only what it reads; the JSON one reads the payload as its struct first (throws
// events::payload_error naming a field that does not read, the job unchanged).
void evolve(job& j, ev::payload&& payload, time_us at);
void evolve(job& j, const ev::payload& payload, time_us at);
void evolve(job& j, const std::string& type, const nlohmann::json& payload, time_us at);

// RelayMD's JobRead shape plus baton's fields, runtime figures computed at `now`.
nlohmann::json to_json(const job& j, time_us now);
double runtime_seconds(const job& j, time_us now);

}  // namespace baton::core
