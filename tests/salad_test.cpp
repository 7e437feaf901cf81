// The Salad autoscaler against a small fake of the Salad public API on loopback (the one
// outside service that cannot run here): replicas follow cloud-eligible demand, never drop
// below the Salad workers still running jobs, and API failures are recorded once.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "support/batond_process.hpp"
#include "support/replay_tool.hpp"
#include "support/wait_until.hpp"

using namespace baton::test;
using nlohmann::json;

namespace {

constexpr std::chrono::seconds autoscaler_deadline{20};  // a few of its 1 s intervals, on a busy machine

class fake_salad {
 public:
  fake_salad() {
    const char* path = "/api/public/organizations/org/projects/proj/containers/grp";
    srv_.Get(path, [this](const httplib::Request& req, httplib::Response& res) {
      ++gets;
      if (!authorised(req, res)) return;
      if (int st = fail_status.load()) {
        res.status = st;
        res.set_content(R"({"error":"boom"})", "application/json");
        return;
      }
      res.set_content(json{{"name", "grp"}, {"replicas", replicas.load()}}.dump(), "application/json");
    });
    srv_.Patch(path, [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorised(req, res)) return;
      auto body = json::parse(req.body, nullptr, false);
      if (!body.contains("replicas")) {
        res.status = 400;
        return;
      }
      replicas = body["replicas"].get<int>();
      std::lock_guard<std::mutex> lock(m_);
      patches_.push_back(replicas.load());
      res.set_content(json{{"replicas", replicas.load()}}.dump(), "application/json");
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
  }
  ~fake_salad() {
    srv_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<int> patches() {
    std::lock_guard<std::mutex> lock(m_);
    return patches_;
  }
  // Waits until the autoscaler has run `cycles` more whole cycles (each reads the replicas once).
  bool await_cycles(int cycles) {
    return wait_for_cycles([&] { return gets.load(); }, cycles, autoscaler_deadline);
  }
  std::atomic<int> replicas{0};
  std::atomic<int> gets{0};  // replica reads (GET), failed ones included
  std::atomic<int> fail_status{0};
  std::atomic<int> unauthorised{0};

 private:
  bool authorised(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Salad-Api-Key") == "salad-key") return true;
    ++unauthorised;
    res.status = 401;
    return false;
  }
  httplib::Server srv_;
  int port_ = 0;
  std::thread thread_;
  std::mutex m_;
  std::vector<int> patches_;
};

std::string salad_config(const fake_salad& salad) {
  return "salad: {organization: org, project: proj, container_group: grp, max_replicas: 5, interval_seconds: 1,"
         " api_base_url: \"http://127.0.0.1:" +
         std::to_string(salad.port()) + "/api/public\"}\n";
}

struct api_call {
  int status = 0;
  json body;
};

api_call call(const batond_process& d, const std::string& method, const std::string& path, const json& body = nullptr,
              httplib::Headers headers = {}) {
  auto c = d.client();
  httplib::Result r = method == "GET" ? c->Get(path.c_str(), headers)
                      : method == "DELETE"
                          ? c->Delete(path.c_str(), headers)
                          : c->Post(path.c_str(), headers, body.is_null() ? "" : body.dump(), "application/json");
  if (!r) return {};
  return {r->status, r->body.empty() ? json(nullptr) : json::parse(r->body, nullptr, false)};
}

}  // namespace

TEST(Salad, ReplicasFollowDemandAndNeverDropBelowBusyWorkers) {
  fake_salad salad;
  temp_dir dir;
  batond_process d(dir, salad_config(salad), {"BATON_SALAD_API_KEY=salad-key"});
  ASSERT_GT(d.port(), 0) << d.err();
  std::vector<std::string> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(call(d, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}}).body["id"]);
  call(d, "POST", "/jobs", {{"title", "pinned"}, {"input_bundle_path", "/b"}, {"preferred_clusters", {"hpc-a"}}});
  ASSERT_TRUE(wait_until([&] { return salad.replicas == 3; }, autoscaler_deadline))
      << d.err();  // 3 unpinned queued, no HPC worker

