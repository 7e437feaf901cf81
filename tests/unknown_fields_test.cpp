// Fields a request body may hold, against a real batond over HTTP: a misspelt or unknown
// field is a 422 naming it and the known field it most likely means, and nothing is recorded
// (before, "gpus": 2 made a 1-GPU job without a word); every field RelayMD's worker and
// clients send, its deprecated checkpoint_path included, is still accepted.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/metrics_text.hpp"
#include "support/wait_until.hpp"

using namespace baton;
using nlohmann::json;

namespace {

// No periodic loop appends during a test ("nothing is recorded" compares the log's end); two
// clusters for the pins and the enabled map, whose one provisioning cycle (at start) SetUp
// waits for: a first cycle that ran late found the test's job queued and recorded its failed
// sbatch in the middle of a test.
const char* config = R"(workers: {heartbeat_interval_seconds: 600, reaper_interval_seconds: 600}
scheduling: {priority_calc_period_seconds: 86400}
provisioning: {interval_seconds: 3600}
clusters:
  - {name: a, partition: no-such-partition-a, worker_images: {default: {}}}
  - {name: b, partition: no-such-partition-b, worker_images: {default: {}}}
)";

const std::string digest(64, 'a');

struct reply {
  int status = 0;
  json body;
  std::string text;
};

struct unknown_fields : ::testing::Test {
  test::temp_dir dir;
  std::unique_ptr<test::batond_process> d;
  std::string worker_id, worker_token;

  void SetUp() override {
    d = std::make_unique<test::batond_process>(dir, config);
    ASSERT_GT(d->port(), 0) << d->err();
    ASSERT_TRUE(test::wait_until(
        [&] {
          auto m = httplib::Client("127.0.0.1", d->port()).Get("/metrics", as_admin());
          return m && m->status == 200 && test::metric_total(m->body, "baton_cluster_cycles_total", "cluster=\"a\"") >= 1 &&
                 test::metric_total(m->body, "baton_cluster_cycles_total", "cluster=\"b\"") >= 1;
        },
        std::chrono::seconds(60)))
        << "each cluster's first provisioning cycle";
  }
  void TearDown() override {
    if (d) {
      EXPECT_EQ(d->stop(), 0) << d->err();
    }
  }

  httplib::Headers as_admin() const { return {{"X-API-Token", test::test_token}}; }
  httplib::Headers as_worker() const { return {{"X-Worker-Token", worker_token}}; }
  reply call(const std::string& method, const std::string& path, const json& body, const httplib::Headers& headers) {
    httplib::Client c("127.0.0.1", d->port());
    c.set_read_timeout(60, 0);
    const std::string text = body.is_null() ? std::string() : body.dump();
    httplib::Result r = method == "GET"   ? c.Get(path.c_str(), headers)
                        : method == "PUT" ? c.Put(path.c_str(), headers, text, "application/json")
                                          : c.Post(path.c_str(), headers, text, "application/json");
    if (!r) return {-1, nullptr, ""};
    return {r->status, json::parse(r->body, nullptr, false), r->body};
  }
  reply op(const std::string& method, const std::string& path, const json& body = nullptr) {
    return call(method, path, body, as_admin());
  }
  reply worker(const std::string& method, const std::string& path, const json& body = nullptr) {
    return call(method, path, body, as_worker());
  }
  uint64_t last_seq() {
    httplib::Client c("127.0.0.1", d->port());
    auto h = c.Get("/healthz");
    return h ? json::parse(h->body).value("last_sequence", uint64_t{0}) : 0;
  }
  // "sequence type actor" of each event recorded after `seq`, for a failure's message.
  std::string recorded_after(uint64_t seq) {
    auto r = httplib::Client("127.0.0.1", d->port()).Get("/audit/export", as_admin());
    if (!r) return "(no export)";
    std::string out;
    std::istringstream lines(r->body);
    for (std::string line; std::getline(lines, line);) {
      auto e = json::parse(line, nullptr, false);
      if (e.is_object() && e.value("seq", uint64_t{0}) > seq)
        out += "\n  " + std::to_string(e.value("seq", uint64_t{0})) + " " + e.value("type", "") + " " + e.value("actor", "");
    }
    return out;
  }

