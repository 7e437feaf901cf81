// GET /metrics against a real batond: Prometheus' text format with jobs by status, workers by
// state and cluster, the log's head, the projections' progress, the log's latencies and the
// server's answers by route and status, polls by result with their latency, counted as the
// API shows them (Slurm calls by cluster and result: slurm_integration_test). Only an admin
// or the scrape token may scrape: no token and a forged one 401, a worker's 403 (a named
// user's 403 is in operators_http_test, every caller kind in auth_table_test); the scrape
// token reads nothing else. Memory, descriptors and pruned stubs, as /proc shows them.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/metrics_text.hpp"

using namespace baton;
using nlohmann::json;

namespace {

using test::metric_sample;

httplib::Result get_metrics(const test::batond_process& d, const httplib::Headers& h) {
  httplib::Client c("127.0.0.1", d.port());
  return c.Get("/metrics", h);
}

}  // namespace

TEST(metrics_http, CountsJobsWorkersTheLogAndTheProjections) {
  test::temp_dir dir;
  test::batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  auto op = d.client();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(
        op->Post("/jobs", json{{"id", test::uid("m" + std::to_string(i))}, {"title", "t"}, {"input_bundle_path", "/b"}}.dump(),
                 "application/json")
            ->status,
        200);
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
  EXPECT_EQ(metric_sample(text, R"(baton_jobs{status="queued"})"), 2) << text;
  EXPECT_EQ(metric_sample(text, R"(baton_jobs{status="assigned"})"), 1);
  EXPECT_EQ(metric_sample(text, R"(baton_jobs{status="completed"})"), 0) << "every status has a line, zero included";
  EXPECT_EQ(metric_sample(text, "baton_jobs_eligible"), 2);
  EXPECT_EQ(metric_sample(text, R"(baton_workers{state="busy",cluster=""})"), 1) << text;
  EXPECT_EQ(metric_sample(text, R"(baton_workers{state="idle",cluster=""})"), 1);
  auto health = json::parse(d.client()->Get("/healthz")->body);
  EXPECT_GE(metric_sample(text, "baton_log_last_sequence"), 6);
  EXPECT_LE(metric_sample(text, "baton_log_last_sequence"), health["last_sequence"].get<long long>());
  EXPECT_GE(metric_sample(text, R"(baton_projection_lag_events{projection="views"})"), 0) << text;
  EXPECT_EQ(metric_sample(text, R"(baton_projection_failed{projection="views"})"), 0);
  EXPECT_GE(metric_sample(text, R"(baton_projection_applied_sequence{projection="world_snapshots"})"), 0);

  // Every answer the server gave, by route and status: the submissions, the registrations,
  // the worker's poll, and an unknown path.
  EXPECT_EQ(metric_sample(text, R"(baton_http_requests_total{route="POST /jobs",status="200"})"), 3) << text;
  EXPECT_EQ(metric_sample(text, R"(baton_http_requests_total{route="POST /workers/register",status="200"})"), 2);
  EXPECT_EQ(metric_sample(text, R"(baton_http_requests_total{route="POST /jobs/request",status="200"})"), 1);
  EXPECT_EQ(d.client()->Get("/no/such/route")->status, 404);
  auto again = "\n" + get_metrics(d, {{"X-API-Token", test::test_token}})->body;
  EXPECT_EQ(metric_sample(again, R"(baton_http_requests_total{route="unmatched",status="404"})"), 1) << again;
  EXPECT_EQ(metric_sample(again, R"(baton_http_requests_total{route="GET /metrics",status="200"})"), 1) << "the scrape before";

  // Polls by result: the two assignments and a poll with another worker's token; and their
  // latency, one sample each.
  httplib::Client idle("127.0.0.1", d.port());
  auto none = idle.Post(("/jobs/request?worker_id=" + workers[1]["worker_id"].get<std::string>()).c_str(),
                        {{"X-Worker-Token", workers[1]["worker_token"].get<std::string>()}}, "", "application/json");
  EXPECT_EQ(json::parse(none->body)["status"], "assigned") << "two jobs still queue: the second worker gets one";
  auto forged = idle.Post(("/jobs/request?worker_id=" + workers[1]["worker_id"].get<std::string>()).c_str(),
                          {{"X-Worker-Token", workers[0]["worker_token"].get<std::string>()}}, "", "application/json");
  EXPECT_EQ(forged->status, 403);
  auto polls = "\n" + get_metrics(d, {{"X-API-Token", test::test_token}})->body;
  EXPECT_EQ(metric_sample(polls, R"(baton_polls_total{result="assigned",reason=""})"), 2) << polls;
  EXPECT_EQ(metric_sample(polls, R"(baton_polls_total{result="refused",reason="403"})"), 1) << polls;
  EXPECT_EQ(metric_sample(polls, "baton_poll_seconds_count"), 3);

  // The log writer's latencies: every append so far (jobs, registrations, the assignment) was
  // acknowledged after an fsync, and each histogram's buckets only grow up to the count.
  EXPECT_NE(text.find("# TYPE baton_log_fsync_seconds histogram"), std::string::npos);
  for (std::string h : {"baton_log_fsync_seconds", "baton_log_append_seconds"}) {
    const long long count = metric_sample(text, h + "_count");
    EXPECT_GE(count, h == "baton_log_append_seconds" ? 6 : 1) << h;
    EXPECT_EQ(metric_sample(text, h + R"(_bucket{le="+Inf"})"), count) << h;
    long long last = 0;
    for (const char* le : {"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5"}) {
      const long long b = metric_sample(text, h + "_bucket{le=\"" + le + "\"}");
      EXPECT_GE(b, last) << h << " le " << le;
      last = b;
    }
    EXPECT_LE(last, count);
    EXPECT_NE(text.find("\n" + h + "_sum "), std::string::npos);
  }
}

