// POST /jobs/batch and job arrays over HTTP against a real batond: many jobs in one request,
// all or none with each refusal naming its index and field; an array's tasks listed by index,
// handed to workers with their index, cancelled and held as one; the caller checked first
// (missing, forged and another user's credential); the body's limits. Also what a campaign
// operator sees of it: GET /summary (the dashboard's one call) and jobs no site could run.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/replay_tool.hpp"

using namespace baton;
using nlohmann::json;

namespace {

const char* config = R"(scheduling:
  policy: multifactor
  max_jobs_per_user: 20
  partitions:
    normal: {priority_tier: 1, priority_factor: 1}
accounts:
  chem: {shares: 50, users: {ann: 1, bo: 1}}
)";

struct reply {
  int status = 0;
  json body;
};

struct daemon_under_test {
  test::temp_dir dir;
  test::batond_process d{dir, config};
  std::unique_ptr<httplib::Client> op = d.client();

  static reply of(const httplib::Result& r) {
    if (!r) return {};
    return {r->status, r->body.empty() ? json(nullptr) : json::parse(r->body, nullptr, false)};
  }
  reply send(const std::string& method, const std::string& path, const json& body = nullptr, httplib::Client* c = nullptr) {
    c = c ? c : op.get();
    if (method == "GET") return of(c->Get(path.c_str()));
    if (method == "DELETE") return of(c->Delete(path.c_str()));
    return of(c->Post(path.c_str(), body.is_null() ? "" : body.dump(), "application/json"));
  }
  // A named operator's client (role user).
  std::unique_ptr<httplib::Client> user(const std::string& name) {
    auto r = send("POST", "/operators", json{{"name", name}, {"role", "user"}, {"accounts", json::array({"chem"})}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return d.client(r.body.value("token", ""));
  }
  static json job(const std::string& name, json fields = json::object()) {
    fields["title"] = name;
    fields["input_bundle_path"] = "/b/" + name;
    return fields;
  }
};

}  // namespace

TEST(batch_http, ABatchMakesEveryJobOrNoneAndNamesEachRefusal) {
  daemon_under_test t;
  json jobs = json::array();
  for (int i = 0; i < 5; ++i) jobs.push_back(t.job("j" + std::to_string(i), {{"id", test::uid("j" + std::to_string(i))}}));
  auto r = t.send("POST", "/jobs/batch", json{{"jobs", jobs}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["created"], 5);
  ASSERT_EQ(r.body["jobs"].size(), 5u);
  EXPECT_EQ(r.body["jobs"][3]["id"], test::uid("j3"));
  EXPECT_TRUE(r.body["jobs"][3]["priority"].is_number());
  EXPECT_EQ(t.send("GET", "/jobs/" + test::uid("j3")).body["status"], "queued");

  // A bad field (read by the shell) and a name the policy does not know (the core's to say):
  // each refusal names its index; nothing of the batch is made.
  json bad = json::array({t.job("a"), t.job("b", {{"gpu_count", "two"}}), t.job("c")});
  r = t.send("POST", "/jobs/batch", json{{"jobs", bad}});
  ASSERT_EQ(r.status, 422) << r.body.dump();
  ASSERT_EQ(r.body["refused"].size(), 1u) << r.body.dump();
  EXPECT_EQ(r.body["refused"][0]["index"], 1);
  EXPECT_EQ(r.body["refused"][0]["field"], "gpu_count");
  bad = json::array({t.job("a", {{"id", test::uid("a")}}), t.job("b"), t.job("c", {{"partition", "nope"}}),
                     t.job("d", {{"id", test::uid("j0")}})});
  r = t.send("POST", "/jobs/batch", json{{"jobs", bad}});
  ASSERT_EQ(r.status, 422) << r.body.dump();
  EXPECT_EQ(r.body["error"], "batch_refused");
  ASSERT_EQ(r.body["refused"].size(), 2u) << r.body.dump();
  EXPECT_EQ(r.body["refused"][0]["index"], 2);
  EXPECT_EQ(r.body["refused"][0]["field"], "partition");
  EXPECT_EQ(r.body["refused"][0]["known"], json::array({"normal"}));
  EXPECT_EQ(r.body["refused"][1]["index"], 3);
  EXPECT_EQ(r.body["refused"][1]["error"], "job_exists");
  EXPECT_EQ(t.send("GET", "/jobs/" + test::uid("a")).status, 404) << "all or nothing";
  EXPECT_EQ(t.send("GET", "/jobs?limit=100").body.size(), 5u);

  // The cap counts the batch's own jobs: 5 there, 20 allowed.
  json many = json::array();
  for (int i = 0; i < 16; ++i) many.push_back(t.job("m" + std::to_string(i)));
  r = t.send("POST", "/jobs/batch", json{{"jobs", many}});
  ASSERT_EQ(r.status, 429) << r.body.dump();
  ASSERT_EQ(r.body["refused"].size(), 1u);
  EXPECT_EQ(r.body["refused"][0]["index"], 15);
  EXPECT_EQ(r.body["refused"][0]["error"], "max_jobs_per_user");

  // The body's shape and limits.
  EXPECT_EQ(t.send("POST", "/jobs/batch", json::object()).body["field"], "jobs");
  EXPECT_EQ(t.send("POST", "/jobs/batch", json{{"jobs", json::array()}}).body["field"], "jobs");
  EXPECT_EQ(t.send("POST", "/jobs/batch", json{{"jobs", json::array({5})}}).body["refused"][0]["index"], 0);
  json too_many = {{"jobs", json::array()}};
  for (int i = 0; i < 10'001; ++i) too_many["jobs"].push_back(json::object());
  r = t.send("POST", "/jobs/batch", too_many);
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body["field"], "jobs");
  std::string huge = "{\"jobs\":[{\"title\":\"" + std::string(17 << 20, 'x') + "\"}]}";
  auto big = t.op->Post("/jobs/batch", huge, "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
}

TEST(batch_http, AnArraysTasksAreListedByIndexAndRunWithIt) {
  daemon_under_test t;
  auto r = t.send("POST", "/jobs/batch", json{{"array", "0-3,10"}, {"job", t.job("sweep", {{"user", "ann"}})}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  std::string array_id = r.body["array_id"];
  EXPECT_EQ(r.body["created"], 5);
  EXPECT_EQ(r.body["jobs"][4]["array_index"], 10);

  auto listed = json{{"items", t.send("GET", "/jobs?array_id=" + array_id).body}};  // (a bare list, as RelayMD's)
  ASSERT_EQ(listed["items"].size(), 5u) << listed.dump();
  EXPECT_EQ(listed["items"][0]["array_index"], 0);
  EXPECT_EQ(listed["items"][4]["array_index"], 10);
  EXPECT_EQ(listed["items"][4]["array_id"], array_id);
  EXPECT_EQ(listed["items"][4]["title"], "sweep");
  EXPECT_EQ(listed["items"][4]["user"], "ann");
  EXPECT_EQ(t.send("GET", "/jobs?array_id=nope").status, 422);

  auto reg = t.send("POST", "/workers/register", json{{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}});
  httplib::Client wc("127.0.0.1", t.d.port());
  wc.set_default_headers({{"X-Worker-Token", reg.body["worker_token"].get<std::string>()}});
  auto poll =
      t.of(wc.Post(("/jobs/request?worker_id=" + reg.body["worker_id"].get<std::string>()).c_str(), "", "application/json"));
  ASSERT_EQ(poll.body["status"], "assigned") << poll.body.dump();
  EXPECT_EQ(poll.body["array_id"], array_id);
  json assigned;  // the task the worker got (tasks made at once, of one priority, go by id)
  for (const auto& item : listed["items"])
    if (item["id"] == poll.body["job_id"]) assigned = item;
  ASSERT_TRUE(assigned.is_object());
  EXPECT_EQ(poll.body["array_index"], assigned["array_index"]) << "its index with it";

  // Bad specs name the field.
  for (const char* spec : {"", "5-1", "0-10000", "1-3%2", "a", "0-9:0", "-1"}) {
    auto bad = t.send("POST", "/jobs/batch", json{{"array", spec}, {"job", t.job("x")}});
    EXPECT_EQ(bad.status, 422) << spec;
    EXPECT_EQ(bad.body["field"], "array") << spec << ": " << bad.body.dump();
  }
  auto with_id = t.send("POST", "/jobs/batch", json{{"array", "0-1"}, {"job", t.job("x", {{"id", test::uid("x")}})}});
  EXPECT_EQ(with_id.body["field"], "job.id");
  auto bad_task = t.send("POST", "/jobs/batch", json{{"array", "0-1"}, {"job", t.job("x", {{"nice", -1}})}});
  EXPECT_EQ(bad_task.body["field"], "job.nice") << "the tasks' body is checked once";

  // Held, released and cancelled as one; a running task needs force, as a job does.
  auto held = t.send("POST", "/jobs/" + array_id + "/hold");
  ASSERT_EQ(held.status, 200) << held.body.dump();
  EXPECT_EQ(held.body["changed"], 4);
  EXPECT_EQ(held.body["unchanged"]["assigned"], 1);
  for (const auto& item : listed["items"])
    EXPECT_EQ(t.send("GET", "/jobs/" + item["id"].get<std::string>()).body["held"], item["id"] != assigned["id"]);
  EXPECT_EQ(t.send("POST", "/jobs/" + array_id + "/release").body["changed"], 4);
  auto cancelled = t.send("DELETE", "/jobs/" + array_id + "?force=true");
  ASSERT_EQ(cancelled.status, 200) << cancelled.body.dump();
  EXPECT_EQ(cancelled.body["changed"], 5);
  for (const auto& item : listed["items"])
    EXPECT_EQ(t.send("GET", "/jobs/" + item["id"].get<std::string>()).body["status"],
              item["id"] == assigned["id"] ? "cancelling" : "cancelled");
}

TEST(batch_http, TheCallerIsCheckedBeforeTheBody) {
  daemon_under_test t;
  json body = {{"jobs", json::array({t.job("a")})}};
  httplib::Client none("127.0.0.1", t.d.port());
  EXPECT_EQ(t.send("POST", "/jobs/batch", body, &none).status, 401) << "no credential";
  EXPECT_EQ(t.send("POST", "/jobs/batch", json{{"jobs", 5}}, &none).status, 401) << "no credential, bad body: still 401";
  auto forged = t.d.client("not-the-token");
  EXPECT_EQ(t.send("POST", "/jobs/batch", body, forged.get()).status, 401) << "a forged token";
  auto reg = t.send("POST", "/workers/register", json{{"platform", "hpc"}});
  httplib::Client wc("127.0.0.1", t.d.port());
  wc.set_default_headers({{"X-Worker-Token", reg.body["worker_token"].get<std::string>()}});
  EXPECT_EQ(t.send("POST", "/jobs/batch", body, &wc).status, 403) << "a worker's credential";

  // Another user's array is not theirs to see, change or join.
  auto ann = t.user("ann"), bo = t.user("bo");
  auto r = t.send("POST", "/jobs/batch", json{{"array", "0-2"}, {"job", t.job("mine")}}, ann.get());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  std::string array_id = r.body["array_id"];
  EXPECT_EQ(t.send("DELETE", "/jobs/" + array_id, nullptr, bo.get()).status, 404);
  EXPECT_EQ(t.send("POST", "/jobs/" + array_id + "/hold", nullptr, bo.get()).status, 404);
  EXPECT_TRUE(t.send("GET", "/jobs?array_id=" + array_id, nullptr, bo.get()).body.empty());
  auto for_ann = t.send("POST", "/jobs/batch", json{{"jobs", json::array({t.job("x", {{"user", "ann"}})})}}, bo.get());
  EXPECT_EQ(for_ann.status, 403) << for_ann.body.dump();
  EXPECT_EQ(for_ann.body["refused"][0]["error"], "submit_for_another_user");
  auto joined = t.send("POST", "/jobs/batch",
                       json{{"jobs", json::array({t.job("x", {{"array_id", array_id}, {"array_index", 7}})})}}, bo.get());
  EXPECT_EQ(joined.status, 422) << "a job's body never names an array: " << joined.body.dump();
  EXPECT_EQ(joined.body["refused"][0]["field"], "array_id");
  EXPECT_EQ(t.send("POST", "/jobs/batch", json{{"jobs", json::array({t.job("x")})}, {"arrays", 1}}).body["field"], "arrays");
  EXPECT_EQ(t.send("GET", "/jobs?array_id=" + array_id, nullptr, ann.get()).body.size(), 3u);

  // The dashboard's summary counts what the caller may see: ann her 3 tasks, bo none, an
  // admin every job; workers are everyone's capacity.
  auto of_ann = t.send("GET", "/summary", nullptr, ann.get());
  ASSERT_EQ(of_ann.status, 200) << of_ann.body.dump();
  EXPECT_EQ(of_ann.body["jobs"], json({{"queued", 3}}));
  EXPECT_EQ(of_ann.body["eligible_queued"], 3);
  EXPECT_EQ(t.send("GET", "/summary", nullptr, bo.get()).body["jobs"], json::object());
  auto all = t.send("GET", "/summary");
  EXPECT_EQ(all.body["jobs"]["queued"], 3);
  EXPECT_EQ(all.body["workers"], json::array({{{"cluster", ""}, {"count", 1}, {"state", "idle"}}})) << all.body.dump();
  EXPECT_EQ(t.send("GET", "/summary", nullptr, &none).status, 401);
  EXPECT_EQ(t.send("GET", "/summary", nullptr, &wc).status, 403);
}

// A job no site could ever run says so: in the submit answer, the job, sprio's line and the
// replay's history of it.
TEST(batch_http, AJobNoSiteCouldEverRunSaysWhy) {
  daemon_under_test t;
  auto reg = t.send("POST", "/workers/register", json{{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 2}});
  ASSERT_EQ(reg.status, 200);
  auto one = t.send("POST", "/jobs", t.job("big", {{"id", test::uid("big")}, {"gpu_count", 4}}));
  ASSERT_EQ(one.status, 200) << one.body.dump();
  EXPECT_EQ(one.body["pending_reason"], "PartitionConfig");
  EXPECT_EQ(one.body["pending_detail"], "gpu_count 4 > largest offered 2");
  auto many = t.send("POST", "/jobs/batch", json{{"array", "0-1"}, {"job", t.job("wide", {{"gpu_count", 3}})}});
  ASSERT_EQ(many.status, 200) << many.body.dump();
  EXPECT_EQ(many.body["jobs"][1]["pending_detail"], "gpu_count 3 > largest offered 2");
  auto fits = t.send("POST", "/jobs", t.job("fits", {{"gpu_count", 2}}));
  EXPECT_FALSE(fits.body.contains("pending_detail")) << fits.body.dump();
  auto prio = t.send("GET", "/jobs/" + test::uid("big") + "/priority");
  EXPECT_EQ(prio.body["jobs"][0]["pending_detail"], "gpu_count 4 > largest offered 2") << prio.body.dump();
  ASSERT_EQ(t.send("POST", "/priority/recalculate").status, 200);  // a point in the log the history looks at
  t.d.stop();
  auto story = test::replay_tool(t.dir, {"history", test::uid("big"), "--data-dir", t.dir / "data"});
  EXPECT_EQ(story.code, 0) << story.err;
  EXPECT_NE(story.out.find("reason PartitionConfig (gpu_count 4 > largest offered 2)"), std::string::npos) << story.out;
}

// A child made in the same batch as its parent, cancelled when the parent fails: the replay's
// history says which parent, how it ended and with what exit code.
TEST(batch_http, ReplayHistoryExplainsADependencyCancel) {
  daemon_under_test t;
  json jobs = json::array(
      {t.job("parent", {{"id", test::uid("parent")}}),
       t.job("child", {{"id", test::uid("child")}, {"depends_on", json::array({{{"job_id", test::uid("parent")}}})}})});
  ASSERT_EQ(t.send("POST", "/jobs/batch", json{{"jobs", jobs}}).status, 200);
  auto reg = t.send("POST", "/workers/register", json{{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}});
  httplib::Client wc("127.0.0.1", t.d.port());
  wc.set_default_headers({{"X-Worker-Token", reg.body["worker_token"].get<std::string>()}});
  auto poll =
      t.of(wc.Post(("/jobs/request?worker_id=" + reg.body["worker_id"].get<std::string>()).c_str(), "", "application/json"));
  ASSERT_EQ(poll.body["job_id"], test::uid("parent")) << poll.body.dump();
  ASSERT_EQ(t.of(wc.Post(("/jobs/" + test::uid("parent") + "/start").c_str(), "", "application/json")).status, 204);
  auto failed =
      wc.Post(("/jobs/" + test::uid("parent") + "/fail").c_str(),
              json{{"reason", "payload_failed"}, {"detail", "exit code 3\nlast lines of the log"}}.dump(), "application/json");
  ASSERT_TRUE(failed && failed->status == 204) << (failed ? failed->body : "no reply");
  EXPECT_EQ(t.send("GET", "/jobs/" + test::uid("child")).body["status"], "cancelled");
  t.d.stop();
  auto story = test::replay_tool(t.dir, {"history", test::uid("child"), "--data-dir", t.dir / "data"});
  EXPECT_EQ(story.code, 0) << story.err;
  EXPECT_NE(story.out.find("cancelled: its dependency on job " + test::uid("parent") +
                           " can never hold (that job failed: payload_failed (exit code 3))"),
            std::string::npos)
      << story.out;
}
