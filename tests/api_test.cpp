// End-to-end tests of the worker and operator API over real HTTP on loopback: a real
// batond process, its real event log in a temp dir.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/wait_until.hpp"

using namespace baton;
using nlohmann::json;

namespace {

const char* slow_config = "workers: {heartbeat_interval_seconds: 60, reaper_interval_seconds: 60}\n";
const char* fast_config =
    "workers: {heartbeat_interval_seconds: 1, heartbeat_timeout_multiplier: 1.5, reaper_interval_seconds: 1}\n";

struct reply {
  int status = 0;
  json body;
};

using test::uid;

// Paths name jobs by their test names ("/jobs/job-1/start"); uid_path makes them UUIDs.
reply call(httplib::Client& c, const std::string& method, const std::string& named_path, const json& body = nullptr,
           httplib::Headers headers = {}) {
  std::string path = test::uid_path(named_path);
  std::string text = body.is_null() ? "" : body.dump();
  auto r = method == "GET"    ? c.Get(path.c_str(), headers)
           : method == "POST" ? c.Post(path.c_str(), headers, text, "application/json")
                              : c.Delete(path.c_str(), headers);
  if (!r) return {-1, nullptr};
  json j = r->body.empty() ? json(nullptr) : json::parse(r->body, nullptr, false);
  return {r->status, j};
}

struct worker_handle {
  std::string id, token;
  httplib::Headers auth() const { return {{"X-Worker-Token", token}}; }
};

struct api : ::testing::Test {
  test::temp_dir dir;
  std::unique_ptr<test::batond_process> b;
  std::unique_ptr<httplib::Client> op;

  void boot(const char* config = slow_config) {
    b = std::make_unique<test::batond_process>(dir, config);
    ASSERT_GT(b->port(), 0) << b->err();
    op = b->client();
  }
  void TearDown() override {
    if (b) {
      EXPECT_EQ(b->stop(), 0) << b->err();
    }
  }

  json create(const std::string& id, json extra = json::object()) {
    json body = {{"id", uid(id)}, {"title", "job " + id}, {"input_bundle_path", "/bundles/" + id}};
    body.update(extra);
    auto r = call(*op, "POST", "/jobs", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  }
  worker_handle enroll(const std::string& platform = "hpc", int gpus = 1, const std::string& model = "A100",
                       json extra = json::object()) {
    json body = {
        {"platform", platform}, {"gpu_model", model}, {"gpu_count", gpus}, {"vram_gb", 0}, {"worker_image_key", "default"}};
    body.update(extra);
    auto r = call(*op, "POST", "/workers/register", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return {r.body.value("worker_id", ""), r.body.value("worker_token", "")};
  }
  reply poll(const worker_handle& w) { return call(*op, "POST", "/jobs/request?worker_id=" + w.id, nullptr, w.auth()); }
  reply as(const worker_handle& w, const std::string& method, const std::string& path, const json& body = nullptr) {
    return call(*op, method, path, body, w.auth());
  }
};

}  // namespace

TEST_F(api, RejectsMissingOrWrongTokens) {
  boot();
  auto anon = b->client("");
  EXPECT_EQ(call(*anon, "GET", "/jobs").status, 401);
  auto r = call(*anon, "POST", "/jobs", {{"title", "x"}, {"input_bundle_path", "/b"}});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body["detail"], "Invalid API token");
  auto wrong = b->client("not-the-token");
  EXPECT_EQ(call(*wrong, "GET", "/workers").status, 401);
  EXPECT_EQ(call(*anon, "GET", "/healthz").status, 200) << "healthz needs no token";
  auto forged = call(*anon, "POST", "/jobs/request?worker_id=w", nullptr, {{"X-Worker-Token", "w.deadbeef"}});
  EXPECT_EQ(forged.status, 401);
}

TEST_F(api, ValidationErrorsNameTheField) {
  boot();
  auto r = call(*op, "POST", "/jobs", {{"input_bundle_path", "/b"}});
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body["field"], "title");
  EXPECT_EQ(r.body["detail"][0]["loc"][1], "title");
  r = call(*op, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", 5}});
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body["field"], "input_bundle_path");
  r = call(*op, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}, {"comment", std::string(2001, 'c')}});
  EXPECT_EQ(r.body["field"], "comment");
  r = call(*op, "POST", "/jobs", {{"id", "bad id!"}, {"title", "t"}, {"input_bundle_path", "/b"}});
  EXPECT_EQ(r.body["field"], "id");
  auto raw = op->Post("/jobs", "{not json", "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 422);
  EXPECT_EQ(json::parse(raw->body)["field"], "body");
  r = call(*op, "POST", "/workers/register", {{"platform", "cloud"}});
  EXPECT_EQ(r.body["field"], "platform");
  EXPECT_EQ(call(*op, "POST", "/jobs/request").status, 401) << "who calls is settled before the parameters";
  auto w = enroll();
  EXPECT_EQ(call(*op, "POST", "/jobs/request", nullptr, w.auth()).body["field"], "worker_id");
  EXPECT_EQ(call(*op, "GET", "/jobs?status=running&status=sleeping").body["field"], "status");
  EXPECT_EQ(call(*op, "DELETE", "/jobs?status=running").body["field"], "status");
  EXPECT_EQ(call(*op, "GET", "/jobs?limit=0").body["field"], "limit");
}

