// Who goes first, end to end against a real batond over loopback: the job fields and their
// validation, fair share between two accounts (the one that used more waits, and
// GET /fairshare shows why), hold and release, the per-user cap (429), sprio's shape.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/batond_process.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;

namespace {

const char* config = R"(scheduling:
  policy: multifactor
  priority_calc_period_seconds: 3600   # recalculated on demand below
  max_jobs_per_user: 3
  partitions:
    normal: {priority_tier: 1, priority_factor: 1}
    test: {priority_tier: 100, priority_factor: 10}
  qos:
    normal: {priority_factor: 0}
    2h: {priority_factor: 100}
accounts:
  chem: {shares: 50, users: {ann: 1}}
  phys: {shares: 50, users: {cy: 1}}
)";

struct daemon_under_test {
  test::temp_dir dir;
  test::batond_process d{dir, config};
  std::unique_ptr<httplib::Client> op = d.client();

  json post(const std::string& path, const json& body, int expect = 200) {
    auto r = op->Post(path.c_str(), body.is_null() ? "" : body.dump(), "application/json");
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
  std::string job(const std::string& name, json fields = json::object()) {
    fields["id"] = test::uid(name);
    fields["title"] = name;
    fields["input_bundle_path"] = "/b/" + name;
    post("/jobs", fields);
    return fields["id"];
  }
  // A registered worker: (id, token).
  std::pair<std::string, std::string> worker(int gpus) {
    auto j = post("/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", gpus}});
    return {j["worker_id"], j["worker_token"]};
  }
  json as_worker(const std::pair<std::string, std::string>& w, const std::string& path) {
    httplib::Client c("127.0.0.1", d.port());
    auto r = c.Post(path.c_str(), {{"X-Worker-Token", w.second}}, "", "application/json");
    EXPECT_TRUE(r && (r->status == 200 || r->status == 204)) << path << ": " << (r ? r->body : "no reply");
    return r && !r->body.empty() ? json::parse(r->body) : json(nullptr);
  }
  std::string poll(const std::pair<std::string, std::string>& w) {
    auto j = as_worker(w, "/jobs/request?worker_id=" + w.first);
    return j.value("job_id", "");
  }
};

json association(const json& fairshare, const std::string& user) {
  for (const auto& a : fairshare["associations"])
    if (a["user"] == user) return a;
  return nullptr;
}

}  // namespace

TEST(priority_http, TheAccountThatUsedMoreWaitsAndFairshareShowsWhy) {
  daemon_under_test t;
  // ann's run (8 GPUs) encloses cy's (1 GPU), so ann uses at least 8 times cy's GPU-seconds.
  auto big = t.worker(8), small = t.worker(1);
  auto ann_old = t.job("ann-old", {{"user", "ann"}, {"gpu_count", 8}});
  auto cy_old = t.job("cy-old", {{"user", "cy"}});
  EXPECT_EQ(t.poll(big), ann_old);
  EXPECT_EQ(t.poll(small), cy_old);
  t.as_worker(big, "/jobs/" + ann_old + "/start");
  t.as_worker(small, "/jobs/" + cy_old + "/start");
  t.as_worker(small, "/jobs/" + cy_old + "/complete");
  t.as_worker(big, "/jobs/" + ann_old + "/complete");
  t.as_worker(big, "/workers/" + big.first + "/deregister");  // one worker left: one job can start

  // ann submits first; after a recalculation cy's job is still first in line.
  auto ann_new = t.job("ann-new", {{"user", "ann"}});
  auto cy_new = t.job("cy-new", {{"user", "cy"}});
  t.post("/priority/recalculate", nullptr);
  auto prio = t.get("/priority");
  EXPECT_EQ(prio["policy"], "multifactor");
  ASSERT_EQ(prio["jobs"].size(), 2u);
  EXPECT_EQ(prio["jobs"][0]["job_id"], cy_new) << prio.dump(2);
  EXPECT_EQ(prio["jobs"][0]["pending_reason"], "Resources");
  EXPECT_EQ(prio["jobs"][1]["pending_reason"], "Priority");
  EXPECT_GT(prio["jobs"][0]["factors"]["fairshare"]["weighted"].get<double>(),
            prio["jobs"][1]["factors"]["fairshare"]["weighted"].get<double>());
  auto fs = t.get("/fairshare");  // before cy's new job runs and adds to cy's usage
  EXPECT_EQ(t.poll(small), cy_new) << "cy used less, so cy's job goes first";
  EXPECT_EQ(t.get("/jobs/" + ann_new)["status"], "queued") << "ann's job waits";

  auto ann = association(fs, "ann"), cy = association(fs, "cy");
  ASSERT_TRUE(ann.is_object() && cy.is_object()) << fs.dump(2);
  EXPECT_EQ(ann["account"], "chem");
  EXPECT_GE(ann["raw_usage"].get<double>() / cy["raw_usage"].get<double>(), 7.99) << fs.dump(2);
  EXPECT_GT(cy["fair_share"].get<double>(), ann["fair_share"].get<double>());
  EXPECT_GT(cy["fair_share_in_use"].get<double>(), ann["fair_share_in_use"].get<double>());
  for (const auto& a : fs["associations"])
    if (a["user"].is_null() && a["account"] == "chem") {
      EXPECT_LT(a["level_fs"].get<double>(), 1.0) << "chem used more than its half";
    }
}