// What batond holds: its resident memory and descriptors as /proc shows them, the heap and
// each big holder (SQLite's caches, RocksDB's memtables), and how many pruned jobs it keeps
// a stub of.
TEST(metrics_http, ReportsMemoryDescriptorsAndPrunedStubs) {
  test::temp_dir dir;
  test::batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  auto op = d.client();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(
        op->Post("/jobs", json{{"id", test::uid("p" + std::to_string(i))}, {"title", "t"}, {"input_bundle_path", "/b"}}.dump(),
                 "application/json")
            ->status,
        200);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(op->Delete(("/jobs/" + test::uid("p" + std::to_string(i))).c_str())->status, 204);
  auto pruned = op->Delete("/jobs?older_than_minutes=0");
  ASSERT_EQ(pruned->status, 200) << pruned->body;
  ASSERT_EQ(json::parse(pruned->body)["deleted"], 2);

  const std::string text = "\n" + get_metrics(d, {{"X-API-Token", test::test_token}})->body;
  EXPECT_EQ(metric_sample(text, "baton_jobs_pruned"), 2) << text;
  EXPECT_EQ(metric_sample(text, R"(baton_jobs{status="cancelled"})"), 0) << "pruned jobs are counted apart";

  auto statm = test::slurp("/proc/" + std::to_string(d.pid()) + "/statm");
  const long long resident = std::stoll(statm.substr(statm.find(' ') + 1)) * sysconf(_SC_PAGESIZE);
  const long long reported = metric_sample(text, "process_resident_memory_bytes");
  EXPECT_GT(reported, resident / 2) << text;
  EXPECT_LT(reported, resident * 2);
  long long fds = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(d.pid()) + "/fd")) fds += !e.path().empty();
  EXPECT_GT(metric_sample(text, "process_open_fds"), 10) << "the log's files, the views, the listening socket";
  EXPECT_LE(std::abs(metric_sample(text, "process_open_fds") - fds), 4) << "the scrape's own connection may come and go";

#if defined(__SANITIZE_ADDRESS__)
  EXPECT_EQ(metric_sample(text, R"(baton_memory_bytes{part="heap_in_use"})"), -1) << "ASan's allocator counts nothing: no line";
#else
  EXPECT_GT(metric_sample(text, R"(baton_memory_bytes{part="heap_in_use"})"), 1 << 20) << text;
  EXPECT_GE(metric_sample(text, R"(baton_memory_bytes{part="heap_free"})"), 0);
#endif
  EXPECT_GT(metric_sample(text, R"(baton_memory_bytes{part="sqlite"})"), 0) << "the SQL view is on by default";
  EXPECT_GT(metric_sample(text, R"(baton_memory_bytes{part="rocksdb_memtables"})"), 0) << "the events written so far";
  EXPECT_GE(metric_sample(text, R"(baton_memory_bytes{part="rocksdb_block_cache"})"), 0);
  EXPECT_LE(metric_sample(text, R"(baton_memory_bytes{part="rocksdb_block_cache"})"), 8 << 20)
      << "one 8 MiB cache for all families";
  EXPECT_GE(metric_sample(text, R"(baton_memory_bytes{part="rocksdb_table_readers"})"), 0);
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

TEST(metrics_http, TheScrapeTokenReadsMetricsAndNothingElse) {
  test::temp_dir dir;
  const std::string scrape = "scrape-0123456789abcdef";
  test::batond_process d(dir, "", {"BATON_METRICS_TOKEN=" + scrape});
  ASSERT_GT(d.port(), 0) << d.err();
  auto ok = get_metrics(d, {{"X-API-Token", scrape}});
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_NE(ok->body.find("baton_jobs{"), std::string::npos);
  EXPECT_EQ(get_metrics(d, {{"X-API-Token", scrape + "x"}})->status, 401);
  EXPECT_EQ(get_metrics(d, {{"Authorization", "Bearer " + scrape}})->status, 200) << "Prometheus' authorization header";
  EXPECT_EQ(get_metrics(d, {{"Authorization", "Bearer " + scrape + "x"}})->status, 401);
  EXPECT_EQ(get_metrics(d, {{"Authorization", "Basic " + scrape}})->status, 401);
  httplib::Client c("127.0.0.1", d.port());
  httplib::Headers h{{"X-API-Token", scrape}};
  auto jobs = c.Get("/jobs", h);
  EXPECT_EQ(jobs->status, 403);
  EXPECT_NE(jobs->body.find("scrape_token_metrics_only"), std::string::npos) << jobs->body;
  EXPECT_EQ(c.Post("/workers/register", h, json{{"platform", "hpc"}}.dump(), "application/json")->status, 403);
  EXPECT_EQ(c.Post("/jobs", h, json{{"title", "t"}, {"input_bundle_path", "/b"}}.dump(), "application/json")->status, 403)
      << "refused before the body is read";
  EXPECT_EQ(c.Post("/ui/login", json{{"token", scrape}}.dump(), "application/json")->status, 403) << "no dashboard session";
  EXPECT_EQ(c.Get("/events/stream", h)->status, 403);
}