TEST_F(api, CreateGetDuplicateAndDefaults) {
  boot();
  auto j = create("job-1", {{"preferred_clusters", {" clusterA", "clusterA", "clusterB "}}, {"comment", "  hi  "}});
  EXPECT_EQ(j["id"], uid("job-1"));
  EXPECT_EQ(j["status"], "queued");
  EXPECT_EQ(j["worker_image_key"], "default");
  EXPECT_EQ(j["preferred_clusters"], json({"clusterA", "clusterB"}));
  EXPECT_EQ(j["comment"], "hi");
  EXPECT_EQ(j["progress_codes"], json::array()) << "a new job has reported no progress codes";
  EXPECT_EQ(j["checkpoint_cycle_failures"], json::array());
  auto dup = call(*op, "POST", "/jobs", {{"id", uid("job-1")}, {"title", "again"}, {"input_bundle_path", "/b"}});
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(dup.body["job_id"], uid("job-1"));
  EXPECT_EQ(call(*op, "GET", "/jobs/job-1").body["title"], "job job-1");
  EXPECT_EQ(call(*op, "GET", "/jobs/nope").status, 404);
  auto generated = call(*op, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}});
  EXPECT_EQ(generated.body["id"].get<std::string>().size(), 36u);
}

TEST_F(api, FullJobLifecycleWithTypedConflicts) {
  boot();
  create("j");
  auto w = enroll();
  EXPECT_EQ(as(w, "POST", "/workers/" + w.id + "/heartbeat").status, 204);
  auto got = poll(w);
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.body["status"], "assigned");
  EXPECT_EQ(got.body["job_id"], uid("j"));
  EXPECT_EQ(got.body["input_bundle_path"], "/bundles/j");
  auto again = poll(w);  // its first reply may have been lost: the same job again, never a second
  EXPECT_EQ(again.body["status"], "assigned") << again.body;
  EXPECT_EQ(again.body["job_id"], uid("j"));
  EXPECT_EQ(call(*op, "GET", "/jobs?status=assigned").body.size(), 1u) << "one job per worker";
  EXPECT_EQ(as(w, "POST", "/jobs/j/start").status, 204);
  EXPECT_EQ(as(w, "POST", "/jobs/j/start").status, 204) << "start is idempotent";
  EXPECT_EQ(as(w, "POST", "/jobs/j/checkpoint", {{"progress", 0.5}}).status, 422);
  EXPECT_EQ(as(w, "POST", "/jobs/j/checkpoint", {{"checkpoint_manifest_path", "/ck/j/1.json"}, {"progress", 0.5}}).status, 204);
  EXPECT_EQ(as(w, "POST", "/workers/" + w.id + "/heartbeat", {{"job_id", uid("j")}, {"progress", 0.6}}).status, 204);
  auto job = call(*op, "GET", "/jobs/j").body;
  EXPECT_EQ(job["status"], "running");
  EXPECT_EQ(job["latest_checkpoint_manifest_path"], "/ck/j/1.json");
  EXPECT_EQ(job["progress"], 0.6);
  EXPECT_EQ(job["assigned_worker_id"], w.id);
  EXPECT_EQ(as(w, "POST", "/jobs/j/complete").status, 204);
  auto late = as(w, "POST", "/jobs/j/fail", {{"reason", "oops"}});
  EXPECT_EQ(late.status, 409);
  EXPECT_EQ(late.body["error"], "job_transition_conflict");
  EXPECT_EQ(late.body["current_status"], "completed");
  EXPECT_EQ(late.body["requested_status"], "failed");
  EXPECT_EQ(late.body["job_id"], uid("j"));
  auto history = call(*op, "GET", "/jobs/j/history").body;
  std::vector<std::string> types;
  for (auto& e : history["events"]) types.push_back(e["event_type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"job.created", "job.assigned", "job.started", "job.checkpointed",
                                             "job.progress_reported", "job.completed"}));
  EXPECT_EQ(history["worker_totals"][0]["worker_id"], w.id);
  EXPECT_EQ(history["events"][1]["actor"], "worker:" + w.id);
  EXPECT_EQ(history["events"][0]["actor"], "operator:api-token");
}

TEST_F(api, TwoWorkersPollingForOneJobExactlyOneGetsIt) {
  boot();
  for (int round = 0; round < 5; ++round) {
    create("one-" + std::to_string(round));
    auto a = enroll("hpc", 1, "A100"), c = enroll("hpc", 1, "A100");
    std::atomic<int> assigned{0};
    worker_handle* winner = nullptr;
    std::vector<std::thread> ts;
    for (auto* w : {&a, &c})
      ts.emplace_back([&, w] {
        auto cli = b->client();
        auto r = call(*cli, "POST", "/jobs/request?worker_id=" + w->id, nullptr, w->auth());
        if (r.body.value("status", "") == "assigned" && ++assigned == 1) winner = w;
      });
    for (auto& t : ts) t.join();
    EXPECT_EQ(assigned, 1) << "round " << round;
    if (winner) {
      EXPECT_EQ(as(*winner, "POST", "/jobs/one-" + std::to_string(round) + "/complete").status, 204);
    }
    for (auto* w : {&a, &c}) as(*w, "POST", "/workers/" + w->id + "/deregister");
  }
}

TEST_F(api, OneWorkerWithConcurrentPollsClaimsOneJob) {
  boot();
  create("a1");
  create("a2");
  auto w = enroll();
  std::mutex m;
  std::set<std::string> jobs_told;  // every poll is told the one job it holds
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&] {
      auto cli = b->client();
      auto r = call(*cli, "POST", "/jobs/request?worker_id=" + w.id, nullptr, w.auth());
      std::lock_guard<std::mutex> lock(m);
      if (r.body.value("status", "") == "assigned") jobs_told.insert(r.body["job_id"].get<std::string>());
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(jobs_told.size(), 1u);
  auto queued = call(*op, "GET", "/jobs?status=queued");
  EXPECT_EQ(queued.body.size(), 1u);
}

