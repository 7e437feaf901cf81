#pragma once
// What the HTTP layer asks the scheduler, already validated, and what it gets back.
// Local messages only, so they travel as unsafe (non-serialisable) CAF types.
#include <caf/allowed_unsafe_message_type.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace baton::actors {

enum class op : uint8_t {
  create_job, get_job, list_jobs, cancel_job, requeue_job, prune_jobs, job_control,
  register_worker, heartbeat, deregister, request_job, list_workers,
  start_job, checkpoint_job, handoff_start, handoff_complete, complete_job, fail_job,
  list_clusters, set_cluster_enabled, set_clusters_enabled, list_worker_images,
  health_warnings,  // for GET /healthz (no token)
  // from the cluster actors (never from HTTP)
  cluster_placeholders, placeholders_checked, cluster_plan, placeholder_submitted, submission_failed,
  stale_allocations_checked,
  // the Salad autoscaler
  salad_status, salad_target, salad_scaled, salad_failed,
};

struct api_command {
  op kind = op::get_job;
  std::string target;         // job id or worker id from the path / query
  nlohmann::json body;        // validated request body (shape depends on kind)
  std::string caller_worker;  // worker named by its credential ("" = shared token); checked by the scheduler
  std::string actor;          // for the log: "worker:<id>", "operator:<name>"
  std::string request_id;     // correlation id (X-Request-Id or generated)
  std::string new_id;         // fresh id chosen by the shell (new worker, requeue clone)
  std::string secret_sha256;  // register: hash of the credential handed out; else of the one presented
};

struct api_reply {
  int status = 200;
  nlohmann::json body;  // null -> empty body (204)
};

}  // namespace baton::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::actors::api_command)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::actors::api_reply)
