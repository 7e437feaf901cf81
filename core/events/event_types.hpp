#pragma once
// The catalogue of event payloads: one struct per event type, its fields described once
// (events/described.hpp), all of them one std::variant. The description gives the CBOR the
// log stores (byte for byte what the JSON payloads wrote, so every existing log reads and
// compares unchanged), the JSON people read and equality. Each type carries its name and
// its schema version; a payload of a newer version than this build knows is refused by name.
//
// Free-form JSON stays only where a worker's report is kept as it sent it (progress codes,
// checkpoint failures).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/events/assignment_record.hpp"
#include "events/described.hpp"

namespace baton::core::ev {

using core::assigned_payload;

using events::nullable;
using events::omit_if;
using json = nlohmann::json;

#define BATON_EVENT(name_, version_)              \
  static constexpr std::string_view type = name_; \
  static constexpr uint32_t schema = version_;

// --- jobs ---

// One of a job's dependencies (core/jobs/dependency.hpp), as job.created records it.
struct dependency_record {
  std::string condition = "afterok";  // after, afterok, afternotok, afterany
  std::string job_id;
  BATON_DESCRIBE(condition, job_id)
};

struct job_created {
  BATON_EVENT("job.created", 1)
  std::string account;
  std::string array_id;
  uint32_t array_index = 0;
  std::optional<double> checkpoint_seconds;
  bool checkpoints = true;  // absent: true (older logs too)
  std::string comment;
  std::string conformance;
  std::vector<dependency_record> depends_on;  // absent when none
  uint32_t gpu_count = 1;
  bool hold = false;
  std::string input_bundle_path;
  bool interactive = false;
  std::optional<int64_t> last_checkpoint_at_us;
  std::string latest_checkpoint_manifest_path;
  uint32_t max_attempts = 5;
  int64_t nice = 0;
  std::string partition;
  std::vector<std::string> preferred_clusters;
  std::string qos;
  bool requeue = true;
  std::string requeued_from;
  std::optional<int64_t> time_limit_seconds;
  std::string title;
  std::string user;
  std::string worker_image_key;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("account", x.account);
    f("array_id", x.array_id, omit_if{x.array_id.empty()});
    f("array_index", x.array_index, omit_if{x.array_id.empty()});
    f("checkpoint_seconds", x.checkpoint_seconds);
    f("checkpoints", x.checkpoints, omit_if{x.checkpoints});
    f("comment", x.comment);
    f("conformance", x.conformance, omit_if{x.conformance.empty()});
    f("depends_on", x.depends_on, omit_if{x.depends_on.empty()});
    f("gpu_count", x.gpu_count, omit_if{x.gpu_count == 1});
    f("hold", x.hold, omit_if{!x.hold});
    f("input_bundle_path", x.input_bundle_path);
    f("interactive", x.interactive, omit_if{!x.interactive});
    f("last_checkpoint_at_us", x.last_checkpoint_at_us);
    f("latest_checkpoint_manifest_path", x.latest_checkpoint_manifest_path, omit_if{x.latest_checkpoint_manifest_path.empty()});
    f("max_attempts", x.max_attempts);
    f("nice", x.nice, omit_if{x.nice == 0});
    f("partition", x.partition);
    f("preferred_clusters", x.preferred_clusters);
    f("qos", x.qos);
    f("requeue", x.requeue, omit_if{x.requeue});
    f("requeued_from", x.requeued_from, omit_if{x.requeued_from.empty()});
    f("time_limit_seconds", x.time_limit_seconds);
    f("title", x.title);
    f("user", x.user);
    f("worker_image_key", x.worker_image_key);
  }
};

using job_assigned = assigned_payload;  // core/events/assignment_record.hpp

// job.started, job.completed: the worker that held it.
template <const char* Name>
struct job_worker_event {
  BATON_EVENT(Name, 1)
  std::string worker_id;
  BATON_DESCRIBE(worker_id)
};
inline constexpr char job_started_name[] = "job.started";
inline constexpr char job_completed_name[] = "job.completed";
using job_started = job_worker_event<job_started_name>;
using job_completed = job_worker_event<job_completed_name>;

