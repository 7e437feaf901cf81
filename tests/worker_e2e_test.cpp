// End-to-end tests of baton-worker: a real batond on loopback, real baton-worker processes,
// real payloads (/bin/sh scripts) whose bundles are temp dirs. No mocks.
#include <gtest/gtest.h>

#include <sstream>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <thread>

#include "core/util/time.hpp"
#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/worker_e2e.hpp"
#include "worker/api_client.hpp"
#include "worker/bundle.hpp"
#include "worker/checkpoint.hpp"
#include "worker/config.hpp"
#include "worker/gpu.hpp"
#include "worker/progress.hpp"

using namespace baton;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using test::counting_script;
using test::get;
using test::last_step_of_attempt;
using test::process_gone;
using test::starts_in;
using test::wait_until;
using test::worker_e2e;

TEST_F(worker_e2e, OneWorkerRunsTwoJobsWithCheckpoints) {
  auto log = dir / "payload.log";
  create_job("a1", make_bundle("a1", counting_script(3, 0.1, log)));
  create_job("a2", make_bundle("a2", counting_script(3, 0.1, log)));
  auto w = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  int rc = test::exit_code(w->wait(20s));
  ASSERT_EQ(rc, 0) << w->err();
  for (auto id : {"a1", "a2"}) {
    auto j = job(id);
    EXPECT_EQ(j["status"], "completed") << id << "\n" << w->err();
    EXPECT_EQ(j["progress"], 1.0) << id;
    ASSERT_TRUE(j["latest_checkpoint_manifest_path"].is_string()) << id;
    auto manifest_path = j["latest_checkpoint_manifest_path"].get<std::string>();
    EXPECT_EQ(manifest_path,
              dir / ("bundle-" + std::string(id)) + "/.baton-checkpoints/" + test::uid(id) + "/manifest-attempt-1.json");
    auto m = json::parse(test::slurp(manifest_path));
    EXPECT_EQ(m["job_id"], test::uid(id));
    EXPECT_EQ(m["attempt"], 1);
    EXPECT_EQ(m["files"]["steps.chk"]["size"], 2);
    EXPECT_EQ(m["files"]["steps.chk"]["sha256"],
              "1121cfccd5913f0a63fec40a6ffd44ea64f9dc135c66634ba001d10bcf4302a2");  // sha256("3\n")
    EXPECT_TRUE(m["files"].contains("progress.txt"));
    EXPECT_EQ(checkpointed_steps(id), 3);
  }
  EXPECT_EQ(starts_in(test::slurp(log)), (std::vector<std::pair<int, int>>{{0, 1}, {0, 1}}));
  auto gone = get(*op, "/workers?state=gone");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0]["gone_reason"], "deregistered");
  EXPECT_EQ(gone[0]["gpu_model"], "A100");
  EXPECT_FALSE(fs::exists(dir / ("work-1/" + test::uid("a1") + "-attempt-1"))) << "working dirs are removed after the job";
}

TEST_F(worker_e2e, KilledWorkerIsReapedAndTheNextResumesFromTheCheckpoint) {
  auto log = dir / "payload.log";
  create_job("k", make_bundle("k", counting_script(30, 0.1, log)));
  auto a = start_worker();
  ASSERT_TRUE(wait_until([&] { return checkpointed_steps("k") >= 3; }, 10s)) << a->err();
  int payload_pid = std::stoi(test::slurp(dir / ("work-1/" + test::uid("k") + "-attempt-1/payload.pid")));
  a->signal(SIGKILL);
  a->wait();
  auto killed_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_until([&] { return process_gone(payload_pid); }, 2s)) << "the payload dies with its worker";
  int saved = checkpointed_steps("k");
  ASSERT_TRUE(wait_status("k", "queued", 8s)) << "reaped and requeued: " << job("k");
  auto reap_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  auto bw = start_worker();
  ASSERT_TRUE(wait_status("k", "completed", 15s)) << job("k") << "\n" << bw->err();
  auto text = test::slurp(log);
  auto starts = starts_in(text);
  ASSERT_EQ(starts.size(), 2u) << text;
  EXPECT_EQ(starts[0], std::make_pair(0, 1));
  EXPECT_EQ(starts[1].second, 2);
  EXPECT_GT(starts[1].first, 0) << "the resumed run must not restart from zero";
  EXPECT_EQ(starts[1].first, saved) << "it resumes from exactly the last reported checkpoint";
  EXPECT_NE(text.find("done 30 attempt 2"), std::string::npos) << text;
  auto types = event_types("k");
  EXPECT_NE(std::find(types.begin(), types.end(), "job.requeued_after_reap"), types.end())
      << "events: " << testing::PrintToString(types);
  RecordProperty("reap_seconds", std::to_string(reap_seconds));
  std::cout << "[ info ] requeued " << reap_seconds << " s after SIGKILL; resumed at step " << saved << "\n";
  bw->signal(SIGTERM);
  EXPECT_EQ(test::exit_code(bw->wait(10s)), 0) << bw->err();
}

TEST_F(worker_e2e, CancelStopsThePayloadWithinAHeartbeatAndTheWorkerMovesOn) {
  auto log = dir / "payload.log";
  auto bundle = make_bundle("c", counting_script(600, 0.1, log));
  create_job("c", bundle);
  auto w = start_worker({"BATON_HEARTBEAT_SECONDS=1"});
  ASSERT_TRUE(wait_until([&] { return fs::exists(dir / ("work-1/" + test::uid("c") + "-attempt-1/steps.chk")); }, 10s))
      << w->err();
  int pid = std::stoi(test::slurp(dir / ("work-1/" + test::uid("c") + "-attempt-1/payload.pid")));
  ASSERT_FALSE(process_gone(pid));
  auto t0 = std::chrono::steady_clock::now();
  auto del = op->Delete(test::uid_path("/jobs/c?force=true").c_str());
  ASSERT_TRUE(del);
  ASSERT_EQ(del->status, 204) << del->body;
  ASSERT_TRUE(wait_until([&] { return process_gone(pid); }, 5s)) << w->err();
  auto stop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(stop_seconds, 2.0) << "one 1 s heartbeat plus slack";
  ASSERT_TRUE(wait_status("c", "cancelled", 5s)) << job("c") << "\n" << w->err();
  std::cout << "[ info ] payload stopped " << stop_seconds << " s after the cancel\n";
  // The same worker takes the next job.
  create_job("c2", make_bundle("c2", counting_script(2, 0.05, log)));
  ASSERT_TRUE(wait_status("c2", "completed", 10s)) << job("c2") << "\n" << w->err();
  auto worker_of = [&](const std::string& id) {
    auto history = get(*op, "/jobs/" + id + "/history");
    for (auto& e : history["events"])
      if (e["event_type"] == "job.assigned") return e["payload"]["worker_id"];
    return json(nullptr);
  };
  EXPECT_EQ(worker_of("c2"), worker_of("c"));
  EXPECT_FALSE(worker_of("c").is_null());
  w->signal(SIGTERM);
  EXPECT_EQ(test::exit_code(w->wait(10s)), 0) << w->err();
}