  // Registers a worker with `registration` and has it take and start the job queued first.
  void register_and_start(const json& registration, const std::string& job) {
    auto r = op("POST", "/workers/register", registration);
    ASSERT_EQ(r.status, 200) << r.text;
    worker_id = r.body["worker_id"];
    worker_token = r.body["worker_token"];
    auto poll = worker("POST", "/jobs/request?worker_id=" + worker_id);
    ASSERT_EQ(poll.status, 200) << poll.text;
    ASSERT_EQ(poll.body.value("job_id", ""), job) << poll.text;
    ASSERT_EQ(worker("POST", "/jobs/" + job + "/start").status / 100, 2);
  }
};

// The 422 for an unknown field: in the shape every other 422 has (FastAPI's detail list for
// RelayMD clients, and baton's error/field/message), naming the field and, when one is close,
// the field meant.
void expect_unknown(const reply& r, const std::string& field, const std::string& meant, const std::string& what) {
  EXPECT_EQ(r.status, 422) << what << ": " << r.text;
  EXPECT_EQ(r.body.value("error", ""), "validation_error") << what << ": " << r.text;
  EXPECT_EQ(r.body.value("field", ""), field) << what << ": " << r.text;
  ASSERT_TRUE(r.body["detail"].is_array()) << what << ": " << r.text;
  EXPECT_EQ(r.body["detail"][0]["loc"], json({"body", field})) << what << ": " << r.text;
  const std::string msg = r.body["detail"][0].value("msg", "");
  EXPECT_NE(msg.find("unknown field '" + field.substr(field.rfind('.') + 1) + "'"), std::string::npos) << what << ": " << msg;
  EXPECT_NE(msg.find("did you mean '" + meant + "'?"), std::string::npos) << what << ": " << msg;
  EXPECT_NE(r.body.value("message", "").find(msg), std::string::npos) << what << ": " << r.text;
}

}  // namespace

// The issue's case: "gpus": 2 was read as no gpu_count at all, and the job asked for one GPU.
TEST_F(unknown_fields, AMisspeltJobFieldIsRefusedNamingTheFieldMeantAndNothingIsRecorded) {
  const uint64_t before = last_seq();
  auto r = op("POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b/t"}, {"gpus", 2}});
  expect_unknown(r, "gpus", "gpu_count", "POST /jobs");
  EXPECT_EQ(last_seq(), before) << "a refused job is not recorded; recorded:" << recorded_after(before);
  EXPECT_EQ(op("GET", "/jobs").body.size(), 0u);

  auto good = op("POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b/t"}, {"gpu_count", 2}});
  ASSERT_EQ(good.status, 200) << good.text;
  EXPECT_EQ(good.body["gpu_count"], 2);
}

// A name close to none is refused too, and the answer lists the fields there are.
TEST_F(unknown_fields, AFieldCloseToNoneIsRefusedListingTheKnownFields) {
  auto r = op("POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b/t"}, {"walltime", 600}});
  EXPECT_EQ(r.status, 422) << r.text;
  EXPECT_EQ(r.body.value("field", ""), "walltime");
  const std::string msg = r.body.value("message", "");
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
  for (const char* known : {"title", "input_bundle_path", "gpu_count", "time_limit_seconds", "depends_on"})
    EXPECT_NE(msg.find(known), std::string::npos) << known << " in " << msg;
}

