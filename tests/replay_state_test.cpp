// baton-replay state --at and history on a real batond's log: the world at a sequence and at
// a time, in the API's shapes; a job's events explained, with its place in the queue.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "support/batond_process.hpp"
#include "support/replay_tool.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;
using test::replay_tool;

namespace {

std::vector<std::string> ids_of(const json& items, const char* key) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(i.value(key, ""));
  return out;
}

// Three jobs queued before any worker; one worker then takes the first.
class replay_state_test : public ::testing::Test {
 protected:
  void SetUp() override {
    test::batond_process d(dir, "");
    ASSERT_GT(d.port(), 0) << d.err();
    auto op = d.client();
    for (const auto& id : {A, B, C})
      ASSERT_EQ(
          op->Post("/jobs", json{{"id", id}, {"title", "t"}, {"input_bundle_path", "/b"}}.dump(), "application/json")->status,
          200);
    auto r = op->Post("/workers/register", json{{"platform", "hpc"}, {"gpu_model", "A100"}}.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 200);
    auto reg = json::parse(r->body);
    worker = reg["worker_id"];
    httplib::Client c("127.0.0.1", d.port());
    auto got = c.Post(("/jobs/request?worker_id=" + worker).c_str(), {{"X-Worker-Token", reg["worker_token"].get<std::string>()}},
                      "", "application/json");
    ASSERT_TRUE(got && got->status == 200);
    ASSERT_EQ(json::parse(got->body)["job_id"], A);
    ASSERT_EQ(d.stop(), 0) << d.err();
    // Where job-c was created, from the audit export.
    auto e = replay_tool(dir, {"export", "--data-dir", data, "--type", "job.created"});
    ASSERT_EQ(e.code, 0) << e.err;
    std::istringstream lines(e.out);
    for (std::string line; std::getline(lines, line);) {
      auto rec = json::parse(line);
      if (rec.value("stream", "") == "job/" + C) third_created = rec["seq"].get<uint64_t>();
      if (rec.value("stream", "") == "job/" + A) first_created_at = rec["recorded_at"].get<std::string>();
    }
    ASSERT_GT(third_created, 0u) << e.out;
  }
  const std::string A = test::uid("job-a"), B = test::uid("job-b"), C = test::uid("job-c");
  test::temp_dir dir;
  std::string data = dir / "data";
  std::string worker;
  uint64_t third_created = 0;
  std::string first_created_at;
};

}  // namespace

TEST_F(replay_state_test, StateAtASequenceShowsTheQueueAsItWasAndAtTheEndAsItIs) {
  auto then = replay_tool(dir, {"state", "--data-dir", data, "--at", std::to_string(third_created)});
  ASSERT_EQ(then.code, 0) << then.err;
  auto s = json::parse(then.out);
  EXPECT_EQ(s["at"]["seq"], third_created);
  EXPECT_EQ(ids_of(s["jobs"], "id"), (std::vector<std::string>{C, B, A})) << "newest first, as GET /jobs";
  EXPECT_EQ(ids_of(s["queue"]["jobs"], "job_id"), (std::vector<std::string>{A, B, C}));
  EXPECT_TRUE(s["workers"].empty());
  EXPECT_EQ(s["job_counts"]["queued"], 3);

  auto now = json::parse(replay_tool(dir, {"state", "--data-dir", data}).out);
  EXPECT_EQ(now["job_counts"]["queued"], 2);
  EXPECT_EQ(now["job_counts"]["assigned"], 1);
  EXPECT_EQ(ids_of(now["queue"]["jobs"], "job_id"), (std::vector<std::string>{B, C}));
  ASSERT_EQ(now["workers"].size(), 1u);
  EXPECT_EQ(now["workers"][0]["id"], worker);
  EXPECT_EQ(now["workers"][0]["job_id"], A);
  EXPECT_TRUE(now["fair_share"].contains("associations")) << now["fair_share"].dump();
}