TEST(priority_http, JobFieldsAreValidatedNamingTheField) {
  daemon_under_test t;
  auto bad = [&](json fields, const std::string& field) {
    fields["title"] = "t";
    fields["input_bundle_path"] = "/b";
    auto r = t.post("/jobs", fields, 422);
    EXPECT_EQ(r.value("field", ""), field) << r.dump();
  };
  bad({{"partition", "nope"}}, "partition");
  bad({{"qos", "nope"}}, "qos");
  bad({{"account", "nope"}}, "account");
  bad({{"nice", -1}}, "nice");
  bad({{"gpu_count", 0}}, "gpu_count");
  bad({{"time_limit_seconds", "soon"}}, "time_limit_seconds");
  bad({{"hold", "yes"}}, "hold");
  bad({{"user", "a b"}}, "user");
  auto id = t.job(
      "ok", {{"user", "cy"}, {"partition", "test"}, {"qos", "2h"}, {"nice", 5}, {"gpu_count", 2}, {"time_limit_seconds", 7200}});
  auto j = t.get("/jobs/" + id);
  EXPECT_EQ(j["user"], "cy");
  EXPECT_EQ(j["account"], "phys");
  EXPECT_EQ(j["partition"], "test");
  EXPECT_EQ(j["qos"], "2h");
  EXPECT_EQ(j["nice"], 5);
  EXPECT_EQ(j["gpu_count"], 2);
  EXPECT_EQ(j["time_limit_seconds"], 7200);
  EXPECT_EQ(j["priority_tier"], 100);
}

