#include "core/access/access.hpp"

namespace baton::core {
namespace {

domain_error deny(error_kind kind, const std::string& code, const std::string& message) {
  return {kind, code, message, nlohmann::json::object(), ""};
}

}  // namespace

std::string principal::actor() const {
  switch (k) {
    case kind::operator_:
      return name.empty() ? "operator:api-token" : "operator:" + name;
    case kind::pilot:
      return worker_id.empty() ? "pilot" : "pilot:" + worker_id;
    case kind::scraper:
      return "scraper";
    case kind::worker:
      return "worker:" + worker_id;
    case kind::internal:
      return "loop";
    case kind::nobody:
      break;
  }
  return "anonymous";
}

access_class access_of(command_kind k) {
  switch (k) {
    case command_kind::health_warnings:
      return access_class::open;
    case command_kind::register_worker:
      return access_class::registration;
    case command_kind::heartbeat:
    case command_kind::rotate_worker_credential:
    case command_kind::deregister:
    case command_kind::request_job:
      return access_class::worker_self;
    case command_kind::job_control:
    case command_kind::start_job:
    case command_kind::checkpoint_job:
    case command_kind::handoff_start:
    case command_kind::handoff_complete:
    case command_kind::complete_job:
    case command_kind::fail_job:
    case command_kind::files_begin:
    case command_kind::files_commit:
      return access_class::worker_job;
    case command_kind::job_files:
      return access_class::job_reader;
    case command_kind::blob_upload:
    case command_kind::blob_uploaded:
      return access_class::operator_only;
    case command_kind::storage_collect:
    case command_kind::storage_removed:
    case command_kind::blob_corrupt:
      return access_class::internal;
    case command_kind::cluster_placeholders:
    case command_kind::placeholders_checked:
    case command_kind::cluster_plan:
    case command_kind::placeholder_submitted:
    case command_kind::submission_failed:
    case command_kind::stale_allocations_checked:
    case command_kind::salad_target:
    case command_kind::salad_scaled:
    case command_kind::salad_failed:
      return access_class::internal;
    case command_kind::create_job:
    case command_kind::create_jobs:
    case command_kind::summary:
    case command_kind::minute_stats:
    case command_kind::get_job:
    case command_kind::list_jobs:
    case command_kind::cancel_job:
    case command_kind::requeue_job:
    case command_kind::job_history:
    case command_kind::event_stream:
    case command_kind::list_workers:
    case command_kind::list_clusters:
    case command_kind::list_worker_images:
    case command_kind::salad_status:
    case command_kind::hold_job:
    case command_kind::release_job:
    case command_kind::job_priority:
    case command_kind::list_priorities:
    case command_kind::fairshare:
      return access_class::operator_only;
    case command_kind::prune_jobs:
    case command_kind::set_cluster_enabled:
    case command_kind::set_clusters_enabled:
    case command_kind::recalculate_priorities:
    case command_kind::create_operator:
    case command_kind::revoke_operator:
    case command_kind::list_operators:
    case command_kind::plan_now:
    case command_kind::rotate_pilot_token:
    case command_kind::audit_export:
      return access_class::admin_only;
    case command_kind::metrics:
      return access_class::monitoring;
    case command_kind::rotate_operator_token:
      return access_class::operator_self;
  }
  return access_class::internal;  // a kind added without a rule reaches nobody from outside
}

std::optional<domain_error> authorize(const principal& who, command_kind k, const std::string& target, const access_settings& s) {
  using K = principal::kind;
  if (who.k == K::internal) return std::nullopt;
  auto cls = access_of(k);
  if (cls == access_class::open) return std::nullopt;
  if (who.k == K::nobody) return deny(error_kind::unauthenticated, "invalid_api_token", "Invalid API token");
  if (who.k == K::scraper && cls != access_class::monitoring)
    return deny(error_kind::forbidden, "scrape_token_metrics_only", "the scrape token only reads GET /metrics");
  if (who.k == K::pilot && cls != access_class::registration && cls != access_class::internal)
    return deny(error_kind::forbidden, "pilot_token_register_only", "the pilot token only registers workers");
  switch (cls) {
    case access_class::monitoring:
      if (who.k == K::scraper) return std::nullopt;
      [[fallthrough]];  // else as admin_only
    case access_class::operator_only:
    case access_class::admin_only:
      if (who.k == K::operator_ && (who.admin || cls == access_class::operator_only)) return std::nullopt;
      if (who.k == K::operator_) return deny(error_kind::forbidden, "admin_only", "this endpoint is for admins");
      return deny(error_kind::forbidden, "operator_only", "this endpoint needs the operator token");
    case access_class::operator_self:
      if (who.k == K::operator_ && (who.admin || (!who.name.empty() && who.name == target))) return std::nullopt;
      if (who.k == K::operator_) return deny(error_kind::forbidden, "other_operator", "an operator rotates only their own token");
      return deny(error_kind::forbidden, "operator_only", "this endpoint needs an operator's token");
    case access_class::registration:
      if ((who.k == K::operator_ && who.admin) || who.k == K::pilot) return std::nullopt;
      if (who.k == K::operator_)
        return deny(error_kind::forbidden, "admin_only", "workers register with the admin or pilot token");
      return deny(error_kind::forbidden, "registration_token_required",
                  "workers register with the operator or pilot token (X-API-Token), not a worker token");
    case access_class::worker_self:
    case access_class::worker_job:
      if (who.k == K::worker) {
        // An empty target is a missing parameter: the request's validation names it (422).
        if (cls == access_class::worker_self && !target.empty() && who.worker_id != target)
          return deny(error_kind::forbidden, "other_worker", "a worker token acts only for its own worker");
        return std::nullopt;
      }
      if (who.k == K::operator_ && who.admin && s.accept_shared_token) return std::nullopt;
      return deny(error_kind::unauthenticated, "worker_token_required",
                  "worker calls need X-Worker-Token (set workers.accept_shared_token to allow the shared token)");
    case access_class::job_reader:
      // Which job: the operator's own (may_see), the worker's held one (core/app/storage_decide).
      if (who.k == K::operator_ || who.k == K::worker) return std::nullopt;
      return deny(error_kind::forbidden, "operator_only", "this endpoint needs an operator's or a worker's token");
    case access_class::internal:
      return deny(error_kind::forbidden, "internal_only", "only batond's own loops send this command");
    case access_class::open:
      break;
  }
  return std::nullopt;
}

std::optional<domain_error> authorize_job(const principal& who, command_kind k, const job& j) {
  if (who.k != principal::kind::worker) return std::nullopt;  // authorize() already admitted the caller
  if (who.worker_id == j.assigned_worker_id) return std::nullopt;
  if (k == command_kind::job_control) {
    for (const auto& seg : j.segments)
      if (seg.worker_id == who.worker_id) return std::nullopt;
    return deny(error_kind::forbidden, "job_not_held_by_worker",
                "job " + j.id + " was never assigned to worker " + who.worker_id);
  }
  // A conflict (409), which RelayMD workers treat as "stop": a reaped-but-alive worker stops
  // writing to the job.
  std::string msg = "job " + j.id + " is not assigned to worker " + who.worker_id;
  return domain_error{error_kind::conflict,
                      "job_not_assigned_to_worker",
                      msg,
                      {{"job_id", j.id}, {"worker_id", who.worker_id}, {"current_status", to_string(j.status)}},
                      ""};
}

bool may_see(const principal& who, const job& j) { return may_see_user_of(who, j.user); }

bool sees_every_job(const principal& who) { return who.k != principal::kind::operator_ || who.admin; }

bool may_see_user_of(const principal& who, const std::string& job_user) { return sees_every_job(who) || job_user == who.name; }

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace baton::core