// Idle polls are answered on the HTTP thread from the scheduler's read model when nothing
// the worker could run is queued; every answer must still be the scheduler's own.
TEST_F(api, IdlePollAnswersMatchTheSchedulerAndSeeNewJobsAtOnce) {
  boot((std::string(fast_config) + "jobs: {worker_images: [other]}\n").c_str());
  auto w = enroll();
  auto other = enroll("hpc", 1, "A100", {{"worker_image_key", "other"}});
  auto leaver = enroll();
  auto beat = [&](const worker_handle& h) { return as(h, "POST", "/workers/" + h.id + "/heartbeat").status; };
  EXPECT_EQ(poll(w).body["reason"], "no_job_for_this_worker");
  for (int i = 0; i < 30; ++i) {  // a job acknowledged is a job the very next poll sees
    auto id = "quick-" + std::to_string(i);
    create(id);
    // w ranks above leaver (same GPUs, registered first): leaver gets nothing while w is idle.
    EXPECT_EQ(poll(leaver).body["reason"], "no_job_for_this_worker");
    auto r = poll(w);
    ASSERT_EQ(r.body.value("job_id", ""), uid(id)) << "round " << i << ": " << r.body;
    auto& holder = w;
    EXPECT_EQ(poll(holder).body["job_id"], uid(id)) << "a repeated poll is told its job again";
    EXPECT_EQ(as(holder, "POST", "/jobs/" + id + "/start").status, 204);
    EXPECT_EQ(poll(holder).body["reason"], "worker_busy") << "once started, the worker knows its job";
    EXPECT_EQ(as(holder, "POST", "/jobs/" + id + "/complete").status, 204);
    EXPECT_EQ(poll(holder).body["reason"], "no_job_for_this_worker") << "idle again after completing";
    EXPECT_EQ(beat(w), 204);
    EXPECT_EQ(beat(other), 204);
    EXPECT_EQ(beat(leaver), 204);
  }
  // Credentials are checked exactly as the scheduler checks them.
  EXPECT_EQ(call(*op, "POST", "/jobs/request?worker_id=" + w.id, nullptr, {{"X-Worker-Token", w.id + ".wrong"}}).status, 401);
  EXPECT_EQ(call(*op, "POST", "/jobs/request?worker_id=" + w.id, nullptr, other.auth()).status, 403);
  EXPECT_EQ(call(*op, "POST", "/jobs/request?worker_id=" + w.id).status, 401) << "shared token refused by default";
  // A job of another image does not wake this worker; it does wake the other one.
  create("for-other", {{"worker_image_key", "other"}});
  EXPECT_EQ(poll(w).body["reason"], "no_job_for_this_worker");
  EXPECT_EQ(poll(other).body["job_id"], uid("for-other"));
  // A gone worker's token is no credential; a stale worker gets the scheduler's reason, not
  // the idle answer.
  EXPECT_EQ(as(leaver, "POST", "/workers/" + leaver.id + "/deregister").status, 204);
  EXPECT_EQ(poll(leaver).status, 401);
  // w stops heartbeating: stale after 1.5 s (GET /workers says so), or reaped soon after.
  EXPECT_TRUE(baton::test::wait_until(
      [&] {
        for (const auto& row : call(*op, "GET", "/workers").body)
          if (row.value("id", "") == w.id) return row.value("state", "") == "stale" || row.value("state", "") == "gone";
        return true;  // (no longer listed: reaped)
      },
      std::chrono::seconds(30), std::chrono::milliseconds(50)));
  auto stale = poll(w);  // stale, or already reaped (then its token is no credential)
  EXPECT_TRUE(stale.status == 401 || stale.body.value("reason", "") == "stale_worker") << stale.body;
}