TEST(priority_http, ABodyNestedTooDeepIsRefusedNamingTheBodyAndTheDaemonServesOn) {
  // A few hundred kilobytes of brackets would exhaust the stack of whatever parses, copies or
  // encodes the value (each level a call): refused before it is parsed, on any route.
  daemon_under_test t;
  auto send = [&](const std::string& path, const std::string& text) {
    auto r = t.op->Post(path.c_str(), text, "application/json");
    EXPECT_TRUE(r);
    return r ? std::make_pair(r->status, r->body) : std::make_pair(0, std::string());
  };
  const int levels = 100'000;  // 200 KB: under the body's 256 KiB (past it a body is 413 before its depth is read)
  const std::string deep = std::string(levels, '[') + std::string(levels, ']');
  for (const std::string path : {"/jobs", "/workers/register"}) {
    auto [status, body] = send(path, R"({"title": "t", "input_bundle_path": "/b", "comment": )" + deep + "}");
    EXPECT_EQ(status, 422) << path;
    auto reply = json::parse(body, nullptr, false);
    EXPECT_EQ(reply.value("field", ""), "body") << path << ": " << body.substr(0, 200);
  }
  // A checkpoint's progress codes are any JSON a worker sends, kept in the event as sent:
  // without the limit this one took the daemon down encoding it.
  auto running = t.job("running");
  auto w = t.worker(1);
  ASSERT_EQ(t.poll(w), running);
  httplib::Client as_worker("127.0.0.1", t.d.port());
  const httplib::Headers token{{"X-Worker-Token", w.second}};
  auto r = as_worker.Post(("/jobs/" + running + "/checkpoint").c_str(), token,
                          R"({"checkpoint_manifest_path": "/c/1", "progress_codes": )" + deep + "}", "application/json");
  ASSERT_TRUE(r) << "no reply: the daemon is gone";
  EXPECT_EQ(r->status, 422) << r->body.substr(0, 200);
  EXPECT_EQ(json::parse(r->body, nullptr, false).value("field", ""), "body");
  // At the limit it is read as any other body (and the job's fields are checked as usual);
  // brackets inside strings do not count.
  const std::string at_limit = std::string(63, '[') + std::string(63, ']');
  auto [status, body] =
      send("/jobs", R"({"title": ")" + std::string(500, '[') + R"(", "input_bundle_path": "/b", "comment": )" + at_limit + "}");
  EXPECT_EQ(status, 422) << "comment must be a string";
  EXPECT_EQ(json::parse(body).value("field", ""), "comment") << body;
  auto ok = send("/jobs", R"({"title": ")" + std::string(500, '{') + R"(", "input_bundle_path": "/b"})");
  EXPECT_EQ(ok.first, 200) << ok.second;
  EXPECT_EQ(t.get("/jobs").size(), 2u) << "the daemon serves on";
}

TEST(priority_http, HoldReleaseAndThePerUserCap) {
  daemon_under_test t;
  auto a = t.job("a", {{"user", "ann"}, {"hold", true}});
  auto w = t.worker(1);
  EXPECT_EQ(t.poll(w), "") << "a held job is not assigned";
  EXPECT_EQ(t.get("/jobs/" + a)["pending_reason"], "JobHeld");
  auto hold = t.post("/jobs/" + a + "/hold", nullptr);
  EXPECT_EQ(hold["pending_reason"], "JobHeld");
  auto released = t.post("/jobs/" + a + "/release", nullptr);
  EXPECT_EQ(released["held"], false);
  EXPECT_EQ(released["pending_reason"], "Resources") << "the reply shows the released job, first in line";
  EXPECT_EQ(t.poll(w), a);
  auto conflict = t.post("/jobs/" + a + "/hold", nullptr, 409);
  EXPECT_EQ(conflict["error"], "job_not_queued");

  t.job("b", {{"user", "ann"}});
  t.job("c", {{"user", "ann"}});
  auto over = t.post("/jobs", {{"title", "d"}, {"input_bundle_path", "/b"}, {"user", "ann"}}, 429);
  EXPECT_EQ(over["error"], "max_jobs_per_user") << over.dump();
  EXPECT_EQ(over["limit"], "max_jobs_per_user");
  t.job("cy", {{"user", "cy"}});  // another user is not affected
}

