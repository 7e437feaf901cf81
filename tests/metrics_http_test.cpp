// GET /metrics against a real batond: Prometheus' text format with jobs by status, workers by
// state and cluster, the log's head, the projections' progress, the log's latencies and the
// server's answers by route and status, counted as the API shows them. Only an admin may
// scrape: no token and a forged one 401, a worker's 403 (a named user's 403 is in
// operators_http_test, every caller kind in auth_table_test).
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/batond_process.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;

namespace {

httplib::Result get_metrics(const test::batond_process& d, const httplib::Headers& h) {
  httplib::Client c("127.0.0.1", d.port());
  return c.Get("/metrics", h);
}

// The value of one sample line ("name{labels} value"), or -1 when there is no such line.
long long sample(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + series.size() + 2));
}

}  // namespace

TEST(metrics_http, CountsJobsWorkersTheLogAndTheProjections) {
  test::temp_dir dir;
  test::batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  auto op = d.client();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(op->Post("/jobs", json{{"id", test::uid("m" + std::to_string(i))}, {"title", "t"}, {"input_bundle_path", "/b"}}.dump(),
                       "application/json")->status, 200);
  std::vector<json> workers;
  for (int i = 0; i < 2; ++i) {
    auto r = op->Post("/workers/register", json{{"platform", "hpc"}, {"gpu_model", "A100"}}.dump(), "application/json");
    ASSERT_EQ(r->status, 200);
    workers.push_back(json::parse(r->body));
  }
  httplib::Client as_worker("127.0.0.1", d.port());
  auto poll = as_worker.Post(("/jobs/request?worker_id=" + workers[0]["worker_id"].get<std::string>()).c_str(),
                             {{"X-Worker-Token", workers[0]["worker_token"].get<std::string>()}}, "", "application/json");
  ASSERT_EQ(json::parse(poll->body)["status"], "assigned");

  auto r = get_metrics(d, {{"X-API-Token", test::test_token}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type").rfind("text/plain", 0), 0u);
  const std::string text = "\n" + r->body;
  EXPECT_NE(text.find("# TYPE baton_jobs gauge"), std::string::npos) << text;
  EXPECT_EQ(sample(text, R"(baton_jobs{status="queued"})"), 2) << text;
  EXPECT_EQ(sample(text, R"(baton_jobs{status="assigned"})"), 1);
  EXPECT_EQ(sample(text, R"(baton_jobs{status="completed"})"), 0) << "every status has a line, zero included";
  EXPECT_EQ(sample(text, "baton_jobs_eligible"), 2);
  EXPECT_EQ(sample(text, R"(baton_workers{state="busy",cluster=""})"), 1) << text;
  EXPECT_EQ(sample(text, R"(baton_workers{state="idle",cluster=""})"), 1);
  auto health = json::parse(d.client()->Get("/healthz")->body);
  EXPECT_GE(sample(text, "baton_log_last_sequence"), 6);
  EXPECT_LE(sample(text, "baton_log_last_sequence"), health["last_sequence"].get<long long>());
  EXPECT_GE(sample(text, R"(baton_projection_lag_events{projection="views"})"), 0) << text;
  EXPECT_EQ(sample(text, R"(baton_projection_failed{projection="views"})"), 0);
  EXPECT_GE(sample(text, R"(baton_projection_applied_sequence{projection="world_snapshots"})"), 0);

  // Every answer the server gave, by route and status: the submissions, the registrations,
  // the worker's poll, and an unknown path.
  EXPECT_EQ(sample(text, R"(baton_http_requests_total{route="POST /jobs",status="200"})"), 3) << text;
  EXPECT_EQ(sample(text, R"(baton_http_requests_total{route="POST /workers/register",status="200"})"), 2);
  EXPECT_EQ(sample(text, R"(baton_http_requests_total{route="POST /jobs/request",status="200"})"), 1);
  EXPECT_EQ(d.client()->Get("/no/such/route")->status, 404);
  auto again = "\n" + get_metrics(d, {{"X-API-Token", test::test_token}})->body;
  EXPECT_EQ(sample(again, R"(baton_http_requests_total{route="unmatched",status="404"})"), 1) << again;
  EXPECT_EQ(sample(again, R"(baton_http_requests_total{route="GET /metrics",status="200"})"), 1) << "the scrape before";

  // The log writer's latencies: every append so far (jobs, registrations, the assignment) was
  // acknowledged after an fsync, and each histogram's buckets only grow up to the count.
  EXPECT_NE(text.find("# TYPE baton_log_fsync_seconds histogram"), std::string::npos);
  for (std::string h : {"baton_log_fsync_seconds", "baton_log_append_seconds"}) {
    const long long count = sample(text, h + "_count");
    EXPECT_GE(count, h == "baton_log_append_seconds" ? 6 : 1) << h;
    EXPECT_EQ(sample(text, h + R"(_bucket{le="+Inf"})"), count) << h;
    long long last = 0;
    for (const char* le : {"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5"}) {
      const long long b = sample(text, h + "_bucket{le=\"" + le + "\"}");
      EXPECT_GE(b, last) << h << " le " << le;
      last = b;
    }
    EXPECT_LE(last, count);
    EXPECT_NE(text.find("\n" + h + "_sum "), std::string::npos);
  }
}

TEST(metrics_http, OnlyAnAdminMayScrape) {
  test::temp_dir dir;
  test::batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  auto reg = d.client()->Post("/workers/register", json{{"platform", "hpc"}, {"gpu_model", "A100"}}.dump(), "application/json");
  ASSERT_EQ(reg->status, 200);
  const std::string worker_token = json::parse(reg->body)["worker_token"];

  EXPECT_EQ(get_metrics(d, {})->status, 401);
  EXPECT_EQ(get_metrics(d, {{"X-API-Token", "not-the-token"}})->status, 401);
  EXPECT_EQ(get_metrics(d, {{"X-Worker-Token", "x.y"}})->status, 401);
  auto as_worker = get_metrics(d, {{"X-Worker-Token", worker_token}});
  EXPECT_EQ(as_worker->status, 403) << as_worker->body;
  EXPECT_EQ(as_worker->body.find("baton_jobs"), std::string::npos);
}