TEST_F(worker_e2e, SigtermHandsTheJobOffAndAnotherWorkerFinishesIt) {
  auto log = dir / "payload.log";
  create_job("h", make_bundle("h", counting_script(30, 0.1, log)));
  auto a = start_worker();
  ASSERT_TRUE(wait_until([&] { return checkpointed_steps("h") >= 3; }, 10s)) << a->err();
  a->signal(SIGTERM);
  ASSERT_EQ(test::exit_code(a->wait(10s)), 0) << a->err();
  auto j = job("h");
  EXPECT_EQ(j["status"], "queued") << j;
  auto types = event_types("h");
  EXPECT_NE(std::find(types.begin(), types.end(), "job.handoff_started"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "job.handoff_completed"), types.end());
  int handed = checkpointed_steps("h");
  auto text = test::slurp(log);
  // The script logs a step just after committing it, so SIGTERM can fall between the two.
  int logged = last_step_of_attempt(text, 1);
  EXPECT_TRUE(handed == logged || handed == logged + 1)
      << "the final checkpoint holds the payload's last step: " << handed << " vs logged " << logged;
  auto gone = get(*op, "/workers?state=gone");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0]["gone_reason"], "deregistered");

  auto bw = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(bw->wait(15s)), 0) << bw->err();
  EXPECT_EQ(status("h"), "completed") << bw->err();
  text = test::slurp(log);
  auto starts = starts_in(text);
  ASSERT_EQ(starts.size(), 2u) << text;
  EXPECT_EQ(starts[1], std::make_pair(handed, 2)) << "resumed from the handoff checkpoint";
  EXPECT_GT(handed, 0);
  EXPECT_NE(text.find("done 30 attempt 2"), std::string::npos) << text;
}

TEST_F(worker_e2e, FailedPayloadIsReportedWithoutACheckpoint) {
  create_job("f", make_bundle("f", "echo 1 > steps.chk\necho boom >&2\nexit 3\n"));
  auto w = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(w->wait(10s)), 0) << w->err();
  auto j = job("f");
  EXPECT_EQ(j["status"], "failed") << j;
  EXPECT_EQ(j["failure_reason"], "payload_failed");
  EXPECT_TRUE(j["latest_checkpoint_manifest_path"].is_null()) << "no checkpoint from a failed payload";
  auto history = get(*op, "/jobs/f/history");
  std::string detail;
  for (auto& e : history["events"])
    if (e["event_type"] == "job.failed") detail = e["payload"].value("detail", "");
  EXPECT_NE(detail.find("exit code 3"), std::string::npos) << detail;
  EXPECT_NE(detail.find("boom"), std::string::npos) << "the payload log tail travels with the failure";
  // Failure artifacts next to the bundle: the log and failure.json naming the (absent) manifest.
  auto artifacts = dir / ("bundle-f/.baton-failures/" + test::uid("f") + "/attempt-1");
  EXPECT_EQ(j["latest_failure_artifact_path"], artifacts) << j;
  EXPECT_NE(test::slurp(artifacts + "/baton-payload.log").find("boom"), std::string::npos);
  auto info = json::parse(test::slurp(artifacts + "/failure.json"), nullptr, false);
  ASSERT_TRUE(info.is_object());
  EXPECT_EQ(info["exit_code"], 3);
  EXPECT_TRUE(info["last_checkpoint_manifest_path"].is_null());
}

// Supervision from baton-job.json, through the real worker: a payload that hangs, one that
// logs a fatal line and one that runs too long are each stopped (their process group gone)
// and fail with their own reason, the detail saying what was seen.
TEST_F(worker_e2e, SupervisionEndsAStalledAFatalAndAnOverlongPayloadEachWithItsReason) {
  const std::string pids = dir / "pids";
  create_job("hang", make_bundle("hang", "echo $$ >> " + pids + "\necho started\nsleep 600\n",
                                 {{"supervision", {{"no_progress_seconds", 2}}}}));
  create_job("nan", make_bundle("nan", "echo $$ >> " + pids + "\necho step 1\necho 'step 2: NaN detected'\nsleep 600\n",
                                {{"supervision", {{"fatal_log_patterns", {"CUDA error", "NaN detected"}}}}}));
  create_job("long", make_bundle("long", "echo $$ >> " + pids + "\nwhile true; do echo tick; sleep 0.2; done\n",
                                 {{"supervision", {{"max_run_seconds", 2}, {"no_progress_seconds", 60}}}}));
  auto w = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(w->wait(60s)), 0) << w->err();
  auto detail_of = [&](const std::string& id) {
    auto history = get(*op, "/jobs/" + id + "/history");  // (a temporary's ["events"] would dangle in the loop)
    for (auto& e : history["events"])
      if (e["event_type"] == "job.failed") return e["payload"].value("detail", "");
    return std::string();
  };
  for (auto [id, reason, seen] : {std::tuple{"hang", "payload_stalled", "no_progress_seconds = 2 s"},
                                  std::tuple{"nan", "payload_fatal_log", "'NaN detected': step 2: NaN detected"},
                                  std::tuple{"long", "payload_max_run_time", "max_run_seconds = 2 s"}}) {
    auto j = job(id);
    EXPECT_EQ(j["status"], "failed") << j;
    EXPECT_EQ(j["failure_reason"], reason) << j;
    EXPECT_NE(detail_of(id).find(seen), std::string::npos) << detail_of(id);
    auto info = json::parse(test::slurp(j.value("latest_failure_artifact_path", "") + "/failure.json"), nullptr, false);
    EXPECT_EQ(info.value("reason", ""), reason) << info;
  }
  std::istringstream lines(test::slurp(pids));
  int shells = 0;
  for (std::string pid; std::getline(lines, pid); ++shells)
    EXPECT_TRUE(process_gone(std::stoi(pid))) << "payload shell " << pid << " outlived its attempt";
  EXPECT_EQ(shells, 3);
}