TEST(priority_http, DependsOnIsValidatedNamingTheField) {
  daemon_under_test t;
  auto parent = t.job("parent");
  auto bad = [&](json deps, const std::string& error, const std::string& id = "") {
    json body = {{"title", "t"}, {"input_bundle_path", "/b"}, {"depends_on", deps}};
    if (!id.empty()) body["id"] = id;
    auto r = t.post("/jobs", body, 422);
    EXPECT_EQ(r.value("field", ""), "depends_on") << r.dump();
    EXPECT_EQ(r.value("error", ""), error) << r.dump();
    return r;
  };
  // Shape (http/request_commands.cpp).
  bad("afterok:" + parent, "validation_error");
  bad(json::array({parent}), "validation_error");  // entries are objects
  bad(json::array({{{"condition", "afterok"}}}), "validation_error");
  bad(json::array({{{"job_id", "not-a-uuid"}}}), "validation_error");
  bad(json::array({{{"job_id", parent}, {"condition", "afterwards"}}}), "validation_error");
  bad(json::array({{{"job_id", parent}, {"condition", 1}}}), "validation_error");
  bad(json::array({{{"job_id", parent}, {"after", "ok"}}}), "validation_error");
  json many = json::array();
  for (int i = 0; i < 101; ++i) many.push_back({{"job_id", parent}});
  bad(many, "validation_error");
  // Meaning (the core).
  auto unknown = bad(json::array({{{"job_id", test::uid("nobody")}}}), "unknown_dependency");
  EXPECT_EQ(unknown["dependency_job_id"], test::uid("nobody"));
  bad(json::array({{{"job_id", test::uid("me")}}}), "dependency_cycle", test::uid("me"));
  EXPECT_EQ(t.op->Get(("/jobs/" + test::uid("me")).c_str())->status, 404) << "nothing was created";
  // Accepted: repeats collapse, the condition defaults to afterok, upper-case ids are stored lower-case.
  std::string upper = parent;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto child = t.job("child", {{"depends_on",
                                {{{"job_id", upper}},
                                 {{"job_id", parent}, {"condition", "afterok"}},
                                 {{"job_id", parent}, {"condition", "afternotok"}}}}});
  auto j = t.get("/jobs/" + child);
  EXPECT_EQ(j["depends_on"],
            json::array({{{"job_id", parent}, {"condition", "afterok"}}, {{"job_id", parent}, {"condition", "afternotok"}}}))
      << j.dump();
  EXPECT_EQ(j["pending_reason"], "Dependency");
  EXPECT_EQ(t.get("/jobs/" + parent)["depends_on"], json::array());
}

// Lattice's inputs from the workers: a driver version (the conformance fingerprint) at
// registration, the time a checkpoint took with each report; each validated naming its field.
TEST(priority_http, FingerprintsAndCheckpointTimesAreValidatedAndShown) {
  daemon_under_test t;
  auto bad =
      t.op->Post("/workers/register", json{{"platform", "hpc"}, {"driver_version", "535 beta"}}.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
  EXPECT_EQ(json::parse(bad->body)["field"], "driver_version") << bad->body;
  auto r = t.post("/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}, {"driver_version", "535.104.05"}});
  std::pair<std::string, std::string> w{r["worker_id"], r["worker_token"]};
  auto listed = t.get("/workers");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["driver_version"], "535.104.05");
  EXPECT_EQ(listed[0]["fingerprint"], "A100/535.104.05");

  auto id = t.job("md", {{"conformance", "A100/535.104.05"}});
  EXPECT_EQ(t.get("/jobs/" + id)["conformance"], "A100/535.104.05");
  ASSERT_EQ(t.poll(w), id) << "its fingerprint matches";
  t.as_worker(w, "/jobs/" + id + "/start");
  httplib::Client c("127.0.0.1", t.d.port());
  auto report = [&](const json& body) {
    return c.Post(("/jobs/" + id + "/checkpoint").c_str(), {{"X-Worker-Token", w.second}}, body.dump(), "application/json");
  };
  auto negative = report({{"checkpoint_manifest_path", "/ck/m.json"}, {"checkpoint_seconds", -1}});
  ASSERT_TRUE(negative);
  EXPECT_EQ(negative->status, 422);
  EXPECT_EQ(json::parse(negative->body)["field"], "checkpoint_seconds") << negative->body;
  auto ok = report({{"checkpoint_manifest_path", "/ck/m.json"}, {"checkpoint_seconds", 12.5}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 204) << ok->body;
  EXPECT_EQ(t.get("/jobs/" + id)["checkpoint_seconds"], 12.5);
}
