// Preemption against a real batond over loopback, its workers played by the test: the job
// fields and their validation, what a victim's worker hears (heartbeat and control replies),
// the grace timer taking a worker back when its victim never hands off, and `batond
// --rederive` re-deriving each decision.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <thread>

#include "support/batond_process.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const char* config = R"(scheduling:
  policy: multifactor
  partitions:
    normal: {priority_tier: 1}
    owner: {priority_tier: 10, preempt: [normal]}
  preempt_grace_seconds: 1
)";

using worker_ref = std::pair<std::string, std::string>;  // id, token

struct daemon_under_test {
  test::temp_dir dir;
  test::batond_process d{dir, config};
  std::unique_ptr<httplib::Client> op = d.client();

  httplib::Result post(const std::string& path, const json& body) {
    return op->Post(path.c_str(), body.is_null() ? "" : body.dump(), "application/json");
  }
  json get(const std::string& path) {
    auto r = op->Get(test::uid_path(path).c_str());
    EXPECT_TRUE(r && r->status == 200) << path << ": " << (r ? r->body : "no reply");
    return r ? json::parse(r->body) : json(nullptr);
  }
  std::string job(const std::string& name, json fields = json::object()) {
    fields["id"] = test::uid(name);
    fields["title"] = name;
    fields["input_bundle_path"] = "/b/" + name;
    auto r = post("/jobs", fields);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    return fields["id"];
  }
  worker_ref worker() {
    auto r = post("/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}});
    EXPECT_TRUE(r && r->status == 200);
    auto j = json::parse(r->body);
    return {j["worker_id"], j["worker_token"]};
  }
  // A worker's call: (status, body).
  std::pair<int, json> as_worker(const worker_ref& w, const std::string& method, const std::string& path,
                                 const json& body = json::object()) {
    httplib::Client c("127.0.0.1", d.port());
    httplib::Headers h{{"X-Worker-Token", w.second}};
    auto r = method == "GET" ? c.Get(path.c_str(), h) : c.Post(path.c_str(), h, body.dump(), "application/json");
    if (!r) return {0, nullptr};
    return {r->status, r->body.empty() ? json(nullptr) : json::parse(r->body)};
  }
  // The worker takes its next job and starts it: the job's id.
  std::string run_next(const worker_ref& w) {
    auto [status, body] = as_worker(w, "POST", "/jobs/request?worker_id=" + w.first);
    EXPECT_EQ(body.value("status", ""), "assigned") << body;
    std::string id = body.value("job_id", "");
    EXPECT_EQ(as_worker(w, "POST", "/jobs/" + id + "/start").first, 204);
    return id;
  }
};

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

}  // namespace

TEST(preemption_http, JobFieldsAreValidatedAndShown) {
  daemon_under_test t;
  auto bad = t.post("/jobs", {{"title", "x"}, {"input_bundle_path", "/b"}, {"requeue", "no"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
  EXPECT_EQ(json::parse(bad->body)["field"], "requeue") << bad->body;
  bad = t.post("/jobs", {{"title", "x"}, {"input_bundle_path", "/b"}, {"interactive", 1}});
  EXPECT_EQ(json::parse(bad->body)["field"], "interactive") << bad->body;
  t.job("session", {{"interactive", true}, {"requeue", false}});
  auto j = t.get("/jobs/session");
  EXPECT_EQ(j["interactive"], true);
  EXPECT_EQ(j["requeue"], false);
  EXPECT_EQ(j["preempted_by"], nullptr);
  EXPECT_EQ(j["preemptions"], 0);
  t.job("owned", {{"partition", "owner"}});
  auto order = t.get("/priority");
  ASSERT_EQ(order["jobs"].size(), 2u);
  EXPECT_EQ(order["jobs"][0]["job_id"], test::uid("owned")) << "a job that may preempt is considered first";
}

TEST(preemption_http, TheVictimsWorkerHearsItAndIsTakenBackWhenItsGraceEnds) {
  daemon_under_test t;
  auto w = t.worker();
  t.job("low");
  auto low = t.run_next(w);
  auto [hb_status, quiet] = t.as_worker(w, "POST", "/workers/" + w.first + "/heartbeat", {{"job_id", low}});
  EXPECT_EQ(hb_status, 204) << "nothing to say before a preemption";
  auto owner = t.job("owner", {{"partition", "owner"}});

  // The check runs right after the submission: the victim's worker is told on its next calls.
  json beat;
  ASSERT_TRUE(wait_until(
      [&] {
        beat = t.as_worker(w, "POST", "/workers/" + w.first + "/heartbeat", {{"job_id", low}}).second;
        return beat.is_object();
      },
      5s));
  EXPECT_EQ(beat["preempt"]["job_id"], low) << beat;
  EXPECT_EQ(beat["preempt"]["by"], owner);
  EXPECT_EQ(beat["preempt"]["mode"], "requeue");
  auto control = t.as_worker(w, "GET", "/jobs/" + low + "/control").second;
  EXPECT_EQ(control["preemption_requested"], true) << control;
  EXPECT_EQ(control["cancellation_requested"], false);
  EXPECT_EQ(control["preempt"]["grace_until"], beat["preempt"]["grace_until"]);

  // It never hands off: after its grace (1 s) batond takes the worker back, and the job goes
  // back to the queue; the worker is told to stop and gets the preemptor when it polls.
  ASSERT_TRUE(wait_until([&] { return t.get("/jobs/low")["status"] == "queued"; }, 10s)) << t.get("/jobs/low");
  EXPECT_EQ(t.get("/jobs/low")["lost_workers"], 0);
  control = t.as_worker(w, "GET", "/jobs/" + low + "/control").second;
  EXPECT_EQ(control["cancellation_requested"], true) << "the job moved on without this worker: " << control;
  EXPECT_EQ(control["preemption_requested"], false);
  auto [report_status, report] = t.as_worker(w, "POST", "/jobs/" + low + "/checkpoint", {{"checkpoint_manifest_path", "/m"}});
  EXPECT_EQ(report_status, 409) << "a worker taken back writes nothing more: " << report;
  EXPECT_EQ(t.run_next(w), owner);
  bool requeued = false;
  auto history = t.get("/jobs/low/history");
  for (const auto& e : history["events"])
    if (e["event_type"] == "job.requeued_after_preempt") {
      requeued = true;
      EXPECT_EQ(e["payload"]["by"], owner) << e;
      EXPECT_EQ(e["actor"], "loop:preemption") << e;
    }
  EXPECT_TRUE(requeued) << history.dump(1);

  ASSERT_EQ(t.d.stop(), 0) << t.d.err();
  test::child_process tool({BATOND_PATH, "--data-dir", t.dir / "data", "--rederive"}, t.dir / "rederive",
                           {"BATON_CONFIG=/dev/null"});
  EXPECT_EQ(test::exit_code(tool.wait()), 0) << tool.err();
  EXPECT_NE(tool.out().find("2 preemption decisions (2 preemptions)"), std::string::npos) << tool.out();
  t.d.start();
}
