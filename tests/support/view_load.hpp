#pragma once
// Load for the views' tests: bursts of concurrent submitters and workers against a real
// batond (optionally killed with -9 midway), and a wait until a projection has caught up.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/batond_process.hpp"
#include "support/ids.hpp"

namespace baton::test {

inline nlohmann::json healthz(const batond_process& d) {
  auto r = d.client()->Get("/healthz");
  return r && r->status == 200 ? nlohmann::json::parse(r->body) : nlohmann::json();
}

// Waits (with a deadline) until the projection has stored every event the log has.
inline bool caught_up(const batond_process& d, const std::string& projection = "views") {
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       std::chrono::steady_clock::now() < deadline;) {
    auto h = healthz(d);
    if (h.contains("projections") && h["projections"].contains(projection) && h["projections"][projection]["lag_events"] == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// A worker that registers, then polls, starts and completes (or fails) what it is given.
inline void worker_loop(int port, int rounds, int seed) {
  httplib::Client op("127.0.0.1", port);
  op.set_connection_timeout(2, 0);
  op.set_read_timeout(5, 0);
  auto r = op.Post("/workers/register", {{"X-API-Token", test_token}},
                   nlohmann::json{{"platform", "hpc"}, {"gpu_model", "A100"}}.dump(), "application/json");
  if (!r || r->status != 200) return;
  auto w = nlohmann::json::parse(r->body);
  httplib::Headers as_worker{{"X-Worker-Token", w["worker_token"].get<std::string>()}};
  for (int i = 0; i < rounds; ++i) {
    auto p = op.Post(("/jobs/request?worker_id=" + w["worker_id"].get<std::string>()).c_str(), as_worker, "", "application/json");
    if (!p) return;  // batond went away
    if (p->status != 200) continue;
    auto a = nlohmann::json::parse(p->body, nullptr, false);
    if (a.is_discarded() || a.value("status", "") != "assigned") continue;
    const std::string job = a["job_id"];
    op.Post(("/jobs/" + job + "/start").c_str(), as_worker, "", "application/json");
    op.Post(("/jobs/" + job + ((i + seed) % 4 ? "/complete" : "/fail")).c_str(), as_worker, "", "application/json");
    // Now and then an operator prunes every job that ended: the views keep their rows (pruned
    // set) while batond's world keeps only stubs.
    if (i % 10 == 9 && seed == 0) op.Delete("/jobs?older_than_minutes=0", {{"X-API-Token", test_token}});
  }
}

// recalc_every > 0: also asks for a priority recalculation after every that many jobs, so
// the views re-key queued jobs and rewrite fair_share in the middle of the load.
inline void submitter_loop(int port, int jobs, const std::string& prefix, int recalc_every = 0) {
  httplib::Client op("127.0.0.1", port);
  op.set_connection_timeout(2, 0);
  op.set_read_timeout(5, 0);
  for (int i = 0; i < jobs; ++i) {
    auto r = op.Post(
        "/jobs", {{"X-API-Token", test_token}},
        nlohmann::json{{"id", uid(prefix + std::to_string(i))}, {"title", "burst"}, {"input_bundle_path", "/b"}, {"nice", i % 7}}
            .dump(),
        "application/json");
    if (!r) return;
    if (recalc_every > 0 && i % recalc_every == recalc_every - 1 &&
        !op.Post("/priority/recalculate", {{"X-API-Token", test_token}}, "", "application/json"))
      return;
  }
}

// One burst: two submitters and two workers at once; kill -9 once the log has grown by
// `kill_after` events (the view is applying batches then), else let the burst finish.
inline void burst(batond_process& d, int round, std::optional<uint64_t> kill_after) {
  const uint64_t start_seq = healthz(d).value("last_sequence", 0);
  const int port = d.port();
  std::vector<std::thread> load;
  for (int s = 0; s < 2; ++s)
    load.emplace_back(submitter_loop, port, 60, "r" + std::to_string(round) + "s" + std::to_string(s) + "-", s == 0 ? 15 : 0);
  for (int w = 0; w < 2; ++w) load.emplace_back(worker_loop, port, 40, w);
  if (kill_after) {
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         std::chrono::steady_clock::now() < deadline;)
      if (healthz(d).value("last_sequence", uint64_t{0}) >= start_seq + *kill_after) break;
    d.kill();
  }
  for (auto& t : load) t.join();
}

}  // namespace baton::test
