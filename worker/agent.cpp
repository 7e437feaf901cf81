#include "worker/agent.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <thread>

#include "core/util/time.hpp"
#include "worker/slurm_deadline.hpp"

namespace baton::worker {

using nlohmann::json;

agent::agent(worker_config cfg, gpu_info gpu)
    : cfg_(std::move(cfg)),
      gpu_(std::move(gpu)),
      api_(cfg_.url, cfg_.ca_file, cfg_.api_token, {cfg_.retry_attempts, cfg_.retry_base_seconds, cfg_.retry_max_seconds},
           [this](double s) { return interruptible_sleep(s); }) {}

void agent::request_stop() {
  std::lock_guard<std::mutex> lock(m_);
  stop_ = true;
  cv_.notify_all();
}

session agent::current_session() {
  std::lock_guard<std::mutex> lock(m_);
  return session_;
}

bool agent::stopping() {
  std::lock_guard<std::mutex> lock(m_);
  return stop_;
}

bool agent::lost() {
  std::lock_guard<std::mutex> lock(m_);
  return !lost_worker_id_.empty() && lost_worker_id_ == session_.worker_id;
}

double agent::seconds_until_handoff() const {
  if (cfg_.allocation_deadline <= 0) return std::numeric_limits<double>::infinity();
  double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return static_cast<double>(cfg_.allocation_deadline) - cfg_.handoff_margin_seconds - now;
}

bool agent::interruptible_sleep(double seconds) {
  std::unique_lock<std::mutex> lock(m_);
  auto interrupted = [this] {
    return stop_ || (!job_id_.empty() && (cancel_job_id_ == job_id_ || preempt_job_id_ == job_id_)) ||
           (!lost_worker_id_.empty() && lost_worker_id_ == session_.worker_id);
  };
  return !cv_.wait_for(lock, std::chrono::duration<double>(seconds), interrupted);
}

bool agent::register_worker() {
  json body = {{"platform", cfg_.platform},
               {"gpu_model", gpu_.model},
               {"gpu_count", gpu_.count},
               {"vram_gb", gpu_.vram_gb},
               {"worker_image_key", cfg_.worker_image_key}};
  if (!cfg_.provider_id.empty()) body["provider_id"] = cfg_.provider_id;
  if (!gpu_.driver_version.empty()) body["driver_version"] = gpu_.driver_version;  // its conformance fingerprint
  // batond gives it only jobs that fit the time left (or checkpoint and can be handed on).
  // (Seconds past year 292,000 are held there, as µs; batond refuses such a year either way.)
  if (cfg_.allocation_deadline > 0)
    body["allocation_ends_at"] =
        util::format_time_us(std::min(cfg_.allocation_deadline, INT64_MAX / 1'000'000) * 1'000'000, util::time_form::seconds);
  auto r = api_.register_worker(body);
  // A pilot can start before batond has recorded its allocation (sbatch's answer still on its
  // way): its one-time credential is not known yet, so a 401 is worth a few more tries.
  for (int attempt = 1; r.status == 401 && cfg_.api_token_file_remove && attempt < cfg_.retry_attempts && !stopping();
       ++attempt) {
    spdlog::warn("register refused ({}); the allocation may not be recorded yet, retry {}/{}", r.describe(), attempt,
                 cfg_.retry_attempts - 1);
    interruptible_sleep(backoff_seconds(attempt, cfg_.retry_base_seconds, cfg_.retry_max_seconds, retry_jitter()));
    r = api_.register_worker(body);
  }
  if (!r.ok() || !r.body.is_object() || !r.body.contains("worker_id") || !r.body.contains("worker_token")) {
    spdlog::error("register failed: {}", r.describe());
    return false;
  }
  std::lock_guard<std::mutex> lock(m_);
  session_ = {r.body["worker_id"].get<std::string>(), r.body["worker_token"].get<std::string>(),
              std::chrono::steady_clock::now()};
  lost_worker_id_.clear();
  spdlog::info("registered as worker {} (platform {}, {} x {} {} GB, image {}{})", session_.worker_id, cfg_.platform, gpu_.count,
               gpu_.model.empty() ? "unknown GPU" : gpu_.model, gpu_.vram_gb, cfg_.worker_image_key,
               cfg_.provider_id.empty() ? "" : ", provider " + cfg_.provider_id);
  return true;
}

void agent::reset_session() {
  auto s = current_session();
  auto r = api_.deregister(s);
  spdlog::info("deregistered worker {} to start a fresh session: {}", s.worker_id, r.ok() ? "ok" : r.describe());
}

bool agent::flush_pending_report() {
  if (!pending_) return true;
  auto r = api_.job_action(current_session(), pending_->job_id, pending_->action, pending_->body, true);
  if (r.retryable()) {
    spdlog::warn("job {}: {} still not delivered: {}", pending_->job_id, pending_->action, r.describe());
    return false;
  }
  spdlog::info("job {}: delayed {} delivered: {}", pending_->job_id, pending_->action, r.ok() ? "ok" : r.describe());
  pending_.reset();
  return true;
}

int agent::poll_loop() {
  auto idle_since = std::chrono::steady_clock::now();
  int failures = 0;
  while (!stopping()) {
    if (inside_handoff_margin()) {  // no new work this close to the allocation's end
      spdlog::info("within {} s of the allocation deadline {}; taking no more work", cfg_.handoff_margin_seconds,
                   cfg_.allocation_deadline);
      break;
    }
    if (lost()) {
      spdlog::warn("batond no longer knows worker {}; registering again", current_session().worker_id);
      if (!register_worker()) return stopping() ? 0 : 1;
    }
    if (!flush_pending_report()) {
      if (++failures >= cfg_.retry_attempts) return 1;
      interruptible_sleep(backoff_seconds(failures, cfg_.retry_base_seconds, cfg_.retry_max_seconds, retry_jitter()));
      continue;
    }
    auto r = api_.request_job(current_session());
    if (stopping()) break;
    if (!r.ok()) {
      if (r.status == 401) {  // e.g. batond lost its data: our credential means nothing now
        spdlog::warn("poll refused ({}); registering again", r.describe());
        if (!register_worker()) return 1;
        continue;
      }
      if (lost()) continue;
      spdlog::error("poll failed: {}", r.describe());
      return 1;
    }
    failures = 0;
    auto status = r.body.value("status", "");
    if (status == "assigned") {
      auto outcome = run_job(r.body);
      idle_since = std::chrono::steady_clock::now();
      if (outcome == job_outcome::handed_off) break;
      continue;
    }
    auto reason = r.body.value("reason", "");
    if (reason == "stale_worker") {  // our lease lapsed without a reap: beat now, then poll again
      spdlog::warn("batond sees worker {} as stale; sending a heartbeat", current_session().worker_id);
      send_heartbeat(api_);
      continue;
    }
    if (reason == "worker_busy") {
      // batond thinks we hold a job we never heard of (a lost poll reply): deregistering requeues it.
      spdlog::warn("batond says worker {} is busy but it runs nothing; starting a fresh session", current_session().worker_id);
      reset_session();
      if (!register_worker()) return stopping() ? 0 : 1;
      continue;
    }
    if (reason == "unknown_worker" || reason.rfind("worker_", 0) == 0) {
      spdlog::warn("batond answered {} for worker {}; registering again", reason, current_session().worker_id);
      if (!register_worker()) return stopping() ? 0 : 1;
      continue;
    }
    // no_job_for_this_worker, or a reason this version does not know: treat as idle.
    if (cfg_.idle_strategy == "immediate_exit") {
      spdlog::info("no job available ({}); idle strategy immediate_exit", reason);
      break;
    }
    double idle = std::chrono::duration<double>(std::chrono::steady_clock::now() - idle_since).count();
    if (idle >= cfg_.idle_max_seconds) {
      spdlog::info("idle for {:.0f} s (max {:.0f} s); exiting", idle, cfg_.idle_max_seconds);
      break;
    }
    spdlog::debug("no job available ({}); polling again in {} s", reason, cfg_.idle_poll_seconds);
    interruptible_sleep(std::min(cfg_.idle_poll_seconds, std::max(0.0, seconds_until_handoff())));
  }
  return 0;
}

int agent::run() {
  spdlog::info("baton-worker starting: batond {}, image {}, work dir {}", cfg_.url, cfg_.worker_image_key, cfg_.work_dir);
  if (cfg_.allocation_deadline <= 0 && !cfg_.slurm_job_id.empty()) {
    spdlog::info("no allocation deadline given; asking Slurm when allocation {} ends", cfg_.slurm_job_id);
    cfg_.allocation_deadline = ask_slurm_for_allocation_end(cfg_.slurm_job_id);
  }
  if (cfg_.allocation_deadline > 0) {
    spdlog::info("allocation ends at epoch {} ({:.0f} s from now); proactive handoff {} s before", cfg_.allocation_deadline,
                 seconds_until_handoff() + cfg_.handoff_margin_seconds, cfg_.handoff_margin_seconds);
    if (inside_handoff_margin()) {
      spdlog::info("already within the handoff margin; not registering");
      return 0;
    }
  }
  if (!register_worker()) return stopping() ? 0 : 1;
  std::thread heartbeat([this] { heartbeat_loop(); });
  int rc = poll_loop();
  if (pending_) {  // last chance for a complete/fail: deregistering would requeue a finished job
    auto r = api_.job_action(current_session(), pending_->job_id, pending_->action, pending_->body, false);
    spdlog::log(r.ok() ? spdlog::level::info : spdlog::level::err, "job {}: delayed {} at exit: {}", pending_->job_id,
                pending_->action, r.ok() ? "delivered" : r.describe());
  }
  auto s = current_session();
  auto r = api_.deregister(s);
  if (r.ok() || r.status == 404 || r.status == 401)  // 401: already gone, its token with it
    spdlog::info("deregistered worker {}", s.worker_id);
  else
    spdlog::warn("deregister of worker {} failed: {}", s.worker_id, r.describe());
  {
    std::lock_guard<std::mutex> lock(m_);
    heartbeat_quit_ = true;
    cv_.notify_all();
  }
  heartbeat.join();
  spdlog::info("baton-worker exiting with code {}", rc);
  return rc;
}

}  // namespace baton::worker