// job.checkpointed, job.handoff_completed: what the worker reported (core/jobs/job.hpp's checkpoint_report).
template <const char* Name>
struct job_checkpoint_event {
  BATON_EVENT(Name, 1)
  std::optional<std::string> checkpoint_cycle_status;
  std::optional<json> checkpoint_cycle_failures;
  std::optional<std::string> checkpoint_manifest_path;
  std::optional<double> checkpoint_seconds;
  std::optional<double> progress;
  std::optional<json> progress_codes;
  std::string worker_id;
  BATON_DESCRIBE(checkpoint_cycle_failures, checkpoint_cycle_status, checkpoint_manifest_path, checkpoint_seconds, progress,
                 progress_codes, worker_id)
};
inline constexpr char job_checkpointed_name[] = "job.checkpointed";
inline constexpr char job_handoff_completed_name[] = "job.handoff_completed";
using job_checkpointed = job_checkpoint_event<job_checkpointed_name>;
using job_handoff_completed = job_checkpoint_event<job_handoff_completed_name>;

inline constexpr char job_progress_reported_name[] = "job.progress_reported";
using job_progress_reported = job_checkpoint_event<job_progress_reported_name>;  // (progress and codes only, today)

struct job_handoff_started {
  BATON_EVENT("job.handoff_started", 1)
  std::optional<double> deadline_epoch_seconds;
  std::optional<std::string> message;
  std::optional<double> progress;
  json progress_codes = json::array();
  std::string reason;
  std::string worker_id;
  BATON_DESCRIBE(deadline_epoch_seconds, message, progress, progress_codes, reason, worker_id)
};

struct job_failed {
  BATON_EVENT("job.failed", 1)
  std::optional<std::string> by;     // a preemption's job, when one ended it
  std::optional<std::string> cause;  // the loss that used up its attempts
  std::optional<std::string> detail;
  std::optional<std::string> failure_artifact_path;
  std::string reason;
  std::string worker_id;
  BATON_DESCRIBE(by, cause, detail, failure_artifact_path, reason, worker_id)
};

struct job_cancel_requested {
  BATON_EVENT("job.cancel_requested", 1)
  bool force = false;
  std::string worker_id;
  BATON_DESCRIBE(force, worker_id)
};

struct job_cancelled {
  BATON_EVENT("job.cancelled", 1)
  std::optional<std::string> by;          // the preemptor, when a preemption's grace ended it
  std::optional<std::string> dependency;  // the job whose end means this one can never run
  std::string from_status;
  std::optional<std::string> reason;
  std::optional<std::string> worker_id;
  BATON_DESCRIBE(by, dependency, from_status, reason, worker_id)
};

// The four ways a job goes back to the queue when it loses its worker (a checkpoint's fields
// are read when present, as a handoff's are).
template <const char* Name>
struct job_requeued_event {
  BATON_EVENT(Name, 1)
  std::optional<std::string> by;  // job.requeued_after_preempt of a job not started yet
  std::optional<json> checkpoint_cycle_failures;
  std::optional<std::string> checkpoint_cycle_status;
  std::optional<std::string> checkpoint_manifest_path;
  std::optional<double> checkpoint_seconds;
  std::string from_status;
  std::optional<double> progress;
  std::optional<json> progress_codes;
  std::optional<std::string> reason;
  std::string worker_id;
  BATON_DESCRIBE(by, checkpoint_cycle_failures, checkpoint_cycle_status, checkpoint_manifest_path, checkpoint_seconds,
                 from_status, progress, progress_codes, reason, worker_id)
};
inline constexpr char requeued_after_deregister_name[] = "job.requeued_after_deregister";
inline constexpr char requeued_after_reap_name[] = "job.requeued_after_reap";
inline constexpr char requeued_after_orphan_name[] = "job.requeued_after_orphan";
inline constexpr char requeued_after_preempt_name[] = "job.requeued_after_preempt";
using job_requeued_after_deregister = job_requeued_event<requeued_after_deregister_name>;
using job_requeued_after_reap = job_requeued_event<requeued_after_reap_name>;
using job_requeued_after_orphan = job_requeued_event<requeued_after_orphan_name>;
using job_requeued_after_preempt = job_requeued_event<requeued_after_preempt_name>;

struct job_requeued_as {
  BATON_EVENT("job.requeued_as", 1)
  std::string new_job_id;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("new_job_id", x.new_job_id, events::required);
  }
};

struct job_pruned {
  BATON_EVENT("job.pruned", 1)
  std::optional<int64_t> priority;
  std::optional<int> priority_tier;
  BATON_DESCRIBE(priority, priority_tier)
};