// RelayMD's operator endpoints around configured clusters: pins are validated against them,
// the enabled map is replaced as a whole, the worker images are listed.
TEST_F(api, ClusterPinsEnabledMapAndWorkerImagesAsRelayMD) {
  boot(
      "provisioning: {interval_seconds: 3600}\n"
      "clusters:\n"
      "  - {name: a, partition: no-such-partition-a, worker_images: {default: {}, openmm: {}}}\n"
      "  - {name: b, partition: no-such-partition-b, worker_images: {default: {}}}\n");
  auto bad = call(*op, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}, {"preferred_clusters", {"a", "nope"}}});
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(bad.body["detail"]["error"], "unknown_preferred_cluster");
  EXPECT_EQ(bad.body["detail"]["cluster_name"], "nope");
  EXPECT_EQ(bad.body["detail"]["known_cluster_names"], json({"a", "b"}));
  EXPECT_EQ(bad.body["field"], "preferred_clusters");
  EXPECT_EQ(call(*op, "GET", "/jobs").body.size(), 0u) << "nothing was created";
  EXPECT_EQ(call(*op, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}, {"preferred_clusters", {"a"}}}).status, 200);

  auto images = call(*op, "GET", "/config/worker-images").body;
  EXPECT_EQ(images["default_worker_image"], "default");
  EXPECT_EQ(images["worker_images"],
            json::parse(R"([{"key":"default","display_name":"default"},{"key":"openmm","display_name":"openmm"}])"));

  auto put = [&](const json& body, httplib::Headers h = {}) {
    auto r = op->Put("/config/slurm-clusters/enabled", h, body.dump(), "application/json");
    return reply{r ? r->status : -1, r && !r->body.empty() ? json::parse(r->body) : json(nullptr)};
  };
  auto missing = put({{"enabled", {{"a", false}}}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.body["detail"]["missing_cluster_names"], json({"b"}));
  auto unknown = put({{"enabled", {{"a", false}, {"b", true}, {"c", true}}}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.body["detail"]["unknown_cluster_names"], json({"c"}));
  EXPECT_EQ(put({{"enabled", {{"a", "no"}, {"b", true}}}}).body["field"], "enabled.a");
  EXPECT_EQ(put({{"enabled", true}}).status, 422);
  auto w = enroll();
  EXPECT_EQ(put({{"enabled", {{"a", false}, {"b", true}}}}, w.auth()).status, 403) << "operators only";
  EXPECT_EQ(put({{"enabled", {{"a", false}, {"b", true}}}}, {{"X-Baton-Operator", "alice"}}).status, 204);
  auto clusters = call(*op, "GET", "/config/slurm-clusters").body["clusters"];
  ASSERT_EQ(clusters.size(), 2u);
  EXPECT_EQ(clusters[0]["enabled"], false);
  EXPECT_EQ(clusters[1]["enabled"], true);
  EXPECT_EQ(put({{"enabled", {{"a", false}, {"b", true}}}}).status, 204) << "no change is not an error";
  EXPECT_EQ(call(*op, "GET", "/healthz", nullptr, {}).body["warnings"], json::array());
  EXPECT_EQ(put({{"enabled", {{"a", false}, {"b", false}}}}).status, 204);
  auto health = call(*op, "GET", "/healthz", nullptr, {}).body;
  EXPECT_EQ(health["status"], "ok");
  EXPECT_EQ(health["warnings"], json({"Queued jobs are waiting, but all SLURM clusters are disabled for provisioning."}));
}

// Batch scripts carry the pilot token, not the operator's: it registers workers and nothing
// else. Without BATON_PILOT_TOKEN batond makes one in <data_dir>/pilot_token (mode 0600).
TEST_F(api, PilotTokenOnlyRegistersWorkers) {
  boot();
  auto file = dir / "data/pilot_token";
  ASSERT_TRUE(std::filesystem::exists(file));
  EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::string pilot;
  std::getline(std::ifstream(file), pilot);
  ASSERT_GE(pilot.size(), 16u);
  httplib::Headers as_pilot = {{"X-API-Token", pilot}};
  // Slurm pilots register with one-time credentials of their own; the pilot token, Salad
  // workers only (none here: Salad is not configured).
  auto reg = call(*op, "POST", "/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}}, as_pilot);
  EXPECT_EQ(reg.status, 403) << reg.body;
  EXPECT_EQ(reg.body.value("error", ""), "pilot_token_scope");
  reg = call(*op, "POST", "/workers/register", {{"platform", "salad"}, {"gpu_model", "A100"}, {"gpu_count", 1}}, as_pilot);
  EXPECT_EQ(reg.status, 429) << reg.body;
  EXPECT_EQ(reg.body.value("error", ""), "salad_replicas_registered");
  EXPECT_EQ(call(*op, "GET", "/workers").body.size(), 0u) << "nothing registered";
  auto w = enroll();
  create("for-pilot");
  for (auto [method, path] : std::vector<std::pair<std::string, std::string>>{{"GET", "/jobs"},
                                                                              {"POST", "/jobs"},
                                                                              {"GET", "/jobs/for-pilot/history"},
                                                                              {"DELETE", "/jobs/for-pilot"},
                                                                              {"POST", "/jobs/request?worker_id=" + w.id},
                                                                              {"GET", "/workers"}}) {
    auto r =
        call(*op, method, path, method == "POST" ? json{{"title", "t"}, {"input_bundle_path", "/b"}} : json(nullptr), as_pilot);
    EXPECT_EQ(r.status, 403) << method << " " << path;
    EXPECT_EQ(r.body.value("error", ""), "pilot_token_register_only") << method << " " << path;
  }
}

TEST_F(api, FairCompetitionAndSaladLast) {
  boot();
  create("fair");
  auto small = enroll("hpc", 1, "A10");
  auto big = enroll("hpc", 4, "H100");
  auto salad = enroll("salad", 8, "H100");
  auto r = poll(small);
  EXPECT_EQ(r.body["status"], "no_job_available") << "the lower-ranked worker polled first and must get nothing";
  EXPECT_EQ(poll(salad).body["status"], "no_job_available");
  EXPECT_EQ(poll(big).body["job_id"], uid("fair"));
  create("second");
  EXPECT_EQ(poll(salad).body["status"], "no_job_available") << "an HPC worker is idle";
  EXPECT_EQ(poll(small).body["job_id"], uid("second"));
  create("third");
  EXPECT_EQ(poll(salad).body["job_id"], uid("third")) << "no HPC worker is idle any more";
  auto history = call(*op, "GET", "/jobs/fair/history").body;
  auto decision = history["events"][1]["payload"]["decision"];
  EXPECT_EQ(decision["policy"], "greedy-rank-v1");
  EXPECT_EQ(decision["worker_id"], big.id);
}

TEST_F(api, PinsAndImagesAreRespected) {
  boot("jobs: {worker_images: [gcncmc]}\n");
  create("pinned", {{"preferred_clusters", {"clusterB"}}});
  create("gcmc", {{"worker_image_key", "gcncmc"}});
  auto a = enroll("hpc", 4, "H100", {{"provider_id", "clusterA:100"}});
  auto bw = enroll("hpc", 1, "A10", {{"provider_id", "clusterB:200"}});
  auto g = enroll("hpc", 1, "A10", {{"worker_image_key", "gcncmc"}});
  EXPECT_EQ(poll(a).body["status"], "no_job_available");
  EXPECT_EQ(poll(bw).body["job_id"], uid("pinned"));
  EXPECT_EQ(poll(g).body["job_id"], uid("gcmc"));
  auto workers = call(*op, "GET", "/workers?cluster=clusterB").body;
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0]["id"], bw.id);
  EXPECT_EQ(workers[0]["state"], "busy");
}

TEST_F(api, OnlyTheAssigneeCanChangeAJob) {
  boot();
  create("mine");
  auto owner = enroll(), other = enroll("hpc", 1, "A10");
  ASSERT_EQ(poll(owner).body["job_id"], uid("mine"));
  for (auto path : {"/jobs/mine/start", "/jobs/mine/complete", "/jobs/mine/fail"}) {
    auto r = as(other, "POST", path, json::object());
    EXPECT_EQ(r.status, 409) << path;
    EXPECT_EQ(r.body["error"], "job_not_assigned_to_worker") << path;
  }
  EXPECT_EQ(as(other, "POST", "/workers/" + owner.id + "/heartbeat").status, 403);
  EXPECT_EQ(as(other, "POST", "/jobs/request?worker_id=" + owner.id).status, 403);
  EXPECT_EQ(as(other, "GET", "/jobs").status, 403) << "a worker token is not an operator token";
  EXPECT_EQ(call(*op, "POST", "/jobs/mine/start").status, 401) << "shared token refused for worker calls by default";
  EXPECT_EQ(call(*op, "GET", "/jobs/mine").body["status"], "assigned");
}

