#pragma once
// batond's worker API over HTTP. One client per thread (httplib clients are not thread-safe).
// Connection errors and 5xx are retried with capped exponential backoff; 4xx never is.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "worker/backoff.hpp"

namespace baton::worker {

struct api_result {
  int status = 0;  // 0 = no answer (connection error, timeout)
  nlohmann::json body;
  std::string error;  // transport error text when status == 0
  bool ok() const { return status >= 200 && status < 300; }
  // No answer, a server error, or over the request budget (429: batond says when to retry).
  bool retryable() const { return status == 0 || status == 429 || status >= 500; }
  // The wait batond asked for with a 429 (retry_after_seconds in the body), else 0.
  double retry_after_seconds() const { return status == 429 && body.is_object() ? body.value("retry_after_seconds", 0.0) : 0.0; }
  std::string error_code() const { return body.is_object() ? body.value("error", "") : ""; }
  std::string describe() const;
};

struct retry_policy {
  int attempts = 8;
  double base_seconds = 1;
  double max_seconds = 30;
};

// Who the worker is now (changes when it registers again).
struct session {
  std::string worker_id, token;
  std::chrono::steady_clock::time_point credential_since = std::chrono::steady_clock::now();
};

class api_client {
 public:
  // sleep(seconds) waits between retries of interruptible calls and returns false to give up
  // early (shutdown, cancel); other calls sleep the full delay.
  using sleeper = std::function<bool(double)>;
  // An https url is served only by a batond whose certificate verifies against ca_file (or
  // the system's CAs when it is empty) and names the url's host.
  api_client(const std::string& url, const std::string& ca_file, std::string api_token, retry_policy policy, sleeper sleep);

  api_result register_worker(const nlohmann::json& body);
  api_result heartbeat(const session& s, const nlohmann::json& body);  // one attempt: the next beat is the retry
  api_result request_job(const session& s);
  api_result control(const session& s, const std::string& job_id);  // one attempt
  // POST /jobs/{id}/{action} (start, checkpoint, complete, fail, handoff/start, handoff/complete).
  api_result job_action(const session& s, const std::string& job_id, const std::string& action,
                        const nlohmann::json& body = nlohmann::json::object(), bool interruptible = false);
  api_result deregister(const session& s);
  // POST /workers/{id}/credential: a new token in the reply; the old one is accepted grace_seconds more.
  api_result rotate_credential(const session& s, int64_t grace_seconds);  // one attempt

 private:
  api_result send(const std::string& method, const std::string& path, const nlohmann::json& body, const httplib::Headers& headers,
                  int attempts, bool interruptible);
  api_result once(const std::string& method, const std::string& path, const std::string& body, const httplib::Headers& headers);

  std::unique_ptr<httplib::Client> http_;
  std::string api_token_;
  retry_policy policy_;
  sleeper sleep_;
};

}  // namespace baton::worker
