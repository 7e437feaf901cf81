// Time in the model over real HTTP: a worker reports when its allocation ends at
// registration (validated, shown), jobs say whether they checkpoint, and the configured
// deadline rule decides what a pilot with little time left is given.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>

#include "core/util/time.hpp"
#include "support/batond_process.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;

namespace {

// Not the defaults (3600, 600), so the test sees that the keys reach the decisions.
const char* config = R"(scheduling:
  default_time_limit_seconds: 300
  min_useful_seconds: 120
)";

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct daemon_under_test {
  test::temp_dir dir;
  test::batond_process d{dir, config};
  std::unique_ptr<httplib::Client> op = d.client();

  json post(const std::string& path, const json& body, int expect = 200) {
    auto r = op->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, expect) << path << ": " << r->body;
    return r->body.empty() ? json(nullptr) : json::parse(r->body);
  }
  json get(const std::string& path) {
    auto r = op->Get(path.c_str());
    EXPECT_TRUE(r && r->status == 200) << path << ": " << (r ? r->body : "no reply");
    return r ? json::parse(r->body) : json(nullptr);
  }
  json worker_row(const std::string& id) {
    for (const auto& w : get("/workers"))  // a bare list (RelayMD's shape)
      if (w["id"] == id) return w;
    return nullptr;
  }
  std::string job(const std::string& name, json fields = json::object()) {
    fields["id"] = test::uid(name);
    fields["title"] = name;
    fields["input_bundle_path"] = "/b/" + name;
    post("/jobs", fields);
    return fields["id"];
  }
  // The job id a worker's poll is given ("" for none).
  std::string poll(const json& reg) {
    httplib::Client c("127.0.0.1", d.port());
    auto path = "/jobs/request?worker_id=" + reg["worker_id"].get<std::string>();
    auto r = c.Post(path.c_str(), {{"X-Worker-Token", reg["worker_token"].get<std::string>()}}, "", "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    return r ? json::parse(r->body).value("job_id", "") : "";
  }
};

}  // namespace

TEST(deadline_http, RegistrationAcceptsAndShowsAllocationEndsAt) {
  daemon_under_test t;
  auto ends = util::format_time_us((now_us() / 1'000'000 + 3600) * 1'000'000);
  auto reg = t.post("/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}, {"allocation_ends_at", ends}});
  ASSERT_TRUE(reg.is_object());
  EXPECT_EQ(t.worker_row(reg["worker_id"])["allocation_ends_at"], ends);
  // Any RFC 3339 offset is accepted and shown in UTC.
  auto offset = t.post("/workers/register", {{"platform", "hpc"}, {"allocation_ends_at", "2999-01-01T02:00:00+02:00"}});
  EXPECT_EQ(t.worker_row(offset["worker_id"])["allocation_ends_at"], "2999-01-01T00:00:00.000000Z");
  // RelayMD's workers do not send it: no known end.
  auto relaymd = t.post("/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}});
  EXPECT_TRUE(t.worker_row(relaymd["worker_id"])["allocation_ends_at"].is_null());
}

TEST(deadline_http, MalformedOrPastAllocationEndsAtIs422NamingIt) {
  daemon_under_test t;
  for (json bad : {json("tomorrow"), json("2999-01-01T00:00:00"), json("2999-02-30T00:00:00Z"), json(1893499200)}) {
    auto r = t.post("/workers/register", {{"platform", "hpc"}, {"allocation_ends_at", bad}}, 422);
    EXPECT_EQ(r.value("field", ""), "allocation_ends_at") << bad << " -> " << r.dump();
    EXPECT_EQ(r["detail"][0]["loc"][1], "allocation_ends_at") << r.dump();
  }
  auto past = t.post("/workers/register", {{"platform", "hpc"}, {"allocation_ends_at", "2001-01-01T00:00:00Z"}}, 422);
  EXPECT_EQ(past.value("field", ""), "allocation_ends_at") << past.dump();
  EXPECT_EQ(t.get("/workers"), json::array()) << "nothing registered";
}

TEST(deadline_http, CheckpointsFieldIsValidatedAndShown) {
  daemon_under_test t;
  auto r = t.post("/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}, {"checkpoints", "no"}}, 422);
  EXPECT_EQ(r.value("field", ""), "checkpoints") << r.dump();
  EXPECT_EQ(t.get("/jobs/" + t.job("plain"))["checkpoints"], true) << "checkpointing is the default";
  EXPECT_EQ(t.get("/jobs/" + t.job("nocp", {{"checkpoints", false}}))["checkpoints"], false);
}

TEST(deadline_http, PilotIsGivenOnlyWhatFitsItsAllocationUnderTheConfiguredRule) {
  daemon_under_test t;
  auto ten_minutes = util::format_time_us(now_us() + 600'000'000);
  auto pilot = t.post("/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}, {"allocation_ends_at", ten_minutes}});
  auto hour = t.job("hour", {{"time_limit_seconds", 3600}, {"checkpoints", false}});
  EXPECT_EQ(t.poll(pilot), "") << "an hour without checkpoints does not fit ten minutes";
  EXPECT_EQ(t.get("/jobs/" + hour)["status"], "queued");
  // No limit: the configured default (300 s) fits; with the built-in 3600 s it would not.
  auto no_limit = t.job("no-limit", {{"checkpoints", false}});
  ASSERT_EQ(t.poll(pilot), no_limit);
  json decision, history = t.get("/jobs/" + no_limit + "/history");
  for (const auto& e : history["events"])
    if (e["event_type"] == "job.assigned") decision = e["payload"]["decision"];
  ASSERT_TRUE(decision.is_object()) << history.dump();
  EXPECT_EQ(decision["deadline"]["rule"], "fits") << decision.dump();
  EXPECT_EQ(decision["deadline"]["time_limit_seconds"], 300);
  EXPECT_EQ(decision["deadline"]["min_useful_seconds"], 120);
  EXPECT_GT(decision["deadline"]["remaining_seconds"].get<int64_t>(), 500);
  EXPECT_LE(decision["deadline"]["remaining_seconds"].get<int64_t>(), 600);
}