struct job_held {
  BATON_EVENT("job.held", 1)
  bool admin = false;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("admin", x.admin, omit_if{!x.admin});
  }
};

struct job_released {
  BATON_EVENT("job.released", 1)
  template <class S, class F>
  static void describe(S&, F&&) {}
};

struct job_preempted {
  BATON_EVENT("job.preempted", 1)
  std::string by;
  std::string grace_until;  // RFC 3339
  std::string mode;         // "requeue" or "cancel"
  std::string worker_id;
  BATON_DESCRIBE(by, grace_until, mode, worker_id)
};

// --- workers ---

// worker.registered and worker.placeholder_adopted: what the worker said of itself.
template <const char* Name>
struct worker_registration_event {
  BATON_EVENT(Name, 1)
  std::optional<std::string> allocation_ends_at;  // RFC 3339
  std::string credential_sha256;
  std::optional<std::string> driver_version;
  int gpu_count = 0;
  std::string gpu_model;
  std::string platform;
  std::string provider_id;
  double vram_gb = 0;
  std::string worker_image_key;
  BATON_DESCRIBE(allocation_ends_at, credential_sha256, driver_version, gpu_count, gpu_model, platform, provider_id, vram_gb,
                 worker_image_key)
};
inline constexpr char worker_registered_name[] = "worker.registered";
inline constexpr char worker_placeholder_adopted_name[] = "worker.placeholder_adopted";
using worker_registered = worker_registration_event<worker_registered_name>;
using worker_placeholder_adopted = worker_registration_event<worker_placeholder_adopted_name>;

struct worker_deregistered {
  BATON_EVENT("worker.deregistered", 1)
  std::optional<std::string> replaced_by;  // an admin's registration that took over its provider id
  BATON_DESCRIBE(replaced_by)
};

struct worker_credential_rotated {
  BATON_EVENT("worker.credential_rotated", 1)
  std::string credential_sha256;
  int64_t grace_seconds = 0;
  int64_t previous_valid_until_us = 0;
  BATON_DESCRIBE(credential_sha256, grace_seconds, previous_valid_until_us)
};

// The lease facts a reap rests on (core/app/decide.hpp's rereap decides it again from them).
struct lease_facts {
  std::string grace_from;  // RFC 3339
  std::optional<int64_t> hpc_silent_cap_us;
  std::optional<bool> squeue_listed;
  int64_t stale_after_us = 0;
  BATON_DESCRIBE(grace_from, hpc_silent_cap_us, squeue_listed, stale_after_us)
};

struct worker_reaped {
  BATON_EVENT("worker.reaped", 1)
  std::string last_heartbeat_at;  // RFC 3339
  std::optional<lease_facts> lease;
  double silent_seconds = 0;
  std::optional<std::string> why;
  BATON_DESCRIBE(last_heartbeat_at, lease, silent_seconds, why)
};

// The deadline rule a decision was made under (core/planning/deadline.hpp), as plans,
// preemption decisions and Slurm submission plans record it. Absent values read as the rule's
// defaults (there, not here).
struct deadline_rule_record {
  std::optional<int64_t> default_time_limit_seconds;
  std::optional<int64_t> min_useful_seconds;
  BATON_DESCRIBE(default_time_limit_seconds, min_useful_seconds)
};

// A Slurm cluster entry as a submission plan's basis records it
// (core/provisioning/provisioning.hpp's cluster_spec). Absent values read as the spec's defaults.
struct cluster_spec_record {
  std::optional<int> gpu_count;
  std::optional<std::string> gpu_type;
  std::optional<std::vector<std::string>> images;
  std::optional<int64_t> jit_threshold_seconds;
  std::optional<int> max_pending;
  std::optional<std::string> name;
  std::optional<std::string> strategy;
  std::optional<int64_t> wall_time_seconds;
  BATON_DESCRIBE(gpu_count, gpu_type, images, jit_threshold_seconds, max_pending, name, strategy, wall_time_seconds)
};

// What a provisioning decision rests on besides the world (core/provisioning/provisioning_basis.hpp):
// the world's applied-event count then, the stale workers it could have counted and, for a
// Slurm submission plan, the time, the cluster entry, the deadline rule and the soon window.
struct provisioning_basis_record {
  std::optional<std::string> at;  // RFC 3339
  std::optional<uint64_t> based_on;
  std::optional<cluster_spec_record> cluster;
  std::optional<deadline_rule_record> deadlines;
  std::optional<int64_t> soon_seconds;
  std::vector<std::string> stale;
  BATON_DESCRIBE(at, based_on, cluster, deadlines, soon_seconds, stale)
};