// Every route that reads a body, operator's and worker's: a misspelt field is named with the
// field meant, and nothing is recorded.
TEST_F(unknown_fields, EachRouteWithABodyNamesAMisspeltFieldAndTheFieldMeant) {
  ASSERT_EQ(op("POST", "/jobs", {{"title", "j"}, {"input_bundle_path", "/b/j"}, {"id", test::uid("j")}}).status, 200);
  register_and_start({{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}, {"vram_gb", 80}}, test::uid("j"));
  ASSERT_EQ(op("POST", "/operators", {{"name", "zed"}, {"role", "user"}}).status, 200);
  const std::string job = "/jobs/" + test::uid("j");
  struct {
    bool by_worker;
    std::string method, path;
    json body;
    std::string field, meant;
  } cases[] = {
      {false, "POST", "/jobs", {{"titel", "t"}, {"input_bundle_path", "/b"}}, "titel", "title"},
      {false, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}, {"GPU-Count", 2}}, "GPU-Count", "gpu_count"},
      {false,
       "POST",
       "/jobs",
       {{"title", "t"}, {"input_bundle_path", "/b"}, {"depends", json::array()}},
       "depends",
       "depends_on"},
      {false,
       "POST",
       "/jobs",
       {{"title", "t"}, {"input_bundle", {{"sha256", digest}, {"sise", 3}}}},
       "input_bundle.sise",
       "size"},
      {false, "POST", "/workers/register", {{"platform", "hpc"}, {"gpu_cout", 1}}, "gpu_cout", "gpu_count"},
      {false, "PUT", "/config/slurm-clusters/enabled", {{"enable", {{"a", true}, {"b", true}}}}, "enable", "enabled"},
      {false, "POST", "/clusters/a/disable", {{"reasn", "maintenance"}}, "reasn", "reason"},
      {false, "POST", "/operators", {{"name", "amy"}, {"rol", "user"}}, "rol", "role"},
      {false, "POST", "/operators/zed/token", {{"grace", 60}}, "grace", "grace_seconds"},
      {false, "POST", "/pilot-token", {{"graceSeconds", 60}}, "graceSeconds", "grace_seconds"},
      {false, "POST", "/ui/login", {{"tokn", test::test_token}}, "tokn", "token"},
      {false, "POST", "/blobs/uploads", {{"purpose", "bundle"}, {"sha256", digest}, {"size", 3}, {"sizes", 3}}, "sizes", "size"},
      {true, "POST", "/workers/" + worker_id + "/heartbeat", {{"progres", 0.5}}, "progres", "progress"},
      {true, "POST", "/workers/" + worker_id + "/credential", {{"grace_second", 60}}, "grace_second", "grace_seconds"},
      {true,
       "POST",
       job + "/checkpoint",
       {{"checkpoint_manifest", "/ck/1.json"}},
       "checkpoint_manifest",
       "checkpoint_manifest_path"},
      {true, "POST", job + "/handoff/start", {{"reason", "walltime"}, {"deadline", 2e9}}, "deadline", "deadline_epoch_seconds"},
      {true, "POST", job + "/handoff/complete", {{"progress_code", json::array()}}, "progress_code", "progress_codes"},
      {true, "POST", job + "/fail", {{"reason", "x"}, {"details", "y"}}, "details", "detail"},
      {true, "POST", job + "/files", {{"kind", "output"}, {"atempt", 1}, {"files", json::array()}}, "atempt", "attempt"},
      {true,
       "POST",
       job + "/files",
       {{"kind", "output"}, {"attempt", 1}, {"files", {{{"path", "a"}, {"sha256", digest}, {"sise", 3}}}}},
       "files[0].sise",
       "size"},
  };
  const uint64_t before = last_seq();
  for (const auto& c : cases) {
    auto r = c.by_worker ? worker(c.method, c.path, c.body) : op(c.method, c.path, c.body);
    expect_unknown(r, c.field, c.meant, c.method + " " + c.path + " " + c.body.dump());
  }
  EXPECT_EQ(last_seq(), before) << "nothing refused is recorded; recorded:" << recorded_after(before);
  EXPECT_EQ(op("GET", job).body.value("status", ""), "running");
}

