// API benchmark (docs/benchmarks.md): a real batond with W registered workers and J queued
// jobs, loaded by C keep-alive connections on loopback.
//   assigning polls: every poll hands out a job (each worker polls once, in random order)
//   idle polls:      workers whose image no queued job uses; every poll answers no_job_available
//   constant:        a tuned httplib server answering a fixed body, same requests, same run
// Usage: api_bench [WORKERS JOBS CONNECTIONS SECONDS]   (default 10000 100000 32 5)
// API_BENCH_SSE=N: N clients follow GET /events/stream (as dashboards do) through both phases.
// API_BENCH_POSTGRES=1: batond also writes the PostgreSQL view, to a server the bench starts.
// API_BENCH_SQLITE=0: without the SQLite view (with or without the PostgreSQL one).
// API_BENCH_BATOND=PATH: load another build's batond (comparing two builds in turn).
// API_BENCH_ASSIGNING_ONLY=1: the assigning phase alone (no constant endpoint, no idle phase):
// bench/peers/dispatch.sh, which compares it with a PostgreSQL job queue instead.
// API_BENCH_CALLGRIND=DIR: batond runs under valgrind's callgrind, counting instructions only
// through the assigning phase and the views' catch-up after it (bench/api_ir.sh reads DIR).
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <cstdlib>
#include <thread>
#include <tuple>
#include <vector>

#include "bench/constant_server.hpp"
#include "bench/proc_cpu.hpp"
#include "support/postgres_server.hpp"

using baton::bench::cpu_time;
using baton::bench::cpu_time_of;
using baton::bench::cpu_us;
using baton::bench::cpu_us_of;
using baton::bench::stat_fields;
using nlohmann::json;
using steady = std::chrono::steady_clock;

namespace {

const char* token = "bench-token-0123456789abcdef";

// Milliseconds on one clock for every thread of the bench (request spans, recalculation windows).
double now_ms() {
  static const auto epoch = steady::now();
  return std::chrono::duration<double, std::milli>(steady::now() - epoch).count();
}

struct result {
  double seconds = 0;
  size_t requests = 0, matched = 0;  // matched: replies of the expected kind
  std::vector<double> latencies_ms;
  std::vector<std::pair<double, double>> spans_ms;  // each request's start and end (now_ms)
  double rate() const { return requests / seconds; }
  double mean() const {
    double sum = 0;
    for (double l : latencies_ms) sum += l;
    return latencies_ms.empty() ? 0 : sum / latencies_ms.size();
  }
  double pct(double p) {
    if (latencies_ms.empty()) return 0;
    std::sort(latencies_ms.begin(), latencies_ms.end());
    return latencies_ms[std::min(latencies_ms.size() - 1, static_cast<size_t>(p * latencies_ms.size()))];
  }
};

int wait_for_port(const std::string& file) {
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in(file);
    int port = 0;
    if (in >> port && port > 0) return port;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// The CPU time of a process and its children (a PostgreSQL server: the postmaster and its
// backends, which cpu_us alone does not count).
double cpu_us_with_children(pid_t pid) {
  if (pid <= 0) return 0;
  double sum = cpu_us(pid);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto fields = stat_fields((entry.path() / "stat").string());
    std::string state;
    long parent = 0;
    fields >> state >> parent;
    if (parent == pid) sum += cpu_us_of((entry.path() / "stat").string());
  }
  return sum;
}

// The same per thread, summed by thread name: batond names its own threads by role
// (actors/thread_name.hpp: log_writer, log_syncer, proj:<projection>, http_io); CAF's
// scheduler threads, which run the scheduler actor, keep CAF's names.
std::map<std::string, cpu_time> cpu_by_thread(pid_t pid) {
  std::map<std::string, cpu_time> by_name;
  const auto dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    const cpu_time t = cpu_time_of(task.path() / "stat");
    cpu_time& sum = by_name[name];
    sum.user_us += t.user_us;
    sum.system_us += t.system_us;
  }
  return by_name;
}