// A Slurm submission plan for one image (core/provisioning/provisioning.hpp's submission_plan),
// recorded with each placeholder it submitted. Every count is optional: they were added over
// time, and a record re-encodes byte for byte as it was written.
struct placeholder_plan_record {
  std::optional<provisioning_basis_record> basis;  // absent in logs written before it was recorded
  std::optional<int> count;
  std::optional<int> idle_workers;
  std::optional<std::string> image;
  std::optional<int> longer_than_wall_time;
  std::optional<int> max_pending_jobs;
  std::optional<std::string> oldest_queued_at;  // RFC 3339
  std::optional<int> pending_here;
  std::optional<int> pending_placeholders;
  std::optional<int> pending_unplanned;
  std::optional<int> placed_by_plan;
  std::optional<int> queued_compatible;
  std::optional<std::string> strategy;
  BATON_DESCRIBE(basis, count, idle_workers, image, longer_than_wall_time, max_pending_jobs, oldest_queued_at, pending_here,
                 pending_placeholders, pending_unplanned, placed_by_plan, queued_compatible, strategy)
};

struct worker_placeholder_created {
  BATON_EVENT("worker.placeholder_created", 1)
  std::string cluster;
  int gpu_count = 0;
  std::string gpu_model;
  nullable<placeholder_plan_record> plan;  // null: submitted without a plan (tests, hand-made logs)
  std::string provider_id;
  std::optional<std::string> registration_sha256;
  std::string slurm_job_id;
  int64_t wall_time_seconds = 0;
  std::string worker_image_key;
  BATON_DESCRIBE(cluster, gpu_count, gpu_model, plan, provider_id, registration_sha256, slurm_job_id, wall_time_seconds,
                 worker_image_key)
};

struct worker_placeholder_removed {
  BATON_EVENT("worker.placeholder_removed", 1)
  std::string cluster;
  std::string reason = "allocation_gone";
  std::string slurm_job_id;
  BATON_DESCRIBE(cluster, reason, slurm_job_id)
};

// --- clusters and the cloud ---

struct cluster_submission_failed {
  BATON_EVENT("cluster.submission_failed", 1)
  int exit_code = 0;
  std::string image;
  std::string stage;
  std::string stderr_text;
  std::optional<std::string> target;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("exit_code", x.exit_code);
    f("image", x.image);
    f("stage", x.stage);
    f("stderr", x.stderr_text);
    f("target", x.target);
  }
};

template <const char* Name>
struct cluster_switch_event {
  BATON_EVENT(Name, 1)
  std::string reason;
  BATON_DESCRIBE(reason)
};
inline constexpr char cluster_enabled_name[] = "cluster.enabled";
inline constexpr char cluster_disabled_name[] = "cluster.disabled";
using cluster_enabled = cluster_switch_event<cluster_enabled_name>;
using cluster_disabled = cluster_switch_event<cluster_disabled_name>;

struct cloud_scaled {
  BATON_EVENT("cloud.scaled", 1)
  std::optional<provisioning_basis_record> basis;  // what the target was decided on
  int busy_salad_workers = 0;
  int from = 0;
  int idle_hpc_workers = 0;
  int idle_salad_workers = 0;
  std::string image;
  int max_replicas = 0;
  int queued_unpinned = 0;
  int target = 0;
  int to = 0;
  BATON_DESCRIBE(basis, busy_salad_workers, from, idle_hpc_workers, idle_salad_workers, image, max_replicas, queued_unpinned,
                 target, to)
};

struct cloud_scale_failed {
  BATON_EVENT("cloud.scale_failed", 1)
  std::string message;
  std::string stage;
  BATON_DESCRIBE(message, stage)
};

// --- operators and the pilot token ---

struct operator_created {
  BATON_EVENT("operator.created", 1)
  std::vector<std::string> accounts;
  std::string role;  // "admin" or "user"
  std::string token_sha256;
  BATON_DESCRIBE(accounts, role, token_sha256)
};

struct operator_revoked {
  BATON_EVENT("operator.revoked", 1)
  template <class S, class F>
  static void describe(S&, F&&) {}
};