TEST_F(api, CancelIsCooperative) {
  boot();
  create("q");
  EXPECT_EQ(call(*op, "DELETE", "/jobs/q").status, 204);
  EXPECT_EQ(call(*op, "GET", "/jobs/q").body["status"], "cancelled");
  EXPECT_EQ(call(*op, "DELETE", "/jobs/q").status, 409);
  create("r");
  auto w = enroll();
  poll(w);
  as(w, "POST", "/jobs/r/start");
  auto no_force = call(*op, "DELETE", "/jobs/r");
  EXPECT_EQ(no_force.status, 409);
  EXPECT_EQ(no_force.body["detail"], "Running job requires force=true");
  EXPECT_EQ(call(*op, "DELETE", "/jobs/r?force=true", nullptr, {{"X-Baton-Operator", "alice"}}).status, 204);
  auto control = as(w, "GET", "/jobs/r/control").body;
  EXPECT_EQ(control["status"], "cancelling");
  EXPECT_EQ(control["cancellation_requested"], true);
  EXPECT_EQ(as(w, "POST", "/jobs/r/complete").status, 409) << "a late complete cannot beat the cancel";
  create("next");
  auto r = poll(w);  // closes the cancelled job, then competes as usual
  EXPECT_EQ(r.body["job_id"], uid("next"));
  EXPECT_EQ(call(*op, "GET", "/jobs/r").body["status"], "cancelled");
  auto h = call(*op, "GET", "/jobs/r/history").body["events"];
  bool by_alice = false;
  for (auto& e : h) by_alice |= e["event_type"] == "job.cancel_requested" && e["actor"] == "operator:alice";
  EXPECT_TRUE(by_alice) << "operator actions carry the operator's identity";
}

TEST_F(api, DeregisterRequeuesAndRequeueResumesFromTheCheckpoint) {
  boot();
  create("d", {{"max_attempts", 3}});
  auto w1 = enroll();
  poll(w1);
  as(w1, "POST", "/jobs/d/start");
  as(w1, "POST", "/jobs/d/checkpoint", {{"checkpoint_manifest_path", "/ck/d/5.json"}});
  EXPECT_EQ(as(w1, "POST", "/workers/" + w1.id + "/deregister").status, 204);
  auto job = call(*op, "GET", "/jobs/d").body;
  EXPECT_EQ(job["status"], "queued");
  EXPECT_EQ(job["latest_checkpoint_manifest_path"], "/ck/d/5.json");
  auto w2 = enroll();
  auto got = poll(w2);
  EXPECT_EQ(got.body["job_id"], uid("d"));
  EXPECT_EQ(got.body["latest_checkpoint_manifest_path"], "/ck/d/5.json") << "the next worker resumes, not restarts";
  EXPECT_EQ(as(w2, "POST", "/jobs/d/fail", {{"reason", "payload_failed"}, {"failure_artifact_path", "/f/d"}}).status, 204);
  auto clone = call(*op, "POST", "/jobs/d/requeue");
  ASSERT_EQ(clone.status, 200) << clone.body;
  EXPECT_EQ(clone.body["latest_checkpoint_manifest_path"], "/ck/d/5.json");
  EXPECT_EQ(clone.body["requeued_from"], uid("d"));
  EXPECT_EQ(call(*op, "GET", "/jobs/d").body["requeued_to"][0], clone.body["id"]);
  EXPECT_EQ(call(*op, "POST", "/jobs/" + clone.body["id"].get<std::string>() + "/requeue").status, 409);
  auto again = call(*op, "POST", "/jobs/d/requeue");
  EXPECT_EQ(again.status, 409) << "a second requeue must not make a second clone";
  EXPECT_EQ(again.body["error"], "already_requeued");
  EXPECT_EQ(again.body["requeued_as"], clone.body["id"]);
  EXPECT_EQ(call(*op, "GET", "/jobs?status=queued").body.size(), 1u);
  EXPECT_EQ(call(*op, "GET", "/workers?state=gone").body[0]["gone_reason"], "deregistered");
}