// "name µs (kernel µs), …" per request, largest first, over what each thread name used
// between two readings: the kernel's part (system time: syscalls, page faults) apart, since
// it is not in bench/api_ir.sh's instruction counts.
std::string cpu_split(const std::map<std::string, cpu_time>& before, const std::map<std::string, cpu_time>& after,
                      size_t requests) {
  std::vector<std::tuple<double, double, std::string>> parts;
  const double n = static_cast<double>(std::max<size_t>(requests, 1));
  for (const auto& [name, t] : after) {
    auto was = before.find(name);
    const cpu_time base = was == before.end() ? cpu_time{} : was->second;
    const double per = (t.total() - base.total()) / n, kernel = (t.system_us - base.system_us) / n;
    if (per >= 0.5) parts.emplace_back(per, kernel, name);
  }
  std::sort(parts.rbegin(), parts.rend());
  std::string out;
  for (const auto& [per, kernel, name] : parts)
    out += (out.empty() ? "" : ", ") + name + " " + std::to_string(std::lround(per)) + " (kernel " +
           std::to_string(std::lround(kernel)) + ")";
  return out;
}

// The machine's idle time so far (idle + iowait over all CPUs, /proc/stat), and its total, in
// clock ticks: over a phase, whether the cores were busy (the path CPU-bound) or waiting (bound
// by its latency: fsync and thread hand-overs).
struct machine_ticks {
  double idle = 0, total = 0;
};
machine_ticks machine_ticks_now() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;  // "cpu": the sum over all CPUs
  machine_ticks t;
  for (int field = 0; field < 8; ++field) {  // user nice system idle iowait irq softirq steal
    double v = 0;
    in >> v;
    t.total += v;
    if (field == 3 || field == 4) t.idle += v;
  }
  return t;
}

pid_t spawn(std::vector<std::string> argv, const std::vector<std::string>& env) {
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

std::unique_ptr<httplib::Client> client(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);  // else a POST with a body waits ~40 ms for a delayed ACK (Nagle)
  c->set_read_timeout(60, 0);
  c->set_default_headers({{"X-API-Token", token}});
  return c;
}

// Runs body(thread index, client) on `conns` threads; each call returns false to stop.
template <class Body>
result load(int port, int conns, double seconds, Body body) {
  result r;
  std::mutex mu;
  std::atomic<bool> stop{false};
  auto t0 = steady::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < conns; ++t)
    ts.emplace_back([&, t] {
      auto c = client(port);
      std::vector<double> lat;
      std::vector<std::pair<double, double>> spans;
      size_t n = 0, matched = 0;
      for (size_t i = 0; !stop; ++i) {
        double start = now_ms();
        int m = body(t, i, *c);
        if (m < 0) break;
        double end = now_ms();
        lat.push_back(end - start);
        spans.emplace_back(start, end);
        ++n;
        matched += m;
        if (std::chrono::duration<double>(steady::now() - t0).count() > seconds) break;
      }
      std::lock_guard<std::mutex> g(mu);
      r.requests += n;
      r.matched += matched;
      r.latencies_ms.insert(r.latencies_ms.end(), lat.begin(), lat.end());
      r.spans_ms.insert(r.spans_ms.end(), spans.begin(), spans.end());
    });
  for (auto& t : ts) t.join();
  r.seconds = std::chrono::duration<double>(steady::now() - t0).count();
  return r;
}

int constant_server(const std::string& port_file, int threads) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  baton::bench::constant_server server({"127.0.0.1", 0, threads, 100000});
  std::string body = json{{"status", "no_job_available"}, {"reason", "no_job_for_this_worker"}}.dump();
  server.routes().Post("/jobs/request",
                       [&](const httplib::Request&, httplib::Response& res) { res.set_content(body, "application/json"); });
  int port = server.start();
  std::ofstream(port_file) << port << "\n";
  int sig;
  sigwait(&set, &sig);
  server.stop();
  return 0;
}

}  // namespace