struct operator_token_rotated {
  BATON_EVENT("operator.token_rotated", 1)
  int64_t grace_seconds = 0;
  int64_t previous_valid_until_us = 0;
  std::string token_sha256;
  BATON_DESCRIBE(grace_seconds, previous_valid_until_us, token_sha256)
};

struct pilot_token_rotated {
  BATON_EVENT("pilot.token_rotated", 1)
  int64_t grace_seconds = 0;
  std::string previous_sha256;
  int64_t previous_valid_until_us = 0;
  std::string token_sha256;
  BATON_DESCRIBE(grace_seconds, previous_sha256, previous_valid_until_us, token_sha256)
};

// --- the scheduler's decisions ---

struct share_row {
  double actual = 0;
  double fair_share = 0;
  nullable<double> level_fs;  // null: infinite
  double target = 0;
  double usage = 0;
  BATON_DESCRIBE(actual, fair_share, level_fs, target, usage)
};

// The priority policy a recalculation was made under (core/policy/priority_policy.hpp), as
// the log records it: every value the policy's writer sets; an absent one reads as the
// policy's default (there, not here).
struct policy_weights_record {
  std::optional<uint32_t> age;
  std::optional<uint32_t> fairshare;
  std::optional<uint32_t> job_size;
  std::optional<uint32_t> partition;
  std::optional<uint32_t> qos;
  BATON_DESCRIBE(age, fairshare, job_size, partition, qos)
};
struct partition_record {
  std::string name;
  std::vector<std::string> preempt;  // absent when empty
  std::optional<double> priority_factor;
  std::optional<int> priority_tier;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("name", x.name);
    f("preempt", x.preempt, omit_if{x.preempt.empty()});
    f("priority_factor", x.priority_factor);
    f("priority_tier", x.priority_tier);
  }
};
struct qos_record {
  std::optional<uint32_t> max_running_per_user;
  std::string name;
  std::vector<std::string> preempt;  // absent when empty
  std::optional<double> priority_factor;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("max_running_per_user", x.max_running_per_user);
    f("name", x.name);
    f("preempt", x.preempt, omit_if{x.preempt.empty()});
    f("priority_factor", x.priority_factor);
  }
};
struct account_record {
  std::string name;
  std::optional<std::string> parent;
  std::optional<uint32_t> shares;
  std::map<std::string, uint32_t> users;
  BATON_DESCRIBE(name, parent, shares, users)
};
struct policy_record {
  std::optional<std::vector<account_record>> accounts;
  std::optional<int64_t> calc_period_us;
  std::optional<int64_t> decay_half_life_us;
  std::optional<std::string> default_account;
  std::optional<std::string> default_partition;
  std::optional<std::string> default_qos;
  std::vector<double> energy_prices;  // absent when empty
  std::optional<bool> favor_small;
  std::optional<bool> kill_invalid_dependencies;  // written only when off (older records stay equal)
  std::optional<double> lattice_reference_wait_seconds;
  std::optional<std::vector<double>> lattice_weights;  // lattice:custom's w1..w9
  std::optional<int64_t> max_age_us;
  std::optional<uint32_t> max_jobs_per_user;
  std::optional<uint32_t> offered_gpu_count;    // written only when known
  std::optional<int64_t> offered_wall_seconds;  // likewise
  std::optional<std::vector<partition_record>> partitions;
  std::optional<std::string> policy;             // fifo, multifactor, lattice:<profile>
  std::optional<int64_t> preempt_grace_seconds;  // written only when some partition or QOS preempts
  std::optional<std::vector<qos_record>> qos;
  std::optional<policy_weights_record> weights;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("accounts", x.accounts);
    f("calc_period_us", x.calc_period_us);
    f("decay_half_life_us", x.decay_half_life_us);
    f("default_account", x.default_account);
    f("default_partition", x.default_partition);
    f("default_qos", x.default_qos);
    f("energy_prices", x.energy_prices, omit_if{x.energy_prices.empty()});
    f("favor_small", x.favor_small);
    f("kill_invalid_dependencies", x.kill_invalid_dependencies);
    f("lattice_reference_wait_seconds", x.lattice_reference_wait_seconds);
    f("lattice_weights", x.lattice_weights);
    f("max_age_us", x.max_age_us);
    f("max_jobs_per_user", x.max_jobs_per_user);
    f("offered_gpu_count", x.offered_gpu_count);
    f("offered_wall_seconds", x.offered_wall_seconds);
    f("partitions", x.partitions);
    f("policy", x.policy);
    f("preempt_grace_seconds", x.preempt_grace_seconds);
    f("qos", x.qos);
    f("weights", x.weights);
  }
};

