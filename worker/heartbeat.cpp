// The heartbeat thread: one beat per interval with the running job's progress, and a
// control check for that job on the same tick (cancel latency <= one interval).
#include <spdlog/spdlog.h>

#include "core/util/time.hpp"
#include "worker/agent.hpp"
#include "worker/progress.hpp"

namespace baton::worker {

using nlohmann::json;

void agent::send_heartbeat(api_client& api) {
  session s;
  std::string job, progress_path;
  {
    std::lock_guard<std::mutex> lock(m_);
    s = session_;
    job = job_id_;
    progress_path = progress_path_;
  }
  json body = json::object();
  if (!job.empty()) {
    body["job_id"] = job;
    if (auto p = read_progress(progress_path)) body["progress"] = *p;
  }
  auto r = api.heartbeat(s, body);
  if (r.status == 404 || r.status == 401) {  // 401: a worker that is gone has no credential
    spdlog::warn("heartbeat: batond no longer knows worker {} ({})", s.worker_id, r.status);
    std::lock_guard<std::mutex> lock(m_);
    lost_worker_id_ = s.worker_id;
    cv_.notify_all();
    return;
  }
  if (!r.ok()) {
    spdlog::warn("heartbeat for worker {} failed: {}", s.worker_id, r.describe());
    return;
  }
  spdlog::debug("heartbeat worker {} job {} progress {}", s.worker_id, job, body.value("progress", -1.0));
  if (job.empty()) return;
  if (r.body.is_object() && r.body.contains("preempt")) note_preemption(job, r.body["preempt"]);
  auto c = api.control(s, job);
  if (!c.ok()) {
    spdlog::warn("control check for job {} failed: {}", job, c.describe());
    return;
  }
  if (c.body.is_object() && c.body.contains("preempt")) note_preemption(job, c.body["preempt"]);
  if (c.body.value("cancellation_requested", false)) {
    std::lock_guard<std::mutex> lock(m_);
    if (cancel_job_id_ != job) spdlog::info("job {}: cancellation requested (status {})", job, c.body.value("status", ""));
    cancel_job_id_ = job;
    cv_.notify_all();
  }
}

void agent::note_preemption(const std::string& job, const json& preempt) {
  if (!preempt.is_object() || preempt.value("job_id", "") != job) return;
  auto mode = preempt.value("mode", "requeue");
  double grace = 0;
  // Whole seconds plus the fraction, as a double: the same number the worker always reported.
  if (auto t = util::parse_time_us(preempt.value("grace_until", "")))
    grace = static_cast<double>(*t / 1'000'000) + static_cast<double>(*t % 1'000'000) / 1e6;
  std::lock_guard<std::mutex> lock(m_);
  if (job_id_ != job) return;  // that job has ended here meanwhile
  if (mode == "cancel") {      // an interactive or non-requeueable job: the cancel path
    if (cancel_job_id_ != job) spdlog::info("job {}: preempted by {}; it is cancelled", job, preempt.value("by", ""));
    cancel_job_id_ = job;
  } else {
    if (preempt_job_id_ != job)
      spdlog::info("job {}: preempted by {}; handing it off by {}", job, preempt.value("by", ""),
                   preempt.value("grace_until", ""));
    preempt_job_id_ = job;
    preempted_by_ = preempt.value("by", "");
    preempt_grace_until_ = grace;
  }
  cv_.notify_all();
}

// A new credential for this session; the old one stays valid for the grace batond grants, so
// a call the main thread has on its way with it still passes. A failure is retried next beat.
void agent::rotate_credential(api_client& api) {
  auto s = current_session();
  const int64_t grace = static_cast<int64_t>(std::max(300.0, 4 * cfg_.heartbeat_seconds));
  auto r = api.rotate_credential(s, grace);
  if (!r.ok() || !r.body.is_object() || !r.body["token"].is_string()) {
    spdlog::warn("credential rotation for worker {} failed: {}; trying again at the next heartbeat", s.worker_id, r.describe());
    return;
  }
  std::lock_guard<std::mutex> lock(m_);
  if (session_.worker_id != s.worker_id) return;  // registered again meanwhile: that session has its own
  session_.token = r.body["token"].get<std::string>();
  session_.credential_since = std::chrono::steady_clock::now();
  spdlog::info("worker {}: credential rotated; the old one is accepted until {}", s.worker_id,
               r.body.value("previous_token_valid_until", "?"));
}

void agent::heartbeat_loop() {
  api_client api(cfg_.url, cfg_.ca_file, cfg_.api_token, {1, cfg_.retry_base_seconds, cfg_.retry_max_seconds}, nullptr);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(m_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(cfg_.heartbeat_seconds), [this] { return heartbeat_quit_; })) return;
    }
    send_heartbeat(api);
    if (cfg_.credential_rotate_seconds > 0 && std::chrono::steady_clock::now() - current_session().credential_since >=
                                                  std::chrono::duration<double>(cfg_.credential_rotate_seconds))
      rotate_credential(api);
  }
}

}  // namespace baton::worker