TEST_F(replay_state_test, StateAtATimeTakesEveryEventRecordedByThen) {
  auto before = json::parse(replay_tool(dir, {"state", "--data-dir", data, "--at", "2000-01-01T00:00:00Z"}).out);
  EXPECT_EQ(before["at"]["seq"], 0);
  EXPECT_TRUE(before["jobs"].empty());
  auto at_first = json::parse(replay_tool(dir, {"state", "--data-dir", data, "--at", first_created_at}).out);
  EXPECT_EQ(at_first["job_counts"]["queued"], 1) << at_first["job_counts"].dump();
  EXPECT_EQ(replay_tool(dir, {"state", "--data-dir", data, "--at", "yesterday"}).code, 2);
}

// --at TIME reports the time asked for, and separately the last event applied and its time.
TEST_F(replay_state_test, StateAtATimeReportsTheTimeAskedForAndTheLastEventApplied) {
  const std::string later = "2100-01-01T00:00:00.000000Z";  // after every event (in the form the tool writes)
  auto end = json::parse(replay_tool(dir, {"state", "--data-dir", data}).out);
  auto s = json::parse(replay_tool(dir, {"state", "--data-dir", data, "--at", later}).out);
  EXPECT_EQ(s["at"]["time"], later);
  EXPECT_EQ(s["at"]["seq"], end["at"]["seq"]) << "every event was recorded by then";
  ASSERT_TRUE(s["last_event"].is_object()) << s.dump();
  EXPECT_EQ(s["last_event"]["seq"], end["at"]["seq"]);
  EXPECT_NE(s["last_event"]["time"], later);
  EXPECT_EQ(s["last_event"]["time"], end["at"]["time"]) << "without --at: the last event's time";

  const std::string earlier = "2000-01-01T00:00:00.000000Z";  // before every event
  auto before = json::parse(replay_tool(dir, {"state", "--data-dir", data, "--at", earlier}).out);
  EXPECT_EQ(before["at"]["time"], earlier);
  EXPECT_EQ(before["at"]["seq"], 0);
  EXPECT_TRUE(before["last_event"].is_null());

  auto at_seq = json::parse(replay_tool(dir, {"state", "--data-dir", data, "--at", std::to_string(third_created)}).out);
  EXPECT_EQ(at_seq["at"]["time"], at_seq["last_event"]["time"]) << "--at SEQ: the time is that event's";
  EXPECT_EQ(at_seq["last_event"]["seq"], third_created);
}

TEST_F(replay_state_test, HistoryExplainsEachEventOfTheJob) {
  auto a = replay_tool(dir, {"history", A, "--data-dir", data, "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  auto story = json::parse(a.out);
  ASSERT_TRUE(story["found"]);
  std::vector<std::string> types;
  for (const auto& e : story["entries"])
    if (!e.contains("queue")) types.push_back(e["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"job.created", "job.assigned"}));
  std::string assigned = story["entries"].back()["explained"];
  EXPECT_NE(assigned.find("assigned to worker " + worker), std::string::npos) << assigned;
  EXPECT_EQ(story["summary"]["status"], "assigned");
  EXPECT_TRUE(story["summary"]["waited_seconds"].is_number());

  auto b = replay_tool(dir, {"history", B, "--data-dir", data});
  EXPECT_EQ(b.code, 0);
  EXPECT_NE(b.out.find("job.created: submitted"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("now queued"), std::string::npos) << b.out;
  EXPECT_EQ(replay_tool(dir, {"history", test::uid("no-such-job"), "--data-dir", data}).code, 1);
}

TEST_F(replay_state_test, WhatifRunsTheRecordedWorkloadUnderAnotherConfig) {
  std::ofstream(dir / "other.yaml") << "scheduling: {policy: fifo}\n";
  auto r = replay_tool(dir, {"whatif", "--data-dir", data, "--config", dir / "other.yaml", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(j["policy"], "fifo");
  EXPECT_EQ(j["capacity_gpus"], 1) << "one A100 worker registered";
  EXPECT_EQ(j["workload"]["never_ran"], 3) << "one job assigned but never finished a run, two never started";
  EXPECT_EQ(replay_tool(dir, {"whatif", "--data-dir", data, "--config", dir / "missing.yaml"}).code, 2);
  EXPECT_EQ(replay_tool(dir, {"whatif", "--data-dir", data, "--config", dir / "other.yaml", "--policy", "best"}).code, 2);
}