struct priorities_recalculated {
  BATON_EVENT("scheduler.priorities_recalculated", 1)
  double backlog = 0;
  bool deferred = false;
  uint32_t max_gpu_count = 1;
  std::optional<policy_record> policy;
  std::vector<std::string> removed;
  std::map<std::string, share_row> shares;  // by association, only those that changed
  BATON_DESCRIBE(backlog, deferred, max_gpu_count, policy, removed, shares)
};

struct priorities_applied {
  BATON_EVENT("scheduler.priorities_applied", 1)
  std::string calculated_at;  // RFC 3339
  BATON_DESCRIBE(calculated_at)
};

// The planning cycle's settings a plan was made with (core/world/plan_cycle.hpp's
// backfill_settings, in Slurm's units). Absent values read as the settings' defaults.
struct backfill_settings_record {
  std::optional<int64_t> bf_interval_seconds;
  std::optional<uint32_t> bf_max_job_part;
  std::optional<uint32_t> bf_max_job_test;
  std::optional<uint32_t> bf_max_job_user;
  std::optional<uint64_t> bf_max_probes;
  std::optional<int64_t> bf_resolution_seconds;
  std::optional<int64_t> bf_window_minutes;
  std::optional<int64_t> placeholder_start_estimate_seconds;
  std::optional<uint64_t> recorded_reservations;
  BATON_DESCRIBE(bf_interval_seconds, bf_max_job_part, bf_max_job_test, bf_max_job_user, bf_max_probes, bf_resolution_seconds,
                 bf_window_minutes, placeholder_start_estimate_seconds, recorded_reservations)
};

struct plan_row {
  nullable<std::string> end;  // RFC 3339; null: no time limit
  std::string job_id;
  std::optional<std::string> start;  // reservations only
  std::string worker_id;
  BATON_DESCRIBE(end, job_id, start, worker_id)
};

struct plan_made {
  BATON_EVENT("scheduler.plan_made", 1)
  uint64_t based_on = 0;
  deadline_rule_record deadline;
  std::string digest;
  uint64_t jobs_tested = 0;
  uint64_t pending_considered = 0;
  std::string planned_at;  // RFC 3339
  uint64_t probes = 0;
  std::vector<plan_row> reservations;
  uint64_t reservations_total = 0;
  backfill_settings_record settings;
  std::map<std::string, uint64_t> skipped;
  std::vector<std::string> stale_excluded;
  std::vector<plan_row> starts;
  BATON_DESCRIBE(based_on, deadline, digest, jobs_tested, pending_considered, planned_at, probes, reservations,
                 reservations_total, settings, skipped, stale_excluded, starts)
};

// What a preemption decision weighed of a job: the order it is queued in.
struct preemption_facts {
  std::string partition;
  bool preemptor = false;
  int64_t priority = 0;
  std::string qos;
  int tier = 0;
  BATON_DESCRIBE(partition, preemptor, priority, qos, tier)
};

// A job preempted: its worker, the job it makes room for, how, and until when it may checkpoint.
struct preemption_row {
  std::string by;
  std::string from_status;
  std::string grace_until;  // RFC 3339
  std::string job_id;
  std::string mode;  // requeue, cancel
  preemption_facts preemptor;
  preemption_facts victim;
  std::string worker_id;
  BATON_DESCRIBE(by, from_status, grace_until, job_id, mode, preemptor, victim, worker_id)
};

// A preempted job whose grace ended: its worker is taken back.
struct preemption_expired_row {
  std::string by;
  std::string job_id;
  std::string mode;
  std::string worker_id;
  BATON_DESCRIBE(by, job_id, mode, worker_id)
};

// A job that needs no victim: a free worker (reserved for it) or one that another preemption's
// victim (when_left_by) is leaving will take it.
struct preemption_placed_row {
  std::string job_id;
  std::optional<std::string> when_left_by;
  std::string worker_id;
  BATON_DESCRIBE(job_id, when_left_by, worker_id)
};

struct preemptions_decided {
  BATON_EVENT("scheduler.preemptions_decided", 1)
  deadline_rule_record deadline;
  std::vector<preemption_expired_row> expired;
  int64_t grace_seconds = 0;
  std::vector<preemption_placed_row> placed_without_preempting;
  std::vector<preemption_row> preemptions;
  std::vector<std::string> stale_excluded;
  int64_t waiting = 0;
  BATON_DESCRIBE(deadline, expired, grace_seconds, placed_without_preempting, preemptions, stale_excluded, waiting)
};