// Waits until /healthz reports every log-fed projection caught up (at most 5 minutes): how far
// behind they were when asked, and how long it took.
struct projections_wait {
  uint64_t lag_at_start = 0;
  double seconds = 0;
};
projections_wait wait_for_projections(int port) {
  projections_wait out;
  auto t = std::chrono::steady_clock::now();
  auto c = client(port);
  for (bool first = true; std::chrono::steady_clock::now() < t + std::chrono::minutes(5); first = false) {
    auto r = c->Get("/healthz");
    if (!r || r->status != 200) break;
    uint64_t lag = 0;
    // (The parsed body is named: a range-for over a member of a temporary would iterate a
    // destroyed value, and that read 0 until the range-for's lifetime rules change in C++23.)
    const json health = json::parse(r->body);
    for (const auto& [name, p] : health.at("projections").items()) lag += p.value("lag_events", 0ull);
    if (first) out.lag_at_start = lag;
    if (lag == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  return out;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--constant-server") return constant_server(argv[2], std::stoi(argv[3]));
  size_t workers = argc > 1 ? std::stoul(argv[1]) : 10000, jobs = argc > 2 ? std::stoul(argv[2]) : 100000;
  int conns = argc > 3 ? std::stoi(argv[3]) : 32;
  double seconds = argc > 4 ? std::stod(argv[4]) : 5;
  size_t idle_workers = 1000;

  auto dir = std::filesystem::temp_directory_path() / ("baton-api-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::unique_ptr<baton::test::postgres_server> pg;
  if (std::getenv("API_BENCH_POSTGRES")) pg = std::make_unique<baton::test::postgres_server>();
  // One projections block (batond refuses a key given twice): the SQLite view off with
  // API_BENCH_SQLITE=0, the PostgreSQL view on with API_BENCH_POSTGRES=1.
  const bool no_sqlite = std::getenv("API_BENCH_SQLITE") && std::string(std::getenv("API_BENCH_SQLITE")) == "0";
  std::string projections;
  if (no_sqlite) projections += "sqlite: false";
  if (pg) projections += std::string(no_sqlite ? ", " : "") + "postgres: {dsn: \"" + pg->dsn() + "\"}";
  std::ofstream(dir / "batond.yaml") << (projections.empty() ? std::string() : "projections: {" + projections + "}\n")
                                     << "workers: {heartbeat_interval_seconds: 3600, reaper_interval_seconds: 3600}\n"
                                     << "threads: {http: " << conns + 8 << "}\nlog_level: warn\n"
                                     << "jobs: {worker_images: [no-jobs-image]}\n"  // the idle pool's image
                                     // One token stands for many users (and API_BENCH_SSE's dashboards)
                                     // and 11,000 workers share 32 connections: the per-caller budgets,
                                     // stream cap and per-user job cap would measure the load generator, not batond.
                                     << "limits: {operator_requests_per_second: 0, worker_requests_per_second: 0, "
                                        "event_streams_per_operator: 1000000}\n"
                                     << "scheduling: {max_jobs_per_user: 100000000"
                                     // API_BENCH_PLAN=1: a planning cycle every second, as batond runs it
                                     // (the snapshot on the scheduler's thread, the planner on its own)
                                     << (std::getenv("API_BENCH_PLAN") ? ", backfill: {bf_interval_seconds: 1}" : "")
                                     // API_BENCH_NO_CYCLES=1: no planning cycle or priority recalculation
                                     // after start-up (bench/api_ir.sh: under valgrind a poll takes ~50 times
                                     // as long, so a periodic cycle landing in the counted phase or not
                                     // moved the count per poll by a tenth)
                                     << (std::getenv("API_BENCH_NO_CYCLES") && !std::getenv("API_BENCH_PLAN")
                                             ? ", backfill: {bf_interval_seconds: 86400}, priority_calc_period_seconds: 86400"
                                             : "")
                                     << "}\n"
                                     // Extra batond settings for experiments, e.g. "event_log: {...}".
                                     << (std::getenv("API_BENCH_EXTRA_CONFIG") ? std::getenv("API_BENCH_EXTRA_CONFIG") : "")
                                     << "\n";
  const char* callgrind_dir = std::getenv("API_BENCH_CALLGRIND");
  const char* batond_path = std::getenv("API_BENCH_BATOND") ? std::getenv("API_BENCH_BATOND") : BATOND_PATH;
  std::vector<std::string> batond_argv = {batond_path,   "--data-dir",  (dir / "data").string(),       "--listen",
                                          "127.0.0.1:0", "--port-file", (dir / "batond.port").string()};
  if (callgrind_dir)
    batond_argv.insert(batond_argv.begin(),
                       {"/usr/bin/valgrind", "--tool=callgrind", "--separate-threads=yes", "--instr-atstart=no",
                        "--callgrind-out-file=" + std::string(callgrind_dir) + "/callgrind.out"});
  pid_t batond = spawn(batond_argv, {"BATON_CONFIG=" + (dir / "batond.yaml").string(), "BATON_API_TOKEN=" + std::string(token),
                                     "BATON_POSTGRES_PASSWORD=" + std::string(baton::test::postgres_server::password)});
  pid_t constant = spawn({argv[0], "--constant-server", (dir / "constant.port").string(), std::to_string(conns + 8)}, {});
  int port = wait_for_port((dir / "batond.port").string()), cport = wait_for_port((dir / "constant.port").string());
  if (!port || !cport) {
    std::fprintf(stderr, "servers did not start\n");
    return 1;
  }

  // Setup: workers (two pools) and jobs, through the API itself.
  std::vector<std::string> ids(workers + idle_workers), tokens(workers + idle_workers);
  auto reg = load(port, conns, 1e9, [&](int t, size_t i, httplib::Client& c) {
    size_t k = i * conns + t;
    if (k >= ids.size()) return -1;
    bool idle_pool = k >= workers;
    json body = {{"platform", "hpc"},
                 {"gpu_model", "A100"},
                 {"gpu_count", 1 + k % 4},
                 {"worker_image_key", idle_pool ? "no-jobs-image" : "default"}};
    auto r = c.Post("/workers/register", body.dump(), "application/json");
    if (!r || r->status != 200) std::abort();
    auto j = json::parse(r->body);
    ids[k] = j["worker_id"];
    tokens[k] = j["worker_token"];
    return 1;
  });
  auto created = load(port, conns, 1e9, [&](int t, size_t i, httplib::Client& c) {
    size_t k = i * conns + t;
    if (k >= jobs) return -1;
    json body = {{"title", "bench " + std::to_string(k)}, {"input_bundle_path", "/bundles/" + std::to_string(k)}};
    auto r = c.Post("/jobs", body.dump(), "application/json");
    if (!r || r->status != 200) std::abort();
    return 1;
  });
  std::printf("setup: %zu workers registered at %.0f/s, %zu jobs created at %.0f/s\n", ids.size(), reg.rate(), jobs,
              created.rate());
  // The log-fed projections (the SQL view) may still be applying the setup's events: the
  // phases measure batond in its steady state, so wait until /healthz reports no lag.
  auto setup_views = wait_for_projections(port);
  std::printf("setup: projections caught up %.1f s after it\n", setup_views.seconds);

  // Dashboards following the live stream through both phases (API_BENCH_SSE=N).
  const int sse_clients = std::getenv("API_BENCH_SSE") ? std::atoi(std::getenv("API_BENCH_SSE")) : 0;
  std::vector<std::unique_ptr<httplib::Client>> followers;
  std::vector<std::thread> following;
  std::atomic<uint64_t> sse_bytes{0};
  std::atomic<int> sse_open{0};
  for (int i = 0; i < sse_clients; ++i) {
    followers.push_back(std::make_unique<httplib::Client>("127.0.0.1", port));
    followers.back()->set_read_timeout(3600, 0);
    following.emplace_back([&, c = followers.back().get()] {
      c->Get(
          "/events/stream", {{"X-API-Token", token}},
          [&](const httplib::Response& r) {
            sse_open += r.status == 200;
            return r.status == 200;
          },
          [&](const char*, size_t n) {
            sse_bytes += n;
            return true;
          });
    });
  }
  for (auto deadline = steady::now() + std::chrono::seconds(10); sse_open < sse_clients && steady::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (sse_clients) std::printf("live stream: %d of %d clients following\n", sse_open.load(), sse_clients);

  auto poll = [&](httplib::Client& c, size_t k, const char* expect) {
    httplib::Headers h = {{"X-Worker-Token", tokens[k]}};
    auto r = c.Post(("/jobs/request?worker_id=" + ids[k]).c_str(), h, "", "application/json");
    if (!r || r->status != 200) std::abort();
    return r->body.find(expect) != std::string::npos ? 1 : 0;
  };

  // The constant endpoint is measured around each phase (before, between, after) and each
  // phase is compared with the mean of the two runs beside it: the machine's speed drifts by
  // ±15 % over a minute here, and a single reference taken earlier carried that into the ratio.
  auto constant_run = [&] {
    return load(cport, conns, seconds, [&](int, size_t, httplib::Client& c) {
      auto r = c.Post(("/jobs/request?worker_id=" + ids[0]).c_str(), "", "application/json");
      return r && r->status == 200 ? 1 : 0;
    });
  };
  const bool assigning_only = std::getenv("API_BENCH_ASSIGNING_ONLY") != nullptr;
  result constant_before, constant_between, idle, constant_after;
  if (!assigning_only) constant_before = constant_run();

  // Each busy-pool worker polls once, in a random order (fixed seed): every poll should assign.
  std::vector<size_t> order(workers);
  for (size_t k = 0; k < workers; ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  // batond's own log and poll figures (GET /metrics), read around the assigning polls: how
  // many appends and fsyncs they took and how long each waited, to see where a poll's time goes.
  auto log_figures = [&] {
    std::map<std::string, double> m;
    auto c = client(port);
    auto r = c->Get("/metrics");
    if (!r || r->status != 200) return m;
    std::istringstream in(r->body);
    std::string line;
    while (std::getline(in, line)) {  // "name value" (histograms' _sum and _count among them)
      auto space = line.rfind(' ');
      if (!line.empty() && line[0] != '#' && space != std::string::npos)
        m[line.substr(0, space)] = std::atof(line.c_str() + space + 1);
    }
    return m;
  };
  auto log_before = log_figures();
  std::fprintf(stderr, "phase: assigning\n");  // markers for profiling a phase (perf record -p)
  // API_BENCH_RECALCULATE=1: priority recalculations back to back (POST /priority/recalculate)
  // while the assigning polls run, to see what a recalculation costs a poll; =<ms>: one every
  // <ms> milliseconds, and the polls that overlapped one are told apart from the others.
  std::atomic<bool> assigning_done{false};
  std::atomic<int> recalculations{0};
  std::thread recalculator;
  const char* loop_path = "/priority/recalculate";
  const char* recalculate = std::getenv("API_BENCH_RECALCULATE");
  int recalculate_every_ms = recalculate ? std::atoi(recalculate) : 0;
  std::vector<std::pair<double, double>> recalculation_windows;  // each call's start and end (now_ms)
  if (recalculate)
    recalculator = std::thread([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_default_headers({{"X-API-Token", token}});
      while (!assigning_done) {
        if (recalculate_every_ms > 1) std::this_thread::sleep_for(std::chrono::milliseconds(recalculate_every_ms));
        if (assigning_done) break;
        double start = now_ms();
        auto r = c.Post(loop_path, "", "application/json");
        if (!r || r->status != 200) std::abort();
        recalculation_windows.emplace_back(start, now_ms());
        ++recalculations;
      }
    });
  // Under callgrind: count from here until the views have caught up after the phase.
  auto callgrind = [&](const char* what) {
    if (!callgrind_dir) return;
    const std::string cmd = std::string("callgrind_control ") + what + " " + std::to_string(batond) + " >/dev/null";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "%s failed\n", cmd.c_str());
  };
  callgrind("--instr=on");
  double cpu_before_assigning = cpu_us(batond);
  const pid_t postmaster = pg ? pg->postmaster() : 0;
  const double pg_cpu_before_assigning = cpu_us_with_children(postmaster);
  auto threads_before_assigning = cpu_by_thread(batond);
  const machine_ticks machine_before_assigning = machine_ticks_now();
  auto assigning = load(port, conns, seconds, [&](int t, size_t i, httplib::Client& c) {
    size_t k = i * conns + t;
    if (k >= workers) return -1;
    return poll(c, order[k], "\"assigned\"");
  });
  double assigning_cpu = cpu_us(batond) - cpu_before_assigning;
  auto threads_at_assigning_end = cpu_by_thread(batond);
  const machine_ticks machine_at_assigning_end = machine_ticks_now();
  assigning_done = true;
  // The views run at background priority (projections/background_priority.hpp): they may
  // trail the polls; they catch up before the idle phase, and their work is counted apart.
  std::fprintf(stderr, "phase: views\n");
  auto assigning_views = wait_for_projections(port);
  double assigning_cpu_with_views = cpu_us(batond) - cpu_before_assigning;
  auto threads_after_assigning = cpu_by_thread(batond);
  const double pg_cpu_assigning = cpu_us_with_children(postmaster) - pg_cpu_before_assigning;
  callgrind("--instr=off");
  if (callgrind_dir) {  // the threads' names in the order callgrind numbers them (by creation)
    callgrind("--dump=assigning");
    std::vector<std::pair<long, std::string>> tasks;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(batond) + "/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      tasks.emplace_back(std::stol(task.path().filename().string()), name);
    }
    std::sort(tasks.begin(), tasks.end());
    std::ofstream names(std::string(callgrind_dir) + "/threads.txt");
    for (const auto& [tid, name] : tasks) names << name << "\n";
  }
  if (recalculator.joinable()) {
    recalculator.join();
    std::printf("%s calls during the assigning polls: %d\n", loop_path, recalculations.load());
    // Polls that were in flight while a recalculation ran (it answers once in force), and the rest.
    result during, outside;
    for (size_t k = 0; k < assigning.spans_ms.size(); ++k) {
      auto [start, end] = assigning.spans_ms[k];
      bool overlaps = false;
      for (const auto& [a, b] : recalculation_windows) overlaps |= start < b && end > a;
      (overlaps ? during : outside).latencies_ms.push_back(assigning.latencies_ms[k]);
    }
    std::printf(
        "polls during a recalculation: %zu, p50 %.2f ms p99 %.2f ms; the others: %zu, p50 %.2f ms p99 %.2f ms "
        "(p99 ratio %.2f)\n",
        during.latencies_ms.size(), during.pct(0.5), during.pct(0.99), outside.latencies_ms.size(), outside.pct(0.5),
        outside.pct(0.99), outside.pct(0.99) > 0 ? during.pct(0.99) / outside.pct(0.99) : 0.0);
  }
  auto log_after = log_figures();
  auto delta = [&](const char* key) { return log_after[key] - log_before[key]; };
  auto mean_ms = [&](const char* sum, const char* count) { return delta(count) > 0 ? delta(sum) / delta(count) * 1e3 : 0.0; };
  double idle_cpu = 0;
  if (!assigning_only) {
    std::fprintf(stderr, "phase: constant\n");
    constant_between = constant_run();
    std::fprintf(stderr, "phase: idle\n");
    double cpu_before_idle = cpu_us(batond);
    idle = load(port, conns, seconds, [&](int t, size_t i, httplib::Client& c) {
      return poll(c, workers + (i * conns + t) % idle_workers, "no_job_available");
    });
    idle_cpu = cpu_us(batond) - cpu_before_idle;
    constant_after = constant_run();
  }
  double ref_assigning = (constant_before.rate() + constant_between.rate()) / 2;
  double ref_idle = (constant_between.rate() + constant_after.rate()) / 2;
  if (!assigning_only)
    std::printf("constant endpoint: %.0f / %.0f / %.0f req/s (before, between, after)  p50 %.2f ms  p99 %.2f ms\n",
                constant_before.rate(), constant_between.rate(), constant_after.rate(), constant_between.pct(0.5),
                constant_between.pct(0.99));
  std::printf(
      "assigning polls:   %.0f req/s  mean %.2f ms  p50 %.2f ms  p99 %.2f ms  (%zu of %zu assigned, %.0f%% of constant)"
      "  batond CPU %.0f us/poll\n",
      assigning.rate(), assigning.mean(), assigning.pct(0.5), assigning.pct(0.99), assigning.matched, assigning.requests,
      ref_assigning > 0 ? 100 * assigning.rate() / ref_assigning : 0.0, assigning_cpu / std::max<size_t>(assigning.requests, 1));
  std::printf(
      "  views: %llu events behind when the polls ended, caught up %.2f s later; batond CPU with the views' "
      "catch-up %.0f us/poll\n",
      static_cast<unsigned long long>(assigning_views.lag_at_start), assigning_views.seconds,
      assigning_cpu_with_views / std::max<size_t>(assigning.requests, 1));
  std::printf("  batond CPU by thread, the same (us/poll): %s\n",
              cpu_split(threads_before_assigning, threads_after_assigning, assigning.requests).c_str());
  std::printf("  batond CPU by thread, the polls alone (us/poll): %s\n",
              cpu_split(threads_before_assigning, threads_at_assigning_end, assigning.requests).c_str());
  {
    const double total = machine_at_assigning_end.total - machine_before_assigning.total;
    const double idle = machine_at_assigning_end.idle - machine_before_assigning.idle;
    std::printf("  the machine during the polls: %.0f%% of its CPU time idle (%ld CPUs)\n", total > 0 ? 100 * idle / total : 0.0,
                sysconf(_SC_NPROCESSORS_ONLN));
  }
  if (postmaster)
    std::printf("  the PostgreSQL server's CPU, the same: %.0f us/poll\n",
                pg_cpu_assigning / std::max<size_t>(assigning.requests, 1));
  std::printf(
      "  inside batond meanwhile: a poll %.2f ms on average from its request to its reply; %.0f appends "
      "(%.1f polls each, %.2f ms each until durable), %.0f fsyncs (%.2f ms each)\n",
      mean_ms("baton_poll_seconds_sum", "baton_poll_seconds_count"), delta("baton_log_append_seconds_count"),
      delta("baton_log_append_seconds_count") > 0 ? assigning.requests / delta("baton_log_append_seconds_count") : 0.0,
      mean_ms("baton_log_append_seconds_sum", "baton_log_append_seconds_count"), delta("baton_log_fsync_seconds_count"),
      mean_ms("baton_log_fsync_seconds_sum", "baton_log_fsync_seconds_count"));
  if (!assigning_only)
    std::printf(
        "idle polls:        %.0f req/s  p50 %.2f ms  p99 %.2f ms  (%zu of %zu no_job, %.0f%% of constant)"
        "  batond CPU %.0f us/poll\n",
        idle.rate(), idle.pct(0.5), idle.pct(0.99), idle.matched, idle.requests, 100 * idle.rate() / ref_idle,
        idle_cpu / std::max<size_t>(idle.requests, 1));
  if (sse_clients) {
    std::printf("live stream: %.1f MB received by %d clients over both phases\n", sse_bytes / 1e6, sse_clients);
    for (auto& c : followers) c->stop();
    for (auto& t : following) t.join();
  }
  kill(batond, SIGTERM);
  kill(constant, SIGTERM);
  waitpid(batond, nullptr, 0);
  waitpid(constant, nullptr, 0);
  std::filesystem::remove_all(dir);
  return assigning.matched == assigning.requests && idle.matched == idle.requests ? 0 : 1;
}