TEST_F(api, UnknownImagesAreRefusedAndOneWorkerPerAllocation) {
  boot("jobs: {worker_images: [gromacs]}\n");
  auto r = call(*op, "POST", "/workers/register", {{"platform", "hpc"}, {"worker_image_key", "typo"}});
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body["field"], "worker_image_key");
  r = call(*op, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}, {"worker_image_key", "typo"}});
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body["field"], "worker_image_key");
  EXPECT_EQ(call(*op, "GET", "/jobs").body.size(), 0u);
  create("alloc", {{"worker_image_key", "gromacs"}});

  // The agent in allocation clusterA:7 restarts and registers again: the first worker retires
  // and its job goes back to the queue, so squeue's word on clusterA:7 concerns one worker.
  auto first = enroll("hpc", 1, "A100", {{"provider_id", "clusterA:7"}, {"worker_image_key", "gromacs"}});
  ASSERT_EQ(poll(first).body["job_id"], uid("alloc"));
  auto second = enroll("hpc", 1, "A100", {{"provider_id", "clusterA:7"}, {"worker_image_key", "gromacs"}});
  EXPECT_NE(second.id, first.id);
  auto live = call(*op, "GET", "/workers?cluster=clusterA&state=idle&state=busy&state=stale").body;
  ASSERT_EQ(live.size(), 1u) << live;
  EXPECT_EQ(live[0]["id"], second.id);
  EXPECT_EQ(call(*op, "GET", "/jobs/alloc").body["status"], "queued");
  EXPECT_EQ(poll(second).body["job_id"], uid("alloc"));
  EXPECT_EQ(as(first, "POST", "/jobs/alloc/start").status, 401) << "the retired worker has no credential any more";

  // Only an admin replaces a live worker: naming its provider id with a user's token or the
  // pilot token evicts nothing (it would requeue the job as lost, and five times fail it).
  auto made = call(*op, "POST", "/operators", {{"name", "mallory"}, {"role", "user"}});
  ASSERT_EQ(made.status, 200) << made.body;
  httplib::Client as_user("127.0.0.1", b->port());
  as_user.set_default_headers({{"X-API-Token", made.body["token"].get<std::string>()}});
  auto evict = call(as_user, "POST", "/workers/register",
                    {{"platform", "hpc"}, {"provider_id", "clusterA:7"}, {"worker_image_key", "gromacs"}});
  EXPECT_EQ(evict.status, 403) << evict.body;
  std::string pilot = test::slurp(dir / "data/pilot_token");
  pilot = pilot.substr(0, pilot.find('\n'));
  ASSERT_FALSE(pilot.empty());
  httplib::Client as_pilot("127.0.0.1", b->port());
  as_pilot.set_default_headers({{"X-API-Token", pilot}});
  auto as_pilot_token = call(as_pilot, "POST", "/workers/register",
                             {{"platform", "hpc"}, {"provider_id", "clusterA:7"}, {"worker_image_key", "gromacs"}});
  EXPECT_EQ(as_pilot_token.status, 403) << as_pilot_token.body;
  live = call(*op, "GET", "/workers?cluster=clusterA&state=idle&state=busy&state=stale").body;
  ASSERT_EQ(live.size(), 1u) << live;
  EXPECT_EQ(live[0]["id"], second.id);
  EXPECT_EQ(call(*op, "GET", "/jobs/alloc").body["assigned_worker_id"], second.id);
  EXPECT_EQ(as(second, "POST", "/jobs/alloc/start").status, 204);
}

TEST_F(api, PaginationAndFilters) {
  boot();
  for (int i = 0; i < 25; ++i) create("p" + std::to_string(100 + i));
  auto cli = b->client();
  auto res = cli->Get("/jobs?limit=10&offset=10");
  ASSERT_TRUE(res);
  auto page = json::parse(res->body);
  ASSERT_EQ(page.size(), 10u);
  EXPECT_EQ(res->get_header_value("X-Total-Count"), "25");
  EXPECT_EQ(page[0]["id"], uid("p114")) << "newest first";
  EXPECT_EQ(call(*op, "GET", "/jobs?status=completed").body.size(), 0u);
  call(*op, "DELETE", "/jobs/p100");
  EXPECT_EQ(call(*op, "GET", "/jobs?status=cancelled").body[0]["id"], uid("p100"));
}

TEST_F(api, StaleWorkerIsReapedAndItsJobRequeued) {
  boot(fast_config);
  create("s");
  auto w = enroll();
  ASSERT_EQ(poll(w).body["job_id"], uid("s"));
  as(w, "POST", "/jobs/s/start");
  // No more heartbeats: stale after 1.5 s, reaped by the next 1 s tick.
  json job;
  baton::test::wait_until(
      [&] {
        job = call(*op, "GET", "/jobs/s").body;
        return job["status"] == "queued";
      },
      std::chrono::seconds(30), std::chrono::milliseconds(50));
  EXPECT_EQ(job["status"], "queued");
  EXPECT_TRUE(job["assigned_worker_id"].is_null());
  auto gone = call(*op, "GET", "/workers?state=gone").body;
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0]["gone_reason"], "reaped");
  auto events = call(*op, "GET", "/jobs/s/history").body["events"];
  EXPECT_EQ(events.back()["event_type"], "job.requeued_after_reap");
  EXPECT_EQ(events.back()["actor"], "loop:reaper");
  EXPECT_EQ(as(w, "POST", "/workers/" + w.id + "/heartbeat").status, 401)
      << "a reaped worker has no credential: it registers again";
  EXPECT_EQ(as(w, "POST", "/jobs/s/complete").status, 401) << "the reaped worker can no longer finish the job";
  ASSERT_EQ(b->stop(), 0) << b->err();
  b->start();
  ASSERT_GT(b->port(), 0) << b->err();
  op = b->client();
  EXPECT_EQ(as(w, "POST", "/workers/" + w.id + "/heartbeat").status, 401) << "nor after a restart";
}

TEST_F(api, HandoffIsRecoveredWhenTheWorkerDies) {
  boot(fast_config);
  create("h");
  auto w = enroll();
  ASSERT_EQ(poll(w).body["job_id"], uid("h"));
  as(w, "POST", "/jobs/h/start");
  as(w, "POST", "/jobs/h/checkpoint", {{"checkpoint_manifest_path", "/ck/h/2.json"}});
  EXPECT_EQ(as(w, "POST", "/jobs/h/handoff/start", {{"reason", "walltime"}}).status, 204);
  EXPECT_EQ(call(*op, "GET", "/jobs/h").body["status"], "handoff");
  json job;
  baton::test::wait_until(
      [&] {
        job = call(*op, "GET", "/jobs/h").body;
        return job["status"] == "queued";
      },
      std::chrono::seconds(30), std::chrono::milliseconds(50));
  EXPECT_EQ(job["status"], "queued") << "RelayMD leaves this job in handoff forever";
  EXPECT_EQ(job["latest_checkpoint_manifest_path"], "/ck/h/2.json");
}

TEST_F(api, HandoffCompleteRequeuesWithTheNewCheckpoint) {
  boot();
  create("hc");
  auto w = enroll();
  poll(w);
  EXPECT_EQ(as(w, "POST", "/jobs/hc/handoff/start", {{"reason", "walltime"}}).status, 409) << "only from running";
  as(w, "POST", "/jobs/hc/start");
  EXPECT_EQ(as(w, "POST", "/jobs/hc/handoff/complete").status, 409) << "only from handoff";
  EXPECT_EQ(as(w, "POST", "/jobs/hc/handoff/start", {{"reason", "walltime"}, {"deadline_epoch_seconds", 1.9e9}}).status, 204);
  EXPECT_EQ(as(w, "POST", "/jobs/hc/handoff/complete", {{"checkpoint_path", "/ck/hc/9.json"}}).status, 204);
  auto job = call(*op, "GET", "/jobs/hc").body;
  EXPECT_EQ(job["status"], "queued");
  EXPECT_EQ(job["latest_checkpoint_manifest_path"], "/ck/hc/9.json");
}