// --- storage ---

struct blob {
  std::string sha256;
  uint64_t size = 0;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("sha256", x.sha256, events::required);
    f("size", x.size, events::required);
  }
};

struct stored_file_row {
  std::string path;
  std::string sha256;
  uint64_t size = 0;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("path", x.path, events::required);
    f("sha256", x.sha256, events::required);
    f("size", x.size, events::required);
  }
};

struct file_set_row {
  uint32_t attempt = 0;
  std::vector<stored_file_row> files;
  std::string id;
  std::string kind = "checkpoint";  // or "output"
  int64_t stored_at_us = 0;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("attempt", x.attempt);
    f("files", x.files, events::required);
    f("id", x.id, events::required);
    f("kind", x.kind);
    f("stored_at_us", x.stored_at_us, omit_if{x.stored_at_us == 0});
  }
};

struct blob_stored {
  BATON_EVENT("storage.blob_stored", 1)
  std::optional<std::string> job_id;
  std::string purpose;
  std::string sha256;
  uint64_t size = 0;
  std::string user;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("job_id", x.job_id);
    f("purpose", x.purpose);
    f("sha256", x.sha256, events::required);
    f("size", x.size, events::required);
    f("user", x.user);
  }
};

struct upload_held {
  BATON_EVENT("storage.upload_held", 1)
  std::string sha256;
  uint64_t size = 0;
  std::string user;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("sha256", x.sha256, events::required);
    f("size", x.size);
    f("user", x.user, events::required);
  }
};

struct upload_released {
  BATON_EVENT("storage.upload_released", 1)
  std::string sha256;
  std::string user;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("sha256", x.sha256, events::required);
    f("user", x.user, events::required);
  }
};

// An upload not yet bound to a job, which this binding claims (the uploader's hold moves to the job).
struct upload_claim {
  std::string sha256;
  std::string user;
  BATON_DESCRIBE(sha256, user)
};

struct job_bound {
  BATON_EVENT("storage.job_bound", 1)
  std::optional<blob> bundle;
  std::optional<std::vector<file_set_row>> checkpoints;
  std::optional<upload_claim> claimed;
  std::string job_id;
  std::string user;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("bundle", x.bundle);
    f("checkpoints", x.checkpoints);
    f("claimed", x.claimed);
    f("job_id", x.job_id, events::required);
    f("user", x.user, events::required);
  }
};

struct quota_refused {
  BATON_EVENT("storage.quota_refused", 1)
  std::string quota = "storage.user_quota_bytes";
  uint64_t quota_bytes = 0;
  uint64_t requested_bytes = 0;
  uint64_t used_bytes = 0;
  std::string user;
  BATON_DESCRIBE(quota, quota_bytes, requested_bytes, used_bytes, user)
};

struct files_stored {
  BATON_EVENT("storage.files_stored", 1)
  std::string job_id;
  uint32_t keep = 0;
  std::vector<std::string> released;  // checkpoint set ids past the last `keep`
  file_set_row set;
  std::string user;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("job_id", x.job_id, events::required);
    f("keep", x.keep);
    f("released", x.released);
    f("set", x.set, events::required);
    f("user", x.user);
  }
};

template <const char* Name>
struct blobs_event {
  BATON_EVENT(Name, 1)
  std::vector<std::string> sha256s;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("sha256s", x.sha256s, events::required);
  }
};
inline constexpr char blob_removing_name[] = "storage.blob_removing";
inline constexpr char blob_removed_name[] = "storage.blob_removed";
using blob_removing = blobs_event<blob_removing_name>;
using blob_removed = blobs_event<blob_removed_name>;

struct blob_corrupt {
  BATON_EVENT("storage.blob_corrupt", 1)
  std::string found;
  std::string sha256;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("found", x.found);
    f("sha256", x.sha256, events::required);
  }
};

struct storage_job_released {
  BATON_EVENT("storage.job_released", 1)
  std::string job_id;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    f("job_id", x.job_id, events::required);
  }
};

// --- the daemon ---

struct daemon_started {
  BATON_EVENT("daemon.started", 1)
  std::string config;
  std::string data_dir;
  std::string host;
  std::string listen;
  int64_t pid = 0;
  bool previous_run_stopped_cleanly = true;
  std::string version;
  BATON_DESCRIBE(config, data_dir, host, listen, pid, previous_run_stopped_cleanly, version)
};