  // A Salad worker comes up and takes a job.
  auto reg = call(d, "POST", "/workers/register", {{"platform", "salad"}, {"gpu_model", "RTX 4090"}, {"gpu_count", 1}});
  ASSERT_EQ(reg.status, 200);
  std::string wid = reg.body["worker_id"];
  httplib::Headers wt = {{"X-Worker-Token", reg.body["worker_token"].get<std::string>()}};
  auto got = call(d, "POST", "/jobs/request?worker_id=" + wid, nullptr, wt);
  ASSERT_EQ(got.body["status"], "assigned");
  std::string running = got.body["job_id"];
  ASSERT_EQ(call(d, "POST", "/jobs/" + running + "/start", nullptr, wt).status / 100, 2);

  // The other unpinned jobs are cancelled: demand is gone, but the busy Salad worker stays.
  for (const auto& j : jobs)
    if (j != running) call(d, "DELETE", "/jobs/" + j);
  ASSERT_TRUE(wait_until([&] { return salad.replicas == 1; }, autoscaler_deadline)) << d.err();
  ASSERT_TRUE(salad.await_cycles(2)) << d.err();
  EXPECT_EQ(salad.replicas, 1) << "RelayMD would scale to 0 under a running job";
  for (int p : salad.patches()) EXPECT_GE(p, 1);

  auto status = call(d, "GET", "/cloud/salad");
  ASSERT_EQ(status.status, 200);
  EXPECT_EQ(status.body["last_scaled"]["to"], 1);
  EXPECT_EQ(status.body["last_scaled"]["busy_salad_workers"], 1);
  EXPECT_EQ(status.body["last_scaled"]["queued_unpinned"], 0);

  // The job finishes: nothing left for Salad.
  ASSERT_EQ(call(d, "POST", "/jobs/" + running + "/complete", nullptr, wt).status / 100, 2);
  ASSERT_TRUE(wait_until([&] { return salad.replicas == 0; }, autoscaler_deadline));
  EXPECT_EQ(salad.unauthorised, 0) << "every call carried the API key";

  // Every replica target was decided on the world its basis names: replay decides each again.
  ASSERT_EQ(d.stop(), 0);
  auto report = rederive_report(dir / "data", dir / "rederive");
  EXPECT_EQ(report["ok"], true) << report.dump(2);
  EXPECT_GE(report.value("salad_targets", 0), 3) << report.dump(2);  // 3, 1 and 0 replicas
  EXPECT_EQ(report["unchecked"], 0) << report.dump(2);
}

TEST(Salad, IdleHpcWorkersComeFirstAndApiFailuresAreRecordedOnce) {
  fake_salad salad;
  salad.replicas = 2;
  temp_dir dir;
  batond_process d(dir, salad_config(salad), {"BATON_SALAD_API_KEY=salad-key"});
  ASSERT_GT(d.port(), 0) << d.err();
  ASSERT_EQ(call(d, "POST", "/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}}).status, 200);
  call(d, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}});
  ASSERT_TRUE(wait_until([&] { return salad.replicas == 0; }, autoscaler_deadline))
      << "one job, one idle HPC worker: no cloud needed";

  salad.fail_status = 500;
  json failure;
  ASSERT_TRUE(wait_until(
      [&] {
        failure = call(d, "GET", "/cloud/salad").body["last_failure"];
        return failure.is_object();
      },
      autoscaler_deadline));
  EXPECT_EQ(failure["stage"], "get");
  EXPECT_NE(failure["message"].get<std::string>().find("HTTP 500"), std::string::npos);
  ASSERT_TRUE(salad.await_cycles(2)) << "more failing cycles";
  EXPECT_EQ(call(d, "GET", "/cloud/salad").body["last_failure"]["at"], failure["at"]) << "one event per outage";
  EXPECT_EQ(call(d, "GET", "/healthz").status, 200);
}

TEST(Salad, NotConfiguredAnswers404) {
  temp_dir dir;
  batond_process d(dir, "");
  EXPECT_EQ(call(d, "GET", "/cloud/salad").status, 404);
}
