// Preemption latency (docs/benchmarks.md): a real batond and W real baton-worker processes,
// each running a long checkpointing job of the general partition. Each round submits one job
// of the owner partition (which preempts the general one) and reads from the jobs' histories,
// on batond's clock:
//   decide:   the preemptor's job.created -> the victim's job.preempted (the decision, durable)
//   hand-off: job.preempted -> the victim's job.handoff_started (the worker hears it on its next
//             heartbeat, stops the payload and stores a final checkpoint)
//   total:    the preemptor's submit -> the victim's hand-off start
//   preemptor start: the victim's job.handoff_started -> the preemptor's job.assigned
// The preemptor exits at once and the victim resumes on the freed worker before the next round.
// Usage: preemption_bench [WORKERS ROUNDS HEARTBEAT_SECONDS]   (default 4 10 1)
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/util/time.hpp"

using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const char* token = "bench-token-0123456789abcdef";

pid_t spawn(std::vector<std::string> argv, const std::vector<std::string>& env, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
    // The child's output goes to its log, never to ours (a pipe reader would wait for it).
    if (!std::freopen(log.c_str(), "w", stderr) || !std::freopen("/dev/null", "w", stdout)) _exit(126);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

bool wait_until(const std::function<bool()>& pred, std::chrono::seconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

struct client {
  httplib::Client c;
  explicit client(int port) : c("127.0.0.1", port) {
    c.set_default_headers({{"X-API-Token", token}});
    c.set_read_timeout(30, 0);
  }
  json get(const std::string& path) {
    auto r = c.Get(path.c_str());
    return r && r->status == 200 ? json::parse(r->body) : json(nullptr);
  }
  // The recorded time of the job's latest event of this type (0: none).
  int64_t last_event(const std::string& id, const std::string& type) {
    auto h = get("/jobs/" + id + "/history");
    int64_t at = 0;
    if (h.is_object())
      for (const auto& e : h["events"])
        if (e["event_type"] == type) at = baton::util::parse_time_us(e["occurred_at"].get<std::string>()).value_or(0);
    return at;
  }
  std::string create(const std::string& title, const std::string& bundle, const std::string& partition) {
    auto r = c.Post("/jobs", json{{"title", title}, {"input_bundle_path", bundle}, {"partition", partition}}.dump(),
                    "application/json");
    if (!r || r->status != 200) {
      std::fprintf(stderr, "create failed: %s\n", r ? r->body.c_str() : "no reply");
      std::exit(1);
    }
    return json::parse(r->body)["id"];
  }
};

std::string bundle(const fs::path& dir, const std::string& name, const std::string& script) {
  auto path = dir / name;
  fs::create_directories(path);
  std::ofstream(path / "run.sh") << script;
  std::ofstream(path / "baton-job.json") << json{{"command", "sh run.sh"}, {"checkpoint_globs", {"*.chk"}}}.dump();
  return path.string();
}

struct stats {
  std::vector<double> ms;
  void add(double v) { ms.push_back(v); }
  std::string line() {
    if (ms.empty()) return "n/a";
    std::sort(ms.begin(), ms.end());
    char buf[128];
    std::snprintf(buf, sizeof buf, "p50 %8.1f ms  max %8.1f ms  (n=%zu)", ms[ms.size() / 2], ms.back(), ms.size());
    return buf;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int workers = argc > 1 ? std::atoi(argv[1]) : 4;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 10;
  double heartbeat = argc > 3 ? std::atof(argv[3]) : 1;
  char tmpl[] = "/tmp/preemption-bench-XXXXXX";
  fs::path dir = mkdtemp(tmpl);
  std::ofstream(dir / "batond.yaml")
      << "workers: {heartbeat_interval_seconds: 10, heartbeat_timeout_multiplier: 6}\n"
         "limits: {operator_requests_per_second: 0}\n"  // the bench reads histories every 20 ms"
         "scheduling:\n"
         "  partitions: {normal: {priority_tier: 1}, owner: {priority_tier: 10, preempt: [normal]}}\n"
         "  preempt_grace_seconds: 60\n";
  auto port_file = (dir / "port").string();
  pid_t batond =
      spawn({BATOND_PATH, "--data-dir", (dir / "data").string(), "--listen", "127.0.0.1:0", "--port-file", port_file},
            {"BATON_CONFIG=" + (dir / "batond.yaml").string(), "BATON_API_TOKEN=" + std::string(token), "BATON_LOG_LEVEL=warn"},
            (dir / "batond.log").string());
  int port = 0;
  wait_until(
      [&] {
        std::ifstream in(port_file);
        return static_cast<bool>(in >> port) && port > 0;
      },
      30s);
  if (port <= 0) {
    std::fprintf(stderr, "batond did not start (see %s)\n", (dir / "batond.log").c_str());
    return 1;
  }
  std::vector<pid_t> worker_pids;
  // Every way out stops the children and says where their logs are.
  auto finish = [&](int code) {
    for (auto pid : worker_pids) kill(pid, SIGTERM);
    for (auto pid : worker_pids) waitpid(pid, nullptr, 0);
    kill(batond, SIGTERM);
    waitpid(batond, nullptr, 0);
    if (code == 0)
      fs::remove_all(dir);
    else
      std::fprintf(stderr, "logs and data kept in %s\n", dir.c_str());
    return code;
  };
  client op(port);
  // Victims: endless jobs that checkpoint every 0.2 s and resume from their checkpoint.
  const std::string victim_script =
      "n=0; if [ -f n.chk ]; then n=$(cat n.chk); fi\n"
      "while true; do sleep 0.2; n=$((n+1)); echo $n > n.tmp && mv n.tmp n.chk; done\n";
  std::vector<std::string> victims;
  for (int i = 0; i < workers; ++i)
    victims.push_back(op.create("victim", bundle(dir, "victim-" + std::to_string(i), victim_script), "normal"));
  for (int i = 0; i < workers; ++i) {
    auto n = std::to_string(i);
    worker_pids.push_back(
        spawn({BATON_WORKER_PATH},
              {"BATON_URL=http://127.0.0.1:" + std::to_string(port), "BATON_API_TOKEN=" + std::string(token),
               "BATON_WORKER_IMAGE_KEY=default", "BATON_PLATFORM=hpc", "BATON_GPU_MODEL=A100", "BATON_GPU_COUNT=1",
               "BATON_GPU_VRAM_GB=80", "BATON_HEARTBEAT_SECONDS=" + std::to_string(heartbeat), "BATON_CHECKPOINT_SECONDS=30",
               "BATON_IDLE_STRATEGY=poll_then_exit", "BATON_IDLE_POLL_SECONDS=0.1", "BATON_IDLE_MAX_SECONDS=3600",
               "BATON_KILL_GRACE_SECONDS=5", "BATON_WORK_DIR=" + (dir / ("work-" + n)).string(), "BATON_LOG_LEVEL=warn",
               "SLURM_JOB_ID=", "BATON_CLUSTER_NAME="},
              (dir / ("worker-" + n + ".log")).string()));
  }
  auto all_running = [&] {
    auto running = op.get("/jobs?status=running&limit=1000");
    return running.is_array() && static_cast<int>(running.size()) == workers;
  };
  if (!wait_until(all_running, 60s)) {
    std::fprintf(stderr, "the victims did not all start\n");
    return finish(1);
  }
  const auto preemptor_bundle = bundle(dir, "preemptor", "exit 0\n");
  stats decide, handoff, total, start;
  for (int round = 0; round < rounds; ++round) {
    // Submit at a different point of the victim worker's heartbeat period each round (the
    // golden-ratio sequence spreads them evenly), so the hand-off figures cover the period.
    double phase = std::fmod(0.618034 * (round + 1), 1.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + static_cast<int>(phase * heartbeat * 1000)));
    auto p = op.create("preemptor", preemptor_bundle, "owner");
    std::string victim;
    int64_t preempted = 0, handed = 0;
    bool ok = wait_until(
        [&] {
          for (const auto& v : victims) {
            auto h = op.last_event(v, "job.handoff_started");
            auto t = op.last_event(v, "job.preempted");
            if (t && h > t && t >= op.last_event(p, "job.created")) {
              victim = v, preempted = t, handed = h;
              return true;
            }
          }
          return false;
        },
        60s);
    if (!ok || !wait_until([&] { return op.get("/jobs/" + p).value("status", "") == "completed"; }, 60s)) {
      std::fprintf(stderr, "round %d: the preemption did not complete; preemptor %s\n", round,
                   op.get("/jobs/" + p).dump().c_str());
      for (const auto& v : victims) std::fprintf(stderr, "victim %s\n", op.get("/jobs/" + v + "/history").dump().c_str());
      return finish(1);
    }
    auto submitted = op.last_event(p, "job.created"), assigned = op.last_event(p, "job.assigned");
    decide.add((preempted - submitted) / 1000.0);
    handoff.add((handed - preempted) / 1000.0);
    total.add((handed - submitted) / 1000.0);
    start.add((assigned - handed) / 1000.0);
    if (!wait_until(all_running, 60s)) {
      std::fprintf(stderr, "round %d: the victim did not resume\n", round);
      return finish(1);
    }
  }
  std::printf("preemption_bench: %d workers, %d rounds, worker heartbeat %.1f s\n", workers, rounds, heartbeat);
  std::printf("  decide   (submit -> job.preempted)          %s\n", decide.line().c_str());
  std::printf("  hand-off (job.preempted -> handoff_started) %s\n", handoff.line().c_str());
  std::printf("  total    (submit -> victim's hand-off)      %s\n", total.line().c_str());
  std::printf("  preemptor start (hand-off -> assigned)     %s\n", start.line().c_str());
  return finish(0);
}