// batond away in the middle of a job (stopped, restarted on the same port a few seconds
// later): the payload runs on, the worker's calls retry with backoff, and the job completes
// in its first attempt with batond back, from one start.
TEST_F(worker_e2e, APayloadRunsOnWhileBatondIsAwayAndItsEndIsReportedWhenItIsBack) {
  auto log = dir / "payload.log";
  create_job("o", make_bundle("o", counting_script(60, 0.1, log)));
  auto w = start_worker();
  ASSERT_TRUE(wait_until([&] { return checkpointed_steps("o") >= 3; }, 20s)) << w->err();
  const int port = b->port();
  ASSERT_EQ(b->stop(), 0) << b->err();
  const int step_at_stop = last_step_of_attempt(test::slurp(log), 1);
  ASSERT_TRUE(wait_until([&] { return last_step_of_attempt(test::slurp(log), 1) >= step_at_stop + 15; }, 20s))
      << "the payload stopped while batond was away\n"
      << w->err();
  EXPECT_EQ(w->wait(0ms), -1) << "the worker gave up while batond was away\n" << w->err();
  b->start({}, port);
  ASSERT_EQ(b->port(), port) << b->err();
  op = b->client();
  ASSERT_TRUE(wait_status("o", "completed", 30s)) << job("o") << "\n" << w->err();
  auto j = job("o");
  EXPECT_EQ(j["attempts"], 1) << j;
  auto runs = starts_in(test::slurp(log));
  EXPECT_EQ(runs.size(), 1u) << "the payload was started again";
  EXPECT_NE(test::slurp(log).find("done 60 attempt 1"), std::string::npos);
}

TEST_F(worker_e2e, FailureAfterAResumeNamesTheRestoredManifest) {
  // Attempt 1 checkpoints and hands off; attempt 2 resumes and fails: its artifacts name the manifest it resumed from.
  auto log = dir / "payload.log";
  auto script = "if [ \"$BATON_ATTEMPT\" = 2 ]; then echo second-fails; exit 7; fi\n" + counting_script(40, 0.1, log);
  create_job("fr", make_bundle("fr", script));
  auto a = start_worker();
  ASSERT_TRUE(wait_until([&] { return checkpointed_steps("fr") >= 2; }, 10s)) << a->err();
  a->signal(SIGTERM);
  ASSERT_EQ(test::exit_code(a->wait(10s)), 0) << a->err();
  auto resumed_from = job("fr")["latest_checkpoint_manifest_path"];
  ASSERT_TRUE(resumed_from.is_string());
  auto bw = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(bw->wait(15s)), 0) << bw->err();
  auto j = job("fr");
  EXPECT_EQ(j["status"], "failed") << j;
  auto artifacts = dir / ("bundle-fr/.baton-failures/" + test::uid("fr") + "/attempt-2");
  EXPECT_EQ(j["latest_failure_artifact_path"], artifacts) << j;
  EXPECT_NE(test::slurp(artifacts + "/baton-payload.log").find("second-fails"), std::string::npos);
  auto info = json::parse(test::slurp(artifacts + "/failure.json"), nullptr, false);
  ASSERT_TRUE(info.is_object());
  EXPECT_EQ(info["last_checkpoint_manifest_path"], resumed_from);
  EXPECT_EQ(info["attempt"], 2);
}

TEST_F(worker_e2e, AllocationDeadlineHandsTheJobOffAndTheWorkerTakesNoMoreWork) {
  auto log = dir / "payload.log";
  create_job("d", make_bundle("d", counting_script(40, 0.1, log)));
  auto epoch_now = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  auto deadline = epoch_now() + 4;
  auto a = start_worker(
      {"BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS=" + std::to_string(deadline), "BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS=2"});
  ASSERT_TRUE(wait_status("d", "running", 5s)) << a->err();
  ASSERT_EQ(test::exit_code(a->wait(10s)), 0) << a->err();
  auto exited_at = epoch_now();
  EXPECT_GE(exited_at, deadline - 2) << "not before the margin";
  EXPECT_LT(exited_at, deadline) << "handed off before the allocation ended";
  EXPECT_EQ(status("d"), "queued") << job("d");
  auto history = get(*op, "/jobs/d/history");
  json started;
  for (auto& e : history["events"])
    if (e["event_type"] == "job.handoff_started") started = e["payload"];
  ASSERT_TRUE(started.is_object()) << history;
  EXPECT_EQ(started["reason"], "allocation_ending");
  EXPECT_EQ(started["deadline_epoch_seconds"], deadline);
  auto types = event_types("d");
  EXPECT_NE(std::find(types.begin(), types.end(), "job.handoff_completed"), types.end());
  int handed = checkpointed_steps("d");
  EXPECT_GT(handed, 0);
  auto gone = get(*op, "/workers?state=gone");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0]["gone_reason"], "deregistered");

  // A worker already inside its margin takes nothing (it does not even register).
  auto c = start_worker(
      {"BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS=" + std::to_string(epoch_now() + 1), "BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS=2"});
  ASSERT_EQ(test::exit_code(c->wait(5s)), 0) << c->err();
  EXPECT_EQ(status("d"), "queued");
  auto after = event_types("d");
  EXPECT_EQ(std::count(after.begin(), after.end(), "job.assigned"), 1) << "the late worker took nothing";

  auto bw = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(bw->wait(15s)), 0) << bw->err();
  EXPECT_EQ(status("d"), "completed") << bw->err();
  auto starts = starts_in(test::slurp(log));
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[1], std::make_pair(handed, 2)) << "resumed from the handoff checkpoint";
}

