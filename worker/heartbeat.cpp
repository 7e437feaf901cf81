// The heartbeat thread: one beat per interval with the running job's progress, and a
// control check for that job on the same tick (cancel latency <= one interval).
#include <spdlog/spdlog.h>

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
  if (r.status == 404) {
    spdlog::warn("heartbeat: batond no longer knows worker {} (404)", s.worker_id);
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
  auto c = api.control(s, job);
  if (!c.ok()) {
    spdlog::warn("control check for job {} failed: {}", job, c.describe());
    return;
  }
  if (c.body.value("cancellation_requested", false)) {
    std::lock_guard<std::mutex> lock(m_);
    if (cancel_job_id_ != job) spdlog::info("job {}: cancellation requested (status {})", job, c.body.value("status", ""));
    cancel_job_id_ = job;
    cv_.notify_all();
  }
}

void agent::heartbeat_loop() {
  api_client api(cfg_.url, cfg_.api_token, {1, cfg_.retry_base_seconds, cfg_.retry_max_seconds}, nullptr);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(m_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(cfg_.heartbeat_seconds), [this] { return heartbeat_quit_; }))
        return;
    }
    send_heartbeat(api);
  }
}

}  // namespace baton::worker