struct daemon_stopped {
  BATON_EVENT("daemon.stopped", 1)
  std::string signal;
  std::map<std::string, int64_t> worker_last_heartbeats_us;
  BATON_DESCRIBE(signal, worker_last_heartbeats_us)
};

struct daemon_log_truncated {
  BATON_EVENT("daemon.log_truncated", 1)
  int64_t anchors_removed = 0;
  std::string backup;
  uint64_t kept_through_seq = 0;
  uint64_t previous_last_seq = 0;
  std::string previous_last_value_sha256;
  std::string reason;
  uint64_t removed_events = 0;
  BATON_DESCRIBE(anchors_removed, backup, kept_through_seq, previous_last_seq, previous_last_value_sha256, reason, removed_events)
};

#undef BATON_EVENT

// An event kept as its stored bytes: a type this build does not know (a newer batond's), kept
// so nothing is lost and the log still verifies; or bytes another writer made for a known
// type (tests forge records so), which the world applies as what they read as.
struct unknown_event {
  std::string type;
  uint32_t schema = 1;
  std::string bytes;  // the stored payload
};

using payload =
    std::variant<job_created, job_assigned, job_started, job_checkpointed, job_progress_reported, job_handoff_started,
                 job_handoff_completed, job_completed, job_failed, job_cancel_requested, job_cancelled,
                 job_requeued_after_deregister, job_requeued_after_reap, job_requeued_after_orphan, job_requeued_after_preempt,
                 job_requeued_as, job_pruned, job_held, job_released, job_preempted, worker_registered,
                 worker_placeholder_adopted, worker_deregistered, worker_credential_rotated, worker_reaped,
                 worker_placeholder_created, worker_placeholder_removed, cluster_submission_failed, cluster_enabled,
                 cluster_disabled, cloud_scaled, cloud_scale_failed, operator_created, operator_revoked, operator_token_rotated,
                 pilot_token_rotated, priorities_recalculated, priorities_applied, plan_made, preemptions_decided, blob_stored,
                 upload_held, upload_released, job_bound, quota_refused, files_stored, blob_removing, blob_removed, blob_corrupt,
                 storage_job_released, daemon_started, daemon_stopped, daemon_log_truncated, unknown_event>;

// A struct's place in the variant (index_of_v<plan_made>), and a type name's (the
// unknown_event's place for a name this build does not know): readers that dispatch on an
// event's type compare these, never the names.
namespace detail {
template <class T, class V>
struct index_in;
template <class T, class... Ts>
struct index_in<T, std::variant<Ts...>> {
  static constexpr size_t value = [] {
    constexpr bool is[] = {std::is_same_v<T, Ts>...};
    for (size_t i = 0; i < sizeof...(Ts); ++i)
      if (is[i]) return i;
    return sizeof...(Ts);
  }();
  static_assert(value < sizeof...(Ts), "not an event struct of the catalogue");
};
}  // namespace detail
template <class T>
inline constexpr size_t index_of_v = detail::index_in<T, payload>::value;
size_t index_of(std::string_view type);

// The event type's name ("job.created"; an unknown event's own).
std::string_view type_of(const payload& p);
uint32_t schema_of(const payload& p);

// Reads a stored payload by its type and schema version. A type this build does not know
// reads as unknown_event. Throws events::payload_error naming the field, or nlohmann's
// parse error, when a known type's payload does not read; a schema version newer than the
// type's is refused with payload_error("schema_version").
payload decode(std::string_view type, uint32_t schema, std::string_view bytes);
// The same from a JSON payload (events built as JSON, exports read back).
payload from_json(std::string_view type, const nlohmann::json& j);

// The bytes the log stores; an unknown event's own bytes.
std::string encode(const payload& p);
void encode(const payload& p, std::string& out);
// The JSON people read.
nlohmann::json to_json(const payload& p);
// Equal when the log would store the same type and bytes.
bool same(const payload& a, const payload& b);

// The worker an event names in its own payload (its worker_id; a job event's worker), or
// empty: what the SQL views and a job's history show beside the event.
std::string_view worker_named(const payload& p);

// Every known type's name, in the variant's order (tests walk the catalogue with it).
const std::vector<std::string_view>& known_types();

}  // namespace baton::core::ev