TEST_F(api, SharedTokenWorkersWhenAllowed) {
  boot("workers: {accept_shared_token: true}\n");
  create("relaymd");
  auto w = enroll();
  auto r = call(*op, "POST", "/jobs/request?worker_id=" + w.id);
  EXPECT_EQ(r.body["job_id"], uid("relaymd"));
  EXPECT_EQ(call(*op, "POST", "/jobs/relaymd/start").status, 204);
  EXPECT_EQ(call(*op, "POST", "/workers/" + w.id + "/heartbeat", {{"job_id", uid("relaymd")}, {"progress", 0.2}}).status, 204);
  EXPECT_EQ(call(*op, "POST", "/jobs/relaymd/complete").status, 204);
  EXPECT_EQ(call(*op, "POST", "/workers/" + uid("unknown") + "/heartbeat").status, 404);
  EXPECT_EQ(call(*op, "POST", "/jobs/request?worker_id=" + uid("unknown")).body["status"], "no_job_available");
  EXPECT_EQ(call(*op, "POST", "/workers/unknown/heartbeat").body["field"], "id") << "ids are UUIDs";
}

TEST_F(api, PruneKeepsHistoryAuditable) {
  boot();
  create("old");
  call(*op, "DELETE", "/jobs/old");
  EXPECT_EQ(call(*op, "DELETE", "/jobs?older_than_days=1").body["deleted"], 0) << "too recent";
  EXPECT_EQ(call(*op, "GET", "/jobs/old/history").status, 200);
}

TEST_F(api, APrunedJobIsAnsweredFromTheLogAndItsIdStaysTaken) {
  boot();
  create("old", {{"comment", "kept in the log"}});
  create("young");
  ASSERT_EQ(call(*op, "DELETE", "/jobs/old").status / 100, 2);
  EXPECT_EQ(call(*op, "DELETE", "/jobs?older_than_minutes=0&older_than_days=1").body["field"], "older_than_minutes");
  EXPECT_EQ(call(*op, "DELETE", "/jobs?older_than_minutes=-1").body["field"], "older_than_minutes");
  EXPECT_EQ(call(*op, "DELETE", "/jobs?older_than_minutes=0").body["deleted"], 1) << "everything ended so far";
  auto check = [&](const char* when) {
    auto got = call(*op, "GET", "/jobs/old");
    EXPECT_EQ(got.status, 200) << when << got.body;
    EXPECT_EQ(got.body["comment"], "kept in the log") << when << ": the whole record, from the job's stream";
    EXPECT_EQ(got.body["status"], "cancelled") << when;
    EXPECT_EQ(got.body["pruned"], true) << when;
    auto listed = call(*op, "GET", "/jobs");
    ASSERT_EQ(listed.body.size(), 1u) << when;
    EXPECT_EQ(listed.body[0]["id"], uid("young")) << when;
    auto all = call(*op, "GET", "/jobs?include_pruned=true&status=cancelled");
    ASSERT_EQ(all.body.size(), 1u) << when;
    EXPECT_EQ(all.body[0]["title"], "job old") << when;
    EXPECT_EQ(all.body[0]["pruned"], true) << when;
    EXPECT_EQ(call(*op, "GET", "/jobs/old/history").status, 200) << when;
    EXPECT_EQ(call(*op, "POST", "/jobs", {{"id", uid("old")}, {"title", "t"}, {"input_bundle_path", "/b"}}).body["error"],
              "job_exists")
        << when;
    EXPECT_EQ(call(*op, "POST", "/jobs/old/requeue").status, 409) << when;
    EXPECT_EQ(call(*op, "DELETE", "/jobs/old").body["error"], "job_pruned") << when;
  };
  check("at once");
  ASSERT_EQ(b->stop(), 0) << b->err();
  b->start();
  ASSERT_GT(b->port(), 0) << b->err();
  op = b->client();
  check("after a restart");
}

namespace {

// Fields computed from the clock at request time, not state.
json without_clock_fields(json list) {
  for (auto& item : list)
    for (auto key : {"runtime_seconds", "etc_seconds", "ett_seconds"}) item.erase(key);
  return list;
}

}  // namespace

TEST_F(api, RestartRebuildsEveryJobAndWorkerExactly) {
  boot();
  for (int i = 0; i < 6; ++i)
    create("r" + std::to_string(i), {{"preferred_clusters", i % 2 ? json({"clusterA"}) : json::array()}});
  auto a = enroll("hpc", 2, "A100", {{"provider_id", "clusterA:1"}});
  auto c = enroll("salad", 1, "RTX 4090");
  auto d = enroll("hpc", 1, "A10");
  poll(a);
  poll(d);
  as(a, "POST", "/jobs/r0/start");
  as(a, "POST", "/jobs/r0/checkpoint", {{"checkpoint_manifest_path", "/ck/r0/1.json"}, {"progress", 0.3}});
  as(a, "POST", "/jobs/r0/complete");
  call(*op, "DELETE", "/jobs/r5");
  as(c, "POST", "/workers/" + c.id + "/deregister");
  auto jobs_before = without_clock_fields(call(*op, "GET", "/jobs?limit=100").body);
  auto workers_before = call(*op, "GET", "/workers?state=idle&state=busy&state=stale&state=gone").body;
  std::map<std::string, json> histories_before;
  for (auto id : {"r0", "r1", "r5"}) histories_before[id] = call(*op, "GET", "/jobs/" + std::string(id) + "/history").body;
  ASSERT_EQ(b->stop(), 0) << b->err();
  b->start();
  ASSERT_GT(b->port(), 0) << b->err();
  op = b->client();
  EXPECT_EQ(without_clock_fields(call(*op, "GET", "/jobs?limit=100").body), jobs_before);
  EXPECT_EQ(call(*op, "GET", "/workers?state=idle&state=busy&state=stale&state=gone").body, workers_before);
  // The history projection was rebuilt from sequence 1 before batond answered.
  for (auto& [id, h] : histories_before) EXPECT_EQ(call(*op, "GET", "/jobs/" + id + "/history").body, h) << id;
  // Worker credentials survive too: only their hashes were logged.
  EXPECT_EQ(as(d, "POST", "/workers/" + d.id + "/heartbeat").status, 204);
}