// Deadline-aware assignment with real workers: a pilot with ten minutes left polls and polls
// but never receives an hour-long job that cannot checkpoint; it takes a short one queued after
// it, and a worker with a long allocation takes the hour. The log then re-derives.
TEST_F(worker_e2e, WorkerWithTenMinutesLeftNeverGetsAJobThatCannotFitAndAPilotWithTimeDoes) {
  auto log = dir / "payload.log";
  auto epoch_now = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  auto idle_polls = [](const test::child_process& w) {
    auto err = w.err();
    int n = 0;
    for (size_t at = 0; (at = err.find("no job available (no_job_for_this_worker)", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  auto worker_id_of = [](const test::child_process& w) {
    std::smatch m;
    auto err = w.err();
    return std::regex_search(err, m, std::regex(R"(registered as worker (\S+))")) ? m[1].str() : std::string();
  };
  auto assignments = [&](const std::string& id) {
    std::vector<json> out;
    auto history = get(*op, "/jobs/" + id + "/history");  // kept: a loop over a temporary's member would dangle
    for (auto& e : history["events"])
      if (e["event_type"] == "job.assigned") out.push_back(e["payload"]);
    return out;
  };
  create_job("hour", make_bundle("hour", counting_script(2, 0.1, log)), {{"time_limit_seconds", 3600}, {"checkpoints", false}});
  auto pilot = start_worker({"BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS=" + std::to_string(epoch_now() + 600),
                             "BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS=60"});
  ASSERT_TRUE(wait_until([&] { return idle_polls(*pilot) >= 3; }, 15s)) << pilot->err();
  EXPECT_EQ(status("hour"), "queued");
  auto pilot_id = worker_id_of(*pilot);
  ASSERT_FALSE(pilot_id.empty()) << pilot->err();
  auto shown = get(*op, "/workers");
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_TRUE(shown[0]["allocation_ends_at"].is_string()) << shown;

  // A short job queued later fits: the pilot takes it, passing the older hour-long one over.
  create_job("short", make_bundle("short", counting_script(2, 0.1, log)), {{"time_limit_seconds", 120}, {"checkpoints", false}});
  ASSERT_TRUE(wait_status("short", "completed", 15s)) << pilot->err();
  auto short_assigned = assignments("short");
  ASSERT_EQ(short_assigned.size(), 1u);
  EXPECT_EQ(short_assigned[0]["worker_id"], pilot_id);
  EXPECT_EQ(short_assigned[0]["decision"]["deadline"]["rule"], "fits") << short_assigned[0];
  int before = idle_polls(*pilot);
  ASSERT_TRUE(wait_until([&] { return idle_polls(*pilot) >= before + 3; }, 15s)) << pilot->err();
  EXPECT_EQ(status("hour"), "queued") << "still not the pilot's after it finished the short job";

  auto roomy = start_worker({"BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS=" + std::to_string(epoch_now() + 2 * 86400),
                             "BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS=60"});
  ASSERT_TRUE(wait_status("hour", "completed", 15s)) << roomy->err();
  auto hour_assigned = assignments("hour");
  ASSERT_EQ(hour_assigned.size(), 1u) << "the pilot never received it";
  EXPECT_EQ(hour_assigned[0]["worker_id"], worker_id_of(*roomy));
  EXPECT_EQ(hour_assigned[0]["decision"]["deadline"]["rule"], "fits");
  EXPECT_GT(hour_assigned[0]["decision"]["deadline"]["remaining_seconds"].get<int64_t>(), 86400);

  for (auto* w : {pilot.get(), roomy.get()}) w->signal(SIGTERM);
  for (auto* w : {pilot.get(), roomy.get()}) EXPECT_EQ(test::exit_code(w->wait(15s)), 0) << w->err();
  ASSERT_EQ(b->stop(), 0) << b->err();
  test::child_process tool({BATOND_PATH, "--data-dir", dir / "data", "--rederive"}, dir / "rederive", {"BATON_CONFIG=/dev/null"});
  EXPECT_EQ(test::exit_code(tool.wait()), 0) << tool.err();
  EXPECT_NE(tool.out().find("ok: 2 assignment decisions"), std::string::npos) << tool.out() << tool.err();
  b->start();  // for TearDown
}

// Inside Slurm without a deadline given, the worker asks squeue; when that fails (no Slurm
// here, or no such allocation) it says so and works on without a deadline.
TEST_F(worker_e2e, SqueueLookupThatFailsIsLoggedAndTheWorkerCarriesOn) {
  auto log = dir / "payload.log";
  create_job("s", make_bundle("s", counting_script(1, 0.1, log)));
  auto w = start_worker({"SLURM_JOB_ID=999999999", "BATON_CLUSTER_NAME=nowhere", "BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(w->wait(20s)), 0) << w->err();
  EXPECT_EQ(status("s"), "completed") << w->err();
  auto err = w->err();
  EXPECT_NE(err.find("asking Slurm when allocation 999999999 ends"), std::string::npos) << err;
  EXPECT_NE(err.find("carrying on without a deadline"), std::string::npos) << err;
  auto gone = get(*op, "/workers?state=gone");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_TRUE(gone[0]["allocation_ends_at"].is_null());
  EXPECT_EQ(gone[0]["provider_id"], "nowhere:999999999");
}

TEST_F(worker_e2e, TarBundlesWithLinksEscapesOrHugeFilesAreRefused) {
  auto log = dir / "payload.log";
  auto sh = [](const std::string& cmd) { ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd; };
  // Good: a .tar.gz with baton-job.json at the top.
  auto src = make_bundle("tsrc", counting_script(3, 0.05, log));
  fs::create_directories(dir / "tars");
  sh("tar -czf " + dir / "tars/good.tar.gz" + " -C " + src + " baton-job.json run.sh");
  // A member named ../evil.
  fs::create_directories(dir / "mk/sub");
  std::ofstream(dir / "mk/evil") << "EVIL";
  fs::copy_file(src + "/baton-job.json", dir / "mk/sub/baton-job.json");
  sh("cd " + dir / "mk/sub" + " && tar -cPf " + dir / "tars/dotdot.tar" + " baton-job.json ../evil");
  // A symlink to /etc.
  fs::create_directories(dir / "mk/link");
  fs::copy_file(src + "/baton-job.json", dir / "mk/link/baton-job.json");
  fs::create_symlink("/etc", dir / "mk/link/etc");
  sh("tar -cf " + dir / "tars/symlink.tar" + " -C " + dir / "mk/link" + " baton-job.json etc");
  // A hard link (inside the archive: links of any kind are refused).
  fs::create_directories(dir / "mk/hard");
  fs::copy_file(src + "/baton-job.json", dir / "mk/hard/baton-job.json");
  fs::create_hard_link(dir / "mk/hard/baton-job.json", dir / "mk/hard/h");
  sh("tar -cf " + dir / "tars/hardlink.tar" + " -C " + dir / "mk/hard" + " baton-job.json h");
  // A 10 GB sparse file, archived as GNU tar -S does (a tiny archive).
  fs::create_directories(dir / "mk/sparse");
  fs::copy_file(src + "/baton-job.json", dir / "mk/sparse/baton-job.json");
  std::ofstream(dir / "mk/sparse/big.dcd").close();
  fs::resize_file(dir / "mk/sparse/big.dcd", uint64_t{10} << 30);
  sh("tar -cSf " + dir / "tars/sparse.tar" + " -C " + dir / "mk/sparse" + " baton-job.json big.dcd");
  fs::remove_all(dir / "mk/sparse");
  create_job("tg", dir / "tars/good.tar.gz");
  create_job("thard", dir / "tars/hardlink.tar");
  create_job("tsparse", dir / "tars/sparse.tar");
  create_job("tdot", dir / "tars/dotdot.tar");
  create_job("tlink", "file://" + dir / "tars/symlink.tar");
  auto w = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(w->wait(20s)), 0) << w->err();

  EXPECT_EQ(status("tg"), "completed") << job("tg") << "\n" << w->err();
  EXPECT_EQ(job("tg")["latest_checkpoint_manifest_path"],
            dir / ("tars/.baton-checkpoints/" + test::uid("tg") + "/manifest-attempt-1.json"))
      << "checkpoints go beside the archive";
  EXPECT_EQ(checkpointed_steps("tg"), 3);
  auto failure_detail = [&](const std::string& id) {
    auto history = get(*op, "/jobs/" + id + "/history");
    for (auto& e : history["events"])
      if (e["event_type"] == "job.failed") return e["payload"].value("detail", "");
    return std::string();
  };
  for (auto [id, member] :
       {std::pair{"tdot", "../evil"}, std::pair{"tlink", "etc"}, std::pair{"thard", "h"}, std::pair{"tsparse", "big.dcd"}}) {
    auto j = job(id);
    EXPECT_EQ(j["status"], "failed") << j;
    EXPECT_EQ(j["failure_reason"], "invalid_bundle") << j;
    auto detail = failure_detail(id);
    EXPECT_NE(detail.find("'" + std::string(member) + "'"), std::string::npos) << detail;
    std::cout << "[ info ] " << id << " refused: " << detail << "\n";
    EXPECT_FALSE(fs::exists(dir / ("work-1/" + test::uid(id) + "-attempt-1"))) << "nothing unpacked";
  }
  EXPECT_FALSE(fs::exists(dir / "work-1/evil"));
  EXPECT_FALSE(fs::exists(dir / "evil"));
  EXPECT_FALSE(fs::exists(dir / "tars/evil"));
  EXPECT_FALSE(fs::exists(dir / "tars/big.dcd"));
  EXPECT_EQ(starts_in(test::slurp(log)).size(), 1u) << "only the good archive ran";
  for (auto& e : fs::directory_iterator(dir / "work-1")) ADD_FAILURE() << "left in the work dir: " << e.path();
}

TEST_F(worker_e2e, FrozenWorkerThatWasReapedDropsItsRunAndRegistersAgain) {
  auto log = dir / "payload.log";
  create_job("z", make_bundle("z", counting_script(60, 0.1, log)));
  auto w = start_worker();
  ASSERT_TRUE(wait_until([&] { return checkpointed_steps("z") >= 3; }, 10s)) << w->err();
  w->signal(SIGSTOP);  // no heartbeats: reaped and requeued while the payload runs on
  bool requeued = wait_status("z", "queued", 8s);
  int saved = checkpointed_steps("z");
  w->signal(SIGCONT);
  ASSERT_TRUE(requeued) << job("z");
  ASSERT_TRUE(wait_status("z", "completed", 20s)) << job("z") << "\n" << w->err();
  auto starts = starts_in(test::slurp(log));
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[1].second, 2);
  EXPECT_GT(starts[1].first, 0) << "resumed from the checkpoint";
  EXPECT_EQ(starts[1].first, saved) << "the reaped run wrote no checkpoint after it lost the job";
  auto err = w->err();
  EXPECT_NE(err.find("registering again"), std::string::npos) << err;
  auto gone = get(*op, "/workers?state=gone");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0]["gone_reason"], "reaped");
  w->signal(SIGTERM);
  EXPECT_EQ(test::exit_code(w->wait(10s)), 0) << w->err();
}

// depends_on with one afterok parent (a job named as in these tests).
json after_ok(const std::string& parent) { return {{"depends_on", {{{"job_id", test::uid(parent)}}}}}; }

TEST_F(worker_e2e, AThreeJobDagRunsInOrder) {
  auto log = dir / "payload.log";
  auto script = [&](const std::string& name) {
    return "echo start-" + name + " >> " + log + "\nsleep 0.5\necho done-" + name + " >> " + log + "\n";
  };
  create_job("dag-a", make_bundle("a", script("a")));
  create_job("dag-b", make_bundle("b", script("b")), after_ok("dag-a"));
  create_job("dag-c", make_bundle("c", script("c")), after_ok("dag-b"));
  EXPECT_EQ(job("dag-b")["pending_reason"], "Dependency");
  EXPECT_EQ(job("dag-c")["pending_reason"], "Dependency");
  // Two workers: without the dependencies the second would run B beside A.
  std::vector<std::string> idle = {"BATON_IDLE_STRATEGY=poll_then_exit", "BATON_IDLE_MAX_SECONDS=4"};
  auto w1 = start_worker(idle), w2 = start_worker(idle);
  ASSERT_EQ(test::exit_code(w1->wait(40s)), 0) << w1->err();
  ASSERT_EQ(test::exit_code(w2->wait(10s)), 0) << w2->err();
  for (auto id : {"dag-a", "dag-b", "dag-c"}) EXPECT_EQ(status(id), "completed") << id << "\n" << job(id);
  // Each starts only after its parent completed (a completed job's status_changed_at is its
  // completion; the fixed-width ISO times compare as strings).
  auto a = job("dag-a"), b = job("dag-b"), c = job("dag-c");
  EXPECT_GT(b["started_at"].get<std::string>(), a["status_changed_at"].get<std::string>()) << a << "\n" << b;
  EXPECT_GT(c["started_at"].get<std::string>(), b["status_changed_at"].get<std::string>()) << b << "\n" << c;
  auto text = test::slurp(log);
  auto at = [&](const std::string& line) { return text.find(line + "\n"); };
  EXPECT_LT(at("done-a"), at("start-b")) << text;
  EXPECT_LT(at("done-b"), at("start-c")) << text;
  EXPECT_NE(at("done-c"), std::string::npos) << text;
}

TEST_F(worker_e2e, AnAfterOkChildOfAFailedParentIsCancelledWithTheReason) {
  create_job("parent", make_bundle("parent", "exit 3\n"));
  create_job("child", make_bundle("child", "true\n"), after_ok("parent"));
  create_job("grandchild", make_bundle("grandchild", "true\n"), after_ok("child"));
  auto w = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(w->wait(15s)), 0) << w->err();
  EXPECT_EQ(status("parent"), "failed");
  for (auto [id, parent] : {std::pair{"child", "parent"}, std::pair{"grandchild", "child"}}) {
    auto j = job(id);
    EXPECT_EQ(j["status"], "cancelled") << j;
    EXPECT_EQ(j["failure_reason"], "dependency_never_satisfied") << j;
    EXPECT_TRUE(j["started_at"].is_null()) << "it never ran";
    json cancelled, history = get(*op, "/jobs/" + std::string(id) + "/history");
    for (auto& e : history["events"])
      if (e["event_type"] == "job.cancelled") cancelled = e;
    ASSERT_TRUE(cancelled.is_object()) << id << history;
    EXPECT_EQ(cancelled["payload"]["reason"], "dependency_never_satisfied");
    EXPECT_EQ(cancelled["payload"]["dependency"], test::uid(parent));
    EXPECT_EQ(cancelled["actor"], "loop:dependencies");
  }
}

// A machine with no GPU nvidia-smi can see (here an nvidia-smi that fails, first on PATH,
// so the test does not depend on the machine): without a GPU count the worker would register
// 0 GPUs and never get a job; it exits 2 naming the options instead, and registers only with
// --allow-no-gpu, warning what that means.
TEST_F(worker_e2e, WithoutNvidiaSmiTheWorkerNeedsAGpuCountOrAllowNoGpu) {
  const std::string bin = dir / "no-gpu-bin";
  fs::create_directories(bin);
  std::ofstream(bin + "/nvidia-smi") << "#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n";
  fs::permissions(bin + "/nvidia-smi", fs::perms::owner_all);
  const std::string path = "PATH=" + bin + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");

  auto refused = start_worker({path, "BATON_GPU_COUNT="});
  EXPECT_EQ(test::exit_code(refused->wait(20s)), 2) << refused->err();
  for (const char* option : {"--gpu-count", "--allow-no-gpu"})
    EXPECT_NE(refused->err().find(option), std::string::npos) << option << " in " << refused->err();
  EXPECT_EQ(get(*op, "/workers").size(), 0u) << "nothing registered";

  auto zero = start_worker({path, "BATON_GPU_COUNT=", "BATON_ALLOW_NO_GPU=1"});
  json listed;
  ASSERT_TRUE(wait_until(
      [&] {
        listed = get(*op, "/workers");
        return listed.size() == 1;
      },
      20s))
      << zero->err();
  EXPECT_EQ(listed[0]["gpu_count"], 0);
  EXPECT_NE(zero->err().find("registering with 0 GPUs"), std::string::npos) << zero->err();
  zero->signal(SIGTERM);
  EXPECT_EQ(test::exit_code(zero->wait(15s)), 0) << zero->err();

  // Told its count, it registers that many (the rest of these tests run so).
  auto counted = start_worker({path, "BATON_GPU_COUNT=2", "BATON_IDLE_STRATEGY=immediate_exit"});
  EXPECT_EQ(test::exit_code(counted->wait(20s)), 0) << counted->err();
  EXPECT_EQ(counted->err().find("0 GPUs"), std::string::npos) << counted->err();
  auto gone = get(*op, "/workers?state=gone");
  ASSERT_EQ(gone.size(), 2u) << gone.dump();
  EXPECT_EQ(std::max(gone[0]["gpu_count"].get<int>(), gone[1]["gpu_count"].get<int>()), 2) << gone.dump();
}

// --- pure parts of the worker ---

TEST(worker_pure, ParsesNvidiaSmi) {
  auto g = worker::parse_nvidia_smi("NVIDIA A100-SXM4-80GB, 81920 MiB\nNVIDIA A100-SXM4-80GB, 81920 MiB\n");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g->count, 2);
  EXPECT_EQ(g->vram_gb, 80);
  auto with_driver = worker::parse_nvidia_smi("NVIDIA H100 80GB HBM3, 81559 MiB, 535.104.05\n");
  ASSERT_TRUE(with_driver);
  EXPECT_EQ(with_driver->model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(with_driver->vram_gb, 80);
  EXPECT_EQ(with_driver->driver_version, "535.104.05");
  EXPECT_EQ(g->driver_version, "") << "older nvidia-smi output has no driver column";
  EXPECT_FALSE(worker::parse_nvidia_smi("NVIDIA-SMI has failed\n"));
}

TEST(worker_pure, GpusFromNvidiaSmiElseFromTheCountElseOnlyWhenAllowed) {
  const worker::gpu_info smi{"NVIDIA A100", 4, 80, "535"}, told{"A100", 2, 80, ""}, untold{"A100", 0, 0, ""};
  auto detected = worker::choose_gpus(smi, told, false);
  EXPECT_EQ(detected.gpu.count, 4) << "nvidia-smi's answer wins";
  EXPECT_TRUE(detected.warnings.empty());
  EXPECT_EQ(detected.problem, "");
  auto counted = worker::choose_gpus(std::nullopt, told, false);
  EXPECT_EQ(counted.gpu.count, 2);
  EXPECT_EQ(counted.gpu.model, "A100");
  EXPECT_EQ(counted.problem, "");
  auto refused = worker::choose_gpus(std::nullopt, untold, false);
  EXPECT_NE(refused.problem.find("--gpu-count"), std::string::npos) << refused.problem;
  EXPECT_NE(refused.problem.find("--allow-no-gpu"), std::string::npos) << refused.problem;
  auto allowed = worker::choose_gpus(std::nullopt, untold, true);
  EXPECT_EQ(allowed.problem, "");
  EXPECT_EQ(allowed.gpu.count, 0);
  ASSERT_EQ(allowed.warnings.size(), 1u);
  EXPECT_NE(allowed.warnings[0].find("no job"), std::string::npos) << allowed.warnings[0];
}

TEST(worker_pure, JobSpecAndBundlePaths) {
  auto s = worker::parse_job_spec(R"({"command":"sh run.sh","checkpoint_globs":["*.chk","out/*.dcd"],"progress_file":"p.txt"})");
  EXPECT_EQ(s.command, "sh run.sh");
  EXPECT_EQ(s.checkpoint_globs.size(), 2u);
  EXPECT_THROW(worker::parse_job_spec(R"({"checkpoint_globs":["*.chk"]})"), std::runtime_error);
  EXPECT_THROW(worker::parse_job_spec(R"({"command":"x","checkpoint_globs":["../*.chk"]})"), std::runtime_error);
  EXPECT_THROW(worker::parse_job_spec(R"({"command":"x","progress_file":"/etc/p"})"), std::runtime_error);
  EXPECT_EQ(worker::resolve_bundle_dir("file:///data/b/"), "/data/b");
  EXPECT_EQ(worker::resolve_bundle_dir("/data/b"), "/data/b");
  EXPECT_FALSE(worker::resolve_bundle_dir("s3://bucket/b"));
  EXPECT_FALSE(worker::resolve_bundle_dir("relative/b"));
}

TEST(worker_pure, TarPaths) {
  EXPECT_TRUE(worker::is_tar_path("/x/b.tar"));
  EXPECT_TRUE(worker::is_tar_path("/x/b.tar.gz"));
  EXPECT_TRUE(worker::is_tar_path("/x/b.tgz"));
  EXPECT_FALSE(worker::is_tar_path("/x/b.zip"));
}

TEST(worker_pure, GlobsBackoffProgressProvider) {
  EXPECT_TRUE(worker::glob_matches("*.chk", "state.chk"));
  EXPECT_FALSE(worker::glob_matches("*.chk", "sub/state.chk"));
  EXPECT_TRUE(worker::glob_matches("sub/*.chk", "sub/state.chk"));
  EXPECT_EQ(worker::backoff_seconds(1, 0.5, 30, 0), 0.25);  // the least jitter: half the delay
  EXPECT_EQ(worker::backoff_seconds(4, 0.5, 30, 0.5), 3);
  EXPECT_EQ(worker::backoff_seconds(40, 0.5, 30, 1), 30);  // capped
  EXPECT_EQ(worker::backoff_seconds(40, 0.5, 30, 0), 15);
  double lowest = 1e9, highest = 0;
  for (int i = 0; i < 1000; ++i) {
    double d = worker::backoff_seconds(3, 1, 30, worker::retry_jitter());
    lowest = std::min(lowest, d);
    highest = std::max(highest, d);
  }
  EXPECT_GE(lowest, 2.0);
  EXPECT_LT(highest, 4.0);
  EXPECT_GT(highest - lowest, 1.0) << "draws spread over the range";
  EXPECT_EQ(worker::parse_progress(" 0.25\n"), 0.25);
  EXPECT_EQ(worker::parse_progress("1.7"), 1.0);
  EXPECT_FALSE(worker::parse_progress("half"));
  EXPECT_FALSE(worker::parse_progress(""));
  EXPECT_EQ(worker::derive_provider_id("clusterA", "12345"), "clusterA:12345");
  EXPECT_EQ(worker::derive_provider_id("", "12345"), "");
}

TEST(worker_pure, CheckpointStoreNeverDropsMissingFilesAndRestores) {
  test::temp_dir d;
  auto work = d / "work", ck = d / "ck";
  fs::create_directories(work);
  std::ofstream(work + "/a.chk") << "one";
  std::ofstream(work + "/b.chk") << "two";
  worker::checkpoint_store store(ck, "j", 1, "w");
  auto r = store.sync(work, {"*.chk"});
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.copied.size(), 2u);
  EXPECT_FALSE(store.sync(work, {"*.chk"}).changed) << "unchanged files are not stored again";
  fs::remove(work + "/b.chk");
  std::ofstream(work + "/a.chk") << "three";
  r = store.sync(work, {"*.chk"});
  EXPECT_EQ(r.copied, std::vector<std::string>{"a.chk"});
  auto m = json::parse(test::slurp(store.manifest_path()));
  EXPECT_TRUE(m["files"].contains("b.chk")) << "a file missing now keeps its entry";
  auto fresh = d / "fresh";
  fs::create_directories(fresh);
  worker::checkpoint_store next(ck, "j", 2, "w2");
  next.restore(store.manifest_path(), fresh);
  EXPECT_EQ(test::slurp(fresh + "/a.chk"), "three");
  EXPECT_EQ(test::slurp(fresh + "/b.chk"), "two");
  EXPECT_FALSE(next.sync(fresh, {"*.chk"}).changed) << "restored files match their entries";
  // A damaged object is refused, never silently skipped.
  std::ofstream(ck + "/objects/" + m["files"]["b.chk"]["sha256"].get<std::string>()) << "tampered";
  worker::checkpoint_store third(ck, "j", 3, "w3");
  EXPECT_THROW(third.restore(store.manifest_path(), d / "third"), std::runtime_error);
}

// A file that changes every cycle leaves one object per version; after each commit the
// versions no manifest names are removed. Another attempt's manifest keeps what it names; an
// unreadable manifest keeps everything; a copy in progress (temp file) is left alone.
TEST(worker_pure, CheckpointObjectsNoManifestNamesAreRemovedAfterACommit) {
  test::temp_dir d;
  auto work = d / "work", ck = d / "ck";
  fs::create_directories(work);
  auto objects = [&] {
    std::set<std::string> out;
    for (auto& e : fs::directory_iterator(ck + "/objects")) out.insert(e.path().filename().string());
    return out;
  };
  auto sha_of = [&](const std::string& text) {
    std::ofstream(d / "probe") << text;
    return worker::sha256_file(d / "probe");
  };
  worker::checkpoint_store first(ck, "j", 1, "w");
  for (const char* v : {"v1", "v2", "v3"}) {
    std::ofstream(work + "/traj.chk") << v;
    auto r = first.sync(work, {"*.chk"});
    ASSERT_TRUE(r.changed);
    EXPECT_EQ(r.objects_removed, std::string(v) == "v1" ? 0u : 1u) << v;
  }
  EXPECT_EQ(objects(), std::set<std::string>{sha_of("v3")});

  worker::checkpoint_store second(ck, "j", 2, "w2");
  second.restore(first.manifest_path(), d / "work2");
  std::ofstream(d / "work2/traj.chk") << "v4";
  EXPECT_EQ(second.sync(d / "work2", {"*.chk"}).objects_removed, 0u) << "attempt 1's manifest still names v3";
  EXPECT_EQ(objects(), (std::set<std::string>{sha_of("v3"), sha_of("v4")}));

  const std::string in_progress = sha_of("v5") + ".tmp-1-1";
  std::ofstream(ck + "/objects/" + in_progress) << "v5";
  std::ofstream(ck + "/manifest-attempt-9.json") << "{not json";
  std::ofstream(d / "work2/traj.chk") << "v6";
  EXPECT_EQ(second.sync(d / "work2", {"*.chk"}).objects_removed, 0u) << "an unreadable manifest might name any";
  EXPECT_EQ(objects(), (std::set<std::string>{sha_of("v3"), sha_of("v4"), sha_of("v6"), in_progress}));
  fs::remove(ck + "/manifest-attempt-9.json");
  std::ofstream(d / "work2/traj.chk") << "v7";
  EXPECT_EQ(second.sync(d / "work2", {"*.chk"}).objects_removed, 2u);  // v4, v6
  EXPECT_EQ(objects(), (std::set<std::string>{sha_of("v3"), sha_of("v7"), in_progress}));
}

// The planning cycle with real workers: a 4-GPU job waits for the only 4-GPU worker, which is
// busy; the plan reserves that worker for it (expected start: when the running job's limit
// ends it) while the 1-GPU jobs run on the 1-GPU workers; the big worker never takes a small
// job, and takes the reserved one as soon as it is free. Every plan re-derives.
TEST_F(worker_e2e, AFourGpuJobIsReservedWhileOneGpuJobsRunOnTheWorkersItDoesNotNeed) {
  auto log = dir / "payload.log";
  auto gate = dir / "release-long";
  create_job("long", make_bundle("long", "while [ ! -f " + gate + " ]; do sleep 0.1; done\necho \"done long\" >> " + log + "\n"),
             {{"gpu_count", 4}, {"time_limit_seconds", 600}});
  auto big = start_worker({"BATON_GPU_COUNT=4"});
  ASSERT_TRUE(wait_status("long", "running", 15s)) << big->err();
  auto big_id = job("long")["assigned_worker_id"];
  create_job("top", make_bundle("top", "echo \"ran top\" >> " + log + "\n"), {{"gpu_count", 4}, {"time_limit_seconds", 60}});
  create_job("one", make_bundle("one", counting_script(2, 0.1, log)), {{"time_limit_seconds", 60}});
  create_job("two", make_bundle("two", counting_script(2, 0.1, log)), {{"time_limit_seconds", 60}});

  // The planning cycle runs every second, its planner off the scheduler's thread.
  json top;
  ASSERT_TRUE(wait_until(
      [&] {
        top = job("top");
        return top.is_object() && top["expected_worker_id"].is_string();
      },
      15s))
      << top;
  EXPECT_EQ(top["pending_reason"], "Resources") << top;
  EXPECT_EQ(top["expected_worker_id"], big_id) << top;
  auto long_started = util::parse_time_us(job("long")["started_at"].get<std::string>());
  ASSERT_TRUE(long_started);
  EXPECT_EQ(top["expected_start"], util::format_time_us(*long_started + 600'000'000)) << "the running job's limit";

  auto small_a = start_worker(), small_b = start_worker();
  ASSERT_TRUE(wait_status("one", "completed", 20s)) << small_a->err() << small_b->err();
  ASSERT_TRUE(wait_status("two", "completed", 20s)) << small_a->err() << small_b->err();
  for (const auto& name : {"one", "two"}) EXPECT_NE(job(name)["assigned_worker_id"], big_id) << name;
  EXPECT_EQ(status("top"), "queued") << "the big worker is still busy";

  std::ofstream(gate) << "go\n";  // the long job ends; its worker is free for the reserved job
  ASSERT_TRUE(wait_status("top", "completed", 20s)) << big->err();
  EXPECT_EQ(job("top")["assigned_worker_id"], big_id);

  for (auto* w : {big.get(), small_a.get(), small_b.get()}) w->signal(SIGTERM);
  for (auto* w : {big.get(), small_a.get(), small_b.get()}) EXPECT_EQ(test::exit_code(w->wait(15s)), 0) << w->err();
  ASSERT_EQ(b->stop(), 0) << b->err();
  test::child_process tool({BATOND_PATH, "--data-dir", dir / "data", "--rederive"}, dir / "rederive", {"BATON_CONFIG=/dev/null"});
  EXPECT_EQ(test::exit_code(tool.wait()), 0) << tool.err();
  EXPECT_EQ(tool.out().find(" 0 plans"), std::string::npos) << tool.out();
  b->start();  // for TearDown
}

// The agent rotates its credential on schedule while it runs a job (heartbeats on one thread,
// job reports on the other): nothing is refused, and the job completes on the new token.
TEST_F(worker_e2e, TheAgentRotatesItsCredentialMidJobWithoutARefusedCall) {
  const std::string go = dir / "go";
  create_job("rot", make_bundle("rot", "while [ ! -f " + go + " ]; do sleep 0.05; done\necho 1 > steps.chk\n"));
  auto w = start_worker({"BATON_IDLE_STRATEGY=immediate_exit", "BATON_CREDENTIAL_ROTATE_SECONDS=1"});
  auto rotations = [&] {
    auto err = w->err();
    size_t n = 0;
    for (size_t at = 0; (at = err.find("credential rotated", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  ASSERT_TRUE(wait_until([&] { return rotations() >= 2; }, 60s)) << w->err();
  EXPECT_EQ(status("rot"), "running");
  std::ofstream(go) << "go\n";
  EXPECT_EQ(test::exit_code(w->wait(60s)), 0) << w->err();
  EXPECT_EQ(status("rot"), "completed") << w->err();
  EXPECT_EQ(w->err().find("HTTP 401"), std::string::npos) << "a call was refused:\n" << w->err();
}

// A job's payload hunts for credentials as an attacker would: its environment, and the
// environment, command line and memory of every process above it (the supervisor, the
// worker), run under the worker's own account (as root the kernel would let it read
// everything, so the worker runs as nobody then). It finds neither the token nor the path of
// the file the worker read it from.
size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(worker_e2e, APayloadFindsNoCredentialNorThePathToOne) {
  const bool as_root = ::geteuid() == 0;
  const uid_t nobody = 65534;
  auto token_file = dir / "pilot-credential";
  std::ofstream(token_file) << test::test_token << "\n";
  ::chmod(token_file.c_str(), 0600);
  auto hunt = dir / "hunt";
  fs::create_directories(hunt);
  auto bundle = make_bundle("hunter", R"SH(
out="$HUNT/found.txt"
{
  echo "== env"; env
  pid=$$
  while [ "$pid" -gt 1 ]; do
    pid=$(awk '/^PPid:/ {print $2}' /proc/$pid/status)
    [ -n "$pid" ] && [ "$pid" -gt 1 ] || break
    comm=$(cat /proc/$pid/comm)
    echo "== ancestor $pid $comm"
    # The shells between the payload and the supervisor are its own; above the worker is the test.
    if [ "$comm" != baton-worker ]; then [ -n "$seen" ] && break; continue; fi
    seen=1
    tr '\0' '\n' < /proc/$pid/environ 2>/dev/null && echo "environ-read $pid"
    tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null; echo
    if (exec 3< /proc/$pid/mem) 2>/dev/null; then echo "mem-open $pid"; fi
  done
} > "$out" 2>&1
echo done > "$HUNT/done"
)SH");
  create_job("hunter", bundle);
  if (as_root) {
    for (auto p : {dir.path(), hunt, bundle}) ::chown(p.c_str(), nobody, nobody);
    for (const auto& e : fs::recursive_directory_iterator(bundle)) ::chown(e.path().c_str(), nobody, nobody);
    ::chown(token_file.c_str(), nobody, nobody);
    ::chmod(dir.path().c_str(), 0755);
    fs::create_directories(dir / "work-1");
    ::chown((dir / "work-1").c_str(), nobody, nobody);
  }
  // batond's own secrets too, as a worker started from batond's environment (or by its sbatch,
  // which passes that on) would hold them.
  std::vector<std::string> env = {"BATON_API_TOKEN=", "BATON_API_TOKEN_FILE=" + token_file, "HUNT=" + hunt,
                                  "BATON_IDLE_STRATEGY=immediate_exit"};
  for (const char* name : {"BATON_PILOT_TOKEN", "BATON_METRICS_TOKEN", "BATON_SALAD_API_KEY", "BATON_POSTGRES_PASSWORD",
                           "BATON_S3_SECRET_ACCESS_KEY", "BATON_S3_UPLOAD_SECRET_ACCESS_KEY"})
    env.push_back(std::string(name) + "=batond-secret-" + name);
  auto w = start_worker(
      env, as_root ? std::vector<std::string>{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}
                   : std::vector<std::string>{});
  ASSERT_EQ(test::exit_code(w->wait(20s)), 0) << w->err();
  ASSERT_EQ(status("hunter"), "completed") << w->err();
  auto found = test::slurp(hunt + "/found.txt");
  // The hunt ran: it saw its own environment and reached the supervisor and the worker.
  ASSERT_NE(found.find("BATON_JOB_ID="), std::string::npos) << found;
  ASSERT_GE(count_of(found, " baton-worker\n"), 2u) << found;
  EXPECT_EQ(found.find(test::test_token), std::string::npos) << found;
  EXPECT_EQ(found.find(token_file), std::string::npos) << "the path of the credential file\n" << found;
  EXPECT_EQ(found.find("BATON_API_TOKEN"), std::string::npos) << found;
  EXPECT_EQ(found.find("batond-secret"), std::string::npos) << "a secret of batond's reached the payload\n" << found;
  EXPECT_EQ(found.find("mem-open"), std::string::npos) << "a process above the payload let it open its memory\n" << found;
  EXPECT_EQ(found.find("environ-read"), std::string::npos) << "a process above the payload let it read its environment\n"
                                                           << found;
}