// What RelayMD's worker and CLI send, field for field (its JobCreate, WorkerRegister,
// heartbeat, checkpoint report with the deprecated checkpoint_path, handoff, failure report
// and the enabled map): all accepted.
TEST_F(unknown_fields, EveryFieldRelayMDsWorkerAndClientsSendIsAccepted) {
  const std::string id = test::uid("relaymd");
  auto created = op("POST", "/jobs",
                    {{"id", id},
                     {"title", "md"},
                     {"input_bundle_path", "/b/md"},
                     {"worker_image_key", "default"},
                     {"preferred_clusters", json::array()},
                     {"comment", "from relaymd submit"}});
  ASSERT_EQ(created.status, 200) << created.text;
  auto pinned =
      op("POST", "/jobs",
         {{"title", "pinned"}, {"input_bundle_path", "/b/pinned"}, {"preferred_clusters", {"a"}}, {"comment", nullptr}});
  ASSERT_EQ(pinned.status, 200) << pinned.text;
  // RelayMD's client sends provider_id null off Slurm.
  register_and_start({{"platform", "salad"},
                      {"gpu_model", "RTX 4090"},
                      {"gpu_count", 1},
                      {"vram_gb", 24},
                      {"worker_image_key", "default"},
                      {"provider_id", nullptr}},
                     id);
  const std::string job = "/jobs/" + id;
  auto hb = worker("POST", "/workers/" + worker_id + "/heartbeat",
                   {{"job_id", id}, {"progress", 0.1}, {"progress_codes", {"progress_ok"}}});
  EXPECT_EQ(hb.status / 100, 2) << hb.text;
  // RelayMD's gateway sends the manifest's key as checkpoint_path (the deprecated alias) only.
  auto ck = worker("POST", job + "/checkpoint",
                   {{"checkpoint_path", "jobs/md/checkpoints/manifest.json"},
                    {"progress", 0.2},
                    {"progress_codes", json::array()},
                    {"checkpoint_cycle_status", "partial_failure"},
                    {"checkpoint_cycle_failures", {{{"code", "file_disappeared"}, {"detail", "out.dcd"}}}}});
  EXPECT_EQ(ck.status, 204) << ck.text;
  EXPECT_EQ(op("GET", job).body.value("latest_checkpoint_manifest_path", ""), "jobs/md/checkpoints/manifest.json");
  auto both = worker("POST", job + "/checkpoint",
                     {{"checkpoint_manifest_path", "jobs/md/checkpoints/manifest.json"},
                      {"checkpoint_path", "jobs/md/checkpoints/manifest.json"},
                      {"checkpoint_cycle_status", "success"}});
  EXPECT_EQ(both.status, 204) << both.text;
  auto start = worker("POST", job + "/handoff/start",
                      {{"reason", "allocation_deadline"},
                       {"progress", 0.3},
                       {"progress_codes", json::array()},
                       {"deadline_epoch_seconds", 4102444800.0},
                       {"message", "allocation ends"}});
  EXPECT_EQ(start.status, 204) << start.text;
  auto complete = worker("POST", job + "/handoff/complete",
                         {{"checkpoint_manifest_path", "jobs/md/checkpoints/manifest.json"},
                          {"checkpoint_path", "jobs/md/checkpoints/manifest.json"},
                          {"progress", 0.3},
                          {"progress_codes", json::array()},
                          {"checkpoint_cycle_status", "success"},
                          {"checkpoint_cycle_failures", json::array()}});
  EXPECT_EQ(complete.status, 204) << complete.text;
  EXPECT_EQ(op("GET", job).body.value("status", ""), "queued");

  // The same job again, to fail it as RelayMD's worker does.
  auto poll = worker("POST", "/jobs/request?worker_id=" + worker_id);
  ASSERT_EQ(poll.body.value("job_id", ""), id) << poll.text;
  ASSERT_EQ(worker("POST", job + "/start").status / 100, 2);
  auto fail =
      worker("POST", job + "/fail",
             {{"failure_artifact_path", "jobs/md/failures/x/manifest.json"}, {"reason", "payload_failed"}, {"detail", "exit 1"}});
  EXPECT_EQ(fail.status, 204) << fail.text;
  EXPECT_EQ(op("GET", job).body.value("status", ""), "failed");

  auto enabled = op("PUT", "/config/slurm-clusters/enabled", {{"enabled", {{"a", true}, {"b", false}}}});
  EXPECT_EQ(enabled.status / 100, 2) << enabled.text;
}
