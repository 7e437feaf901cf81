#pragma once
// A real batond on loopback and real baton-worker processes running real payloads (/bin/sh
// scripts in temp-dir bundles): the fixture and helpers of the end-to-end worker tests.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/wait_until.hpp"

namespace baton::test {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Reaped after 2 s without a heartbeat, checked every second; a planning cycle every second.
// A checkpointing job may start
// on a worker whose allocation ends within seconds (the handoff tests' workers).
inline const char* fast_config =
    "workers: {heartbeat_interval_seconds: 1, heartbeat_timeout_multiplier: 2, reaper_interval_seconds: 1}\n"
    "scheduling: {min_useful_seconds: 1, backfill: {bf_interval_seconds: 1}}\n";

// A payload that counts steps into steps.chk (atomically), resuming from it if present, and
// logs "start <n> attempt <a>", "step <n> attempt <a>" and "done <n> attempt <a>" to a shared log.
inline std::string counting_script(int steps, double step_seconds, const std::string& log) {
  std::ostringstream s;
  s << "n=0\n"
    << "if [ -f steps.chk ]; then n=$(cat steps.chk); fi\n"
    << "echo \"start $n attempt $BATON_ATTEMPT\" >> " << log << "\n"
    << "echo $$ > payload.pid\n"
    << "while [ \"$n\" -lt " << steps << " ]; do\n"
    << "  sleep " << step_seconds << "\n"
    << "  n=$((n+1))\n"
    << "  echo \"$n\" > steps.tmp && mv steps.tmp steps.chk\n"
    << "  awk \"BEGIN{print $n/" << steps << "}\" > progress.tmp && mv progress.tmp progress.txt\n"
    << "  echo \"step $n attempt $BATON_ATTEMPT\" >> " << log << "\n"
    << "done\n"
    << "echo \"done $n attempt $BATON_ATTEMPT\" >> " << log << "\n";
  return s.str();
}

// Paths name jobs by their test names; test::uid_path turns them into UUIDs.
inline nlohmann::json get(httplib::Client& c, const std::string& named_path) {
  auto r = c.Get(test::uid_path(named_path).c_str());
  if (!r || r->body.empty()) return nullptr;
  return json::parse(r->body, nullptr, false);
}

// The "start <n> attempt <a>" values of a log, in order.
inline std::vector<std::pair<int, int>> starts_in(const std::string& log) {
  std::vector<std::pair<int, int>> out;
  std::regex re(R"(start (\d+) attempt (\d+))");
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it)
    out.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  return out;
}

inline int last_step_of_attempt(const std::string& log, int attempt) {
  int last = -1;
  std::regex re(R"(step (\d+) attempt (\d+))");
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it)
    if (std::stoi((*it)[2]) == attempt) last = std::stoi((*it)[1]);
  return last;
}

inline bool process_gone(int pid) {
  auto stat = test::slurp("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

struct worker_e2e : ::testing::Test {
  // batond's config for the fixture's daemon (a test suite may add to it).
  virtual std::string config() const { return fast_config; }

  test::temp_dir dir;
  std::unique_ptr<test::batond_process> b;
  std::unique_ptr<httplib::Client> op;
  int workers = 0;

  void SetUp() override {
    b = std::make_unique<test::batond_process>(dir, config());
    ASSERT_GT(b->port(), 0) << b->err();
    op = b->client();
  }
  void TearDown() override {
    if (b) {
      EXPECT_EQ(b->stop(), 0) << b->err();
    }
  }

  // run_as: words before the worker's path (e.g. setpriv to run it as another user).
  std::unique_ptr<test::child_process> start_worker(std::vector<std::string> extra = {}, std::vector<std::string> run_as = {}) {
    auto n = std::to_string(++workers);
    std::vector<std::string> env = {"BATON_URL=http://127.0.0.1:" + std::to_string(b->port()),
                                    "BATON_API_TOKEN=" + std::string(test::test_token),
                                    "BATON_WORKER_IMAGE_KEY=default",
                                    "BATON_PLATFORM=hpc",
                                    "BATON_GPU_MODEL=A100",
                                    "BATON_GPU_COUNT=1",
                                    "BATON_GPU_VRAM_GB=80",
                                    "BATON_HEARTBEAT_SECONDS=0.5",
                                    "BATON_CHECKPOINT_SECONDS=1",
                                    "BATON_IDLE_STRATEGY=poll_then_exit",
                                    "BATON_IDLE_POLL_SECONDS=0.2",
                                    "BATON_IDLE_MAX_SECONDS=30",
                                    "BATON_KILL_GRACE_SECONDS=2",
                                    "BATON_RETRY_BASE_SECONDS=0.2",
                                    "BATON_RETRY_MAX_SECONDS=1",
                                    "BATON_WORK_DIR=" + (dir / ("work-" + n)),
                                    "BATON_LOG_LEVEL=debug",
                                    "SLURM_JOB_ID=",
                                    "BATON_CLUSTER_NAME="};
    env.insert(env.end(), extra.begin(), extra.end());
    run_as.push_back(BATON_WORKER_PATH);
    return std::make_unique<test::child_process>(run_as, dir / ("worker-" + n), env);
  }

  // A bundle dir with run.sh and baton-job.json.
  // spec: more keys for baton-job.json (e.g. "supervision").
  std::string make_bundle(const std::string& name, const std::string& script, json spec = json::object()) {
    auto path = dir / ("bundle-" + name);
    fs::create_directories(path);
    std::ofstream(path + "/run.sh") << script;
    spec.update(json{{"command", "sh run.sh"}, {"checkpoint_globs", {"*.chk"}}, {"progress_file", "progress.txt"}});
    std::ofstream(path + "/baton-job.json") << spec.dump();
    return path;
  }

  void create_job(const std::string& id, const std::string& bundle, json fields = json::object()) {
    fields["id"] = test::uid(id);
    fields["title"] = id;
    fields["input_bundle_path"] = bundle;
    auto r = op->Post("/jobs", fields.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }

  json job(const std::string& id) { return get(*op, "/jobs/" + id); }
  std::string status(const std::string& id) {
    auto j = job(id);
    return j.is_object() ? j.value("status", "") : "";
  }
  bool wait_status(const std::string& id, const std::string& want, std::chrono::milliseconds timeout) {
    return wait_until([&] { return status(id) == want; }, timeout);
  }

  // The step count stored in the manifest batond currently points at (-1 if none).
  int checkpointed_steps(const std::string& id) {
    auto j = job(id);
    if (!j.is_object() || !j["latest_checkpoint_manifest_path"].is_string()) return -1;
    auto manifest_path = j["latest_checkpoint_manifest_path"].get<std::string>();
    auto m = json::parse(test::slurp(manifest_path), nullptr, false);
    if (m.is_discarded() || !m["files"].contains("steps.chk")) return -1;
    auto object = fs::path(manifest_path).parent_path() / m["files"]["steps.chk"]["object"].get<std::string>();
    auto text = test::slurp(object.string());
    return text.empty() ? -1 : std::stoi(text);
  }

  std::vector<std::string> event_types(const std::string& id) {
    std::vector<std::string> out;
    auto history = get(*op, "/jobs/" + id + "/history");
    for (auto& e : history["events"]) out.push_back(e["event_type"]);
    return out;
  }
};

}  // namespace baton::test