TEST_F(api, HistoryReadRightAfterAnAcknowledgedCreateShowsIt) {
  boot();
  // The projection applies events a moment after their reply is sent; the read must wait.
  for (int i = 0; i < 200; ++i) {
    std::string id = "h" + std::to_string(i);
    create(id);
    auto h = call(*op, "GET", "/jobs/" + id + "/history");
    ASSERT_EQ(h.status, 200) << "read " << i << ": " << h.body;
    ASSERT_EQ(h.body["events"][0]["event_type"], "job.created") << h.body;
  }
}

TEST_F(api, EveryDecisionReDerivesFromTheLog) {
  boot();
  std::vector<worker_handle> ws;
  const char* models[] = {"A10", "H100", "A100", "RTX 4090"};
  for (int i = 0; i < 8; ++i)
    ws.push_back(enroll(i % 3 ? "hpc" : "salad", 1 + i % 2, models[i % 4],
                        i % 2 ? json({{"provider_id", "clusterA:" + std::to_string(i)}}) : json::object()));
  for (int i = 0; i < 12; ++i)
    create("d" + std::to_string(i), {{"preferred_clusters", i % 4 == 3 ? json({"clusterA"}) : json::array()}});
  int assigned = 0;
  for (int round = 0; round < 4; ++round)
    for (auto& w : ws) {
      auto r = poll(w);
      if (r.body["status"] == "assigned") {
        ++assigned;
        as(w, "POST", "/jobs/" + r.body["job_id"].get<std::string>() + "/complete");
      }
    }
  EXPECT_EQ(assigned, 12);
  ASSERT_EQ(b->stop(), 0);
  test::child_process tool({BATOND_PATH, "--data-dir", dir / "data", "--rederive"}, dir / "rederive", {"BATON_CONFIG=/dev/null"});
  EXPECT_EQ(test::exit_code(tool.wait()), 0) << tool.err();
  EXPECT_NE(tool.out().find("ok: 12 assignment decisions"), std::string::npos) << tool.out();
  b->start();  // for TearDown
}

// A worker rotates its own credential without missing a beat: the new token works at once,
// the old one until its deadline (grace 0: at once), across a restart too; another worker
// cannot rotate it, and a job held through the rotation is finished with the new token.
TEST_F(api, WorkerCredentialsRotateWithoutDowntime) {
  boot();
  create("rot-job");
  auto w = enroll();
  auto other = enroll();
  ASSERT_EQ(poll(w).body.value("status", ""), "assigned");
  ASSERT_EQ(as(w, "POST", "/jobs/rot-job/start").status, 204);

  auto stolen = call(*op, "POST", "/workers/" + w.id + "/credential", {{"grace_seconds", 60}}, other.auth());
  EXPECT_EQ(stolen.status, 403) << stolen.body;
  EXPECT_EQ(stolen.body.value("error", ""), "other_worker");
  EXPECT_EQ(call(*op, "POST", "/workers/" + w.id + "/credential").status, 401) << "the operator token is no worker's";

  auto r = as(w, "POST", "/workers/" + w.id + "/credential", {{"grace_seconds", 3600}});
  ASSERT_EQ(r.status, 200) << r.body;
  worker_handle w2{w.id, r.body.value("token", "")};
  ASSERT_EQ(w2.token.rfind(w.id + ".", 0), 0u);
  EXPECT_TRUE(r.body["previous_token_valid_until"].is_string());
  EXPECT_EQ(as(w, "POST", "/workers/" + w.id + "/heartbeat").status, 204) << "the old token, within its grace";
  EXPECT_EQ(as(w2, "POST", "/workers/" + w.id + "/heartbeat").status, 204);
  EXPECT_EQ(as(w, "POST", "/jobs/rot-job/checkpoint", {{"checkpoint_manifest_path", "/ck/1.json"}}).status, 204);

  // Survives a restart: the rule is derived from the log.
  ASSERT_EQ(b->stop(), 0);
  b->start();
  ASSERT_GT(b->port(), 0) << b->err();
  op = b->client();
  EXPECT_EQ(as(w, "POST", "/workers/" + w.id + "/heartbeat").status, 204);
  EXPECT_EQ(as(w2, "POST", "/workers/" + w.id + "/heartbeat").status, 204);

  // Rotated again with no grace: the one before is refused at once (and the first too).
  auto again = as(w2, "POST", "/workers/" + w.id + "/credential", {{"grace_seconds", 0}});
  ASSERT_EQ(again.status, 200) << again.body;
  worker_handle w3{w.id, again.body.value("token", "")};
  EXPECT_EQ(as(w2, "POST", "/workers/" + w.id + "/heartbeat").status, 401);
  EXPECT_EQ(as(w, "POST", "/workers/" + w.id + "/heartbeat").status, 401);
  EXPECT_EQ(as(w3, "POST", "/jobs/rot-job/complete").status, 204);
  EXPECT_EQ(call(*op, "GET", "/jobs/rot-job").body.value("status", ""), "completed");
  EXPECT_EQ(as(w3, "POST", "/workers/" + w.id + "/credential", {{"grace_seconds", "a while"}}).status, 422);
}
