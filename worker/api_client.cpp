#include "worker/api_client.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace baton::worker {

using nlohmann::json;

std::string api_result::describe() const {
  if (status == 0) return "no answer (" + error + ")";
  return "HTTP " + std::to_string(status) + (body.is_null() ? "" : " " + body.dump());
}

api_client::api_client(const std::string& url, const std::string& ca_file, std::string api_token, retry_policy policy,
                       sleeper sleep)
    : http_(std::make_unique<httplib::Client>(url)), api_token_(std::move(api_token)), policy_(policy), sleep_(std::move(sleep)) {
  http_->enable_server_certificate_verification(true);
  if (!ca_file.empty()) http_->set_ca_cert_path(ca_file.c_str());
  http_->set_tcp_nodelay(true);  // without it Nagle's algorithm delays each request ~44 ms
  http_->set_connection_timeout(5, 0);
  http_->set_read_timeout(40, 0);  // batond answers within its own 30 s deadline
  http_->set_write_timeout(10, 0);
  if (!sleep_)
    sleep_ = [](double s) {
      std::this_thread::sleep_for(std::chrono::duration<double>(s));
      return true;
    };
}

api_result api_client::once(const std::string& method, const std::string& path, const std::string& body,
                            const httplib::Headers& headers) {
  httplib::Result r =
      method == "GET" ? http_->Get(path.c_str(), headers) : http_->Post(path.c_str(), headers, body, "application/json");
  api_result out;
  if (!r) {
    out.error = httplib::to_string(r.error());
    if (r.error() == httplib::Error::SSLServerVerification)
      out.error += ": batond's certificate did not verify (see --ca-file / BATON_CA_FILE)";
    return out;
  }
  out.status = r->status;
  if (!r->body.empty()) out.body = json::parse(r->body, nullptr, false);
  if (out.body.is_discarded()) out.body = r->body;
  return out;
}

api_result api_client::send(const std::string& method, const std::string& path, const json& body, const httplib::Headers& headers,
                            int attempts, bool interruptible) {
  std::string text = body.is_null() ? "" : body.dump();
  api_result r;
  for (int attempt = 1;; ++attempt) {
    r = once(method, path, text, headers);
    if (!r.retryable() || attempt >= attempts) return r;
    double delay =
        std::max(backoff_seconds(attempt, policy_.base_seconds, policy_.max_seconds, retry_jitter()), r.retry_after_seconds());
    spdlog::warn("{} {}: {}; retry {}/{} in {:.1f} s", method, path, r.describe(), attempt, attempts - 1, delay);
    if (!interruptible)
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    else if (!sleep_(delay))
      return r;
  }
}

api_result api_client::register_worker(const json& body) {
  return send("POST", "/workers/register", body, {{"X-API-Token", api_token_}}, policy_.attempts, true);
}

api_result api_client::rotate_credential(const session& s, int64_t grace_seconds) {
  return send("POST", "/workers/" + s.worker_id + "/credential", json{{"grace_seconds", grace_seconds}},
              {{"X-Worker-Token", s.token}}, 1, false);
}

api_result api_client::heartbeat(const session& s, const json& body) {
  return send("POST", "/workers/" + s.worker_id + "/heartbeat", body, {{"X-Worker-Token", s.token}}, 1, false);
}

api_result api_client::request_job(const session& s) {
  return send("POST", "/jobs/request?worker_id=" + s.worker_id, nullptr, {{"X-Worker-Token", s.token}}, policy_.attempts, true);
}

api_result api_client::control(const session& s, const std::string& job_id) {
  return send("GET", "/jobs/" + job_id + "/control", nullptr, {{"X-Worker-Token", s.token}}, 1, false);
}

api_result api_client::job_action(const session& s, const std::string& job_id, const std::string& action, const json& body,
                                  bool interruptible) {
  return send("POST", "/jobs/" + job_id + "/" + action, body, {{"X-Worker-Token", s.token}}, policy_.attempts, interruptible);
}

api_result api_client::deregister(const session& s) {
  return send("POST", "/workers/" + s.worker_id + "/deregister", nullptr, {{"X-Worker-Token", s.token}},
              std::min(policy_.attempts, 3), false);
}

}  // namespace baton::worker
