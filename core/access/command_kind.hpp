#pragma once
// Every command the scheduler decides, by kind. Which caller may send each kind is decided
// in one place: core/access/access.hpp.
#include <cstdint>

namespace baton::core {

// clang-format off
enum class command_kind : uint8_t {
  create_job, get_job, list_jobs, cancel_job, requeue_job, prune_jobs, job_control, job_history,
  register_worker, heartbeat, deregister, request_job, list_workers,
  start_job, checkpoint_job, handoff_start, handoff_complete, complete_job, fail_job,
  list_clusters, set_cluster_enabled, set_clusters_enabled, list_worker_images,
  health_warnings,  // for GET /healthz (no token)
  // from the cluster actors (never from HTTP)
  cluster_placeholders, placeholders_checked, cluster_plan, placeholder_submitted, submission_failed,
  stale_allocations_checked,
  // the Salad autoscaler
  salad_status, salad_target, salad_scaled, salad_failed,
  // who goes first (core/world/priority.hpp)
  hold_job, release_job, job_priority, list_priorities, fairshare, recalculate_priorities,
  // named operators with their own tokens
  create_operator, revoke_operator, list_operators,
  // the planning cycle, now (core/world/plan_cycle.hpp)
  plan_now,
  // the audit export (answered from the log itself, never by the scheduler)
  audit_export,
  // GET /metrics: counts for Prometheus
  metrics,
  // GET /events/stream: the live feed (answered by its projection, never by the scheduler)
  event_stream,
  // credential rotation (core/access/credential.hpp)
  rotate_operator_token, rotate_worker_credential, rotate_pilot_token,
  // the data plane (core/app/storage_decide.hpp, docs/storage.md)
  blob_upload, blob_uploaded, files_begin, files_commit, job_files,
  storage_collect, storage_removed, blob_corrupt,
  // POST /jobs/batch (job arrays)
  create_jobs,
  // GET /summary (the dashboard's overview)
  summary,
  // GET /stats/minutes: per-minute counts (answered by its projection, never by the scheduler)
  minute_stats,
};
// clang-format on

}  // namespace baton::core
