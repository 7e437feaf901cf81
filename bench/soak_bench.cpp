// Soak (docs/benchmarks.md): a real batond under hours-long steady load, restarted every few
// minutes, watched for what grows. WORKERS simulated pilots (default 5,000) each heartbeat and,
// while idle, poll every 30 s (jittered); an assigned job starts, checkpoints, and ends as
// completed, failed or handed back; an operator submits jobs, cancels, requeues and prunes.
// Every 10 s it samples batond's RSS, open fds, the data dir's size and the p99 of the
// requests answered since the last sample, and what GET /metrics says holds batond's memory
// (heap, SQLite, RocksDB, pruned stubs), into OUT/samples.csv.
//   soak_bench MINUTES [WORKERS]        OUT = $SOAK_OUT or build/soak
//   SOAK_RESTART_MINUTES (default 5): SIGTERM and start again this often (0: never)
//   SOAK_JOBS_PER_SECOND (default 1): the operator's submission rate
// An error is any 5xx, any answer the protocol does not allow at that point, or a failed
// connection while batond is meant to be up; connections refused while it restarts are
// counted apart. Exit 1 if there was an error.
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <fcntl.h>
#include <queue>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

using nlohmann::json;
using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

const char* token = "soak-token-0123456789abcdef";

// --- batond, started and stopped by the soak itself ---
struct daemon_process {
  fs::path dir, binary;
  int port = 0;
  pid_t pid = -1;

  bool start() {
    std::vector<std::string> argv = {binary.string(),
                                     "--data-dir",
                                     (dir / "data").string(),
                                     "--listen",
                                     "127.0.0.1:" + std::to_string(port),
                                     "--port-file",
                                     (dir / "batond.port").string()};
    std::vector<std::string> env = {"BATON_CONFIG=" + (dir / "batond.yaml").string(), "BATON_API_TOKEN=" + std::string(token)};
    for (char** e = environ; *e; ++e)
      if (std::string(*e).rfind("BATON_", 0) != 0) env.emplace_back(*e);
    std::vector<char*> args, envp;
    for (auto& a : argv) args.push_back(a.data());
    for (auto& kv : env) envp.push_back(kv.data());
    args.push_back(nullptr);
    envp.push_back(nullptr);
    fs::remove(dir / "batond.port");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, (dir / "batond.err").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    // Nothing of the soak's own (its samples file, its pilots' sockets) in batond's fd count.
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return false;
    const auto deadline = steady::now() + std::chrono::minutes(5);
    while (steady::now() < deadline) {
      std::ifstream in(dir / "batond.port");
      int p = 0;
      if (in >> p && p > 0) {
        port = p;
        return true;
      }
      if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  int stop() {
    ::kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

// --- what every thread reports ---
struct tally {
  std::mutex mu;
  std::vector<double> latencies_ms;  // since the last sample
  uint64_t requests = 0, errors = 0, refused_while_restarting = 0, conflicts = 0, reregistered = 0;
  uint64_t jobs_submitted = 0, jobs_completed = 0, jobs_failed = 0, jobs_handed_back = 0, cancels = 0, requeues = 0;
  std::vector<std::string> first_errors;
  void error(const std::string& what) {
    ++errors;
    if (first_errors.size() < 20) first_errors.push_back(what);
  }
};

std::atomic<bool> restarting{false}, stopping{false};
std::atomic<int> current_port{0};

struct call_result {
  int status = 0;  // 0: no answer
  json body;
};

// One request on a keep-alive client; a failed connection while batond restarts is waited out
// and retried (it is not an error), anything else is reported as it is.
call_result call(std::unique_ptr<httplib::Client>& c, int& port, tally& t, const std::string& method, const std::string& path,
                 const json& body, const httplib::Headers& h) {
  for (;;) {
    if (!c || port != current_port.load()) {
      port = current_port.load();
      c = std::make_unique<httplib::Client>("127.0.0.1", port);
      c->set_keep_alive(true);
      c->set_tcp_nodelay(true);
      c->set_read_timeout(60, 0);
    }
    const auto t0 = steady::now();
    auto r = method == "GET"      ? c->Get(path.c_str(), h)
             : method == "DELETE" ? c->Delete(path.c_str(), h)
                                  : c->Post(path.c_str(), h, body.is_null() ? "" : body.dump(), "application/json");
    const double ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
    if (r && r->status != 503) {
      std::lock_guard<std::mutex> g(t.mu);
      ++t.requests;
      t.latencies_ms.push_back(ms);
      if (r->status >= 500) t.error(method + " " + path + " -> " + std::to_string(r->status) + " " + r->body.substr(0, 200));
      return {r->status, r->body.empty() ? json(nullptr) : json::parse(r->body, nullptr, false)};
    }
    // No answer, or 503 (batond stopping: not durable yet, draining): a restart, or an error.
    if (!restarting.load()) {
      // The restarter may not have raised its flag yet when the daemon is already going: look again shortly.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!restarting.load()) {
        std::lock_guard<std::mutex> g(t.mu);
        ++t.requests;
        t.error(method + " " + path + " -> " +
                (r ? std::to_string(r->status) + " " + r->body.substr(0, 200) : httplib::to_string(r.error())));
        return {r ? r->status : 0, nullptr};
      }
    }
    {
      std::lock_guard<std::mutex> g(t.mu);
      ++t.refused_while_restarting;
    }
    c.reset();
    while (restarting.load() && !stopping.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (stopping.load()) return {};
  }
}

// --- the simulated pilots ---
struct pilot {
  std::string id, token, job;
  int phase = 0;  // 0 idle, 1 running (checkpoint due), 2 running (end due)
  steady::time_point next_beat, next_step;
};

void pilots_thread(int index, int threads, int workers, tally& t, std::atomic<int>& registered) {
  std::mt19937_64 rng(1234 + index);
  auto jitter = [&](double lo, double hi) {
    return std::chrono::duration_cast<steady::duration>(
        std::chrono::duration<double>(std::uniform_real_distribution<double>(lo, hi)(rng)));
  };
  std::unique_ptr<httplib::Client> c;
  int port = 0;
  // The simulated pilots register as an admin starting pilots by hand would (a Slurm pilot's
  // one-time credential needs a placeholder; the pilot token registers Salad workers only).
  // Registrations share the admin's budget: a 429 is waited out (as baton-worker does).
  const httplib::Headers as_pilot = {{"X-API-Token", token}};
  auto enroll = [&](pilot& p) {
    call_result r;
    for (int tries = 0; tries < 100 && !stopping.load(); ++tries) {
      r = call(c, port, t, "POST", "/workers/register",
               {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}, {"vram_gb", 80}}, as_pilot);
      if (r.status != 429) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200) + jitter(0, 0.3));
    }
    if (r.status != 200) {
      std::lock_guard<std::mutex> g(t.mu);
      t.error("register -> " + std::to_string(r.status) + " " + r.body.dump().substr(0, 200));
      return false;
    }
    p.id = r.body.value("worker_id", "");
    p.token = r.body.value("worker_token", "");
    return true;
  };
  std::vector<pilot> mine;
  for (int i = index; i < workers; i += threads) {
    pilot p;
    if (!enroll(p)) continue;
    auto now = steady::now();
    p.next_beat = now + jitter(0, 30);
    p.next_step = now + jitter(0, 30);
    mine.push_back(std::move(p));
    ++registered;
  }
  using item = std::pair<steady::time_point, size_t>;
  std::priority_queue<item, std::vector<item>, std::greater<item>> due;
  for (size_t i = 0; i < mine.size(); ++i) due.push({std::min(mine[i].next_beat, mine[i].next_step), i});
  while (!stopping.load() && !due.empty()) {
    auto [when, i] = due.top();
    due.pop();
    std::this_thread::sleep_until(std::min(when, steady::now() + std::chrono::seconds(1)));
    if (steady::now() < when) {  // woken early to check for the end of the run
      due.push({when, i});
      continue;
    }
    pilot& p = mine[i];
    const httplib::Headers auth = {{"X-Worker-Token", p.token}};
    auto now = steady::now();
    if (now >= p.next_beat) {
      json beat = p.job.empty() ? json::object() : json{{"job_id", p.job}, {"progress", p.phase == 1 ? 0.25 : 0.75}};
      auto r = call(c, port, t, "POST", "/workers/" + p.id + "/heartbeat", beat, auth);
      if (r.status == 404 || r.status == 401) {  // reaped while batond was away: a real pilot registers again
        std::lock_guard<std::mutex> g(t.mu);
        ++t.reregistered;
        p.job.clear();
        p.phase = 0;
        enroll(p);
      } else if (r.status != 204 && r.status != 200 && r.status != 0) {
        std::lock_guard<std::mutex> g(t.mu);
        t.error("heartbeat -> " + std::to_string(r.status) + " " + r.body.dump().substr(0, 200));
      }
      p.next_beat = now + jitter(25, 35);
    }
    if (now >= p.next_step) {
      if (p.phase == 0) {
        auto r = call(c, port, t, "POST", "/jobs/request?worker_id=" + p.id, nullptr, auth);
        if (r.status == 200 && r.body.value("status", "") == "assigned") {
          p.job = r.body.value("job_id", "");
          auto s = call(c, port, t, "POST", "/jobs/" + p.job + "/start", nullptr, auth);
          if (s.status == 204) {
            p.phase = 1;
            p.next_step = now + jitter(3, 15);
          } else {  // cancelled in between: 409
            std::lock_guard<std::mutex> g(t.mu);
            ++t.conflicts;
            p.job.clear();
            p.next_step = now + jitter(1, 2);
          }
        } else {
          p.next_step = now + jitter(25, 35);
        }
      } else if (p.phase == 1) {
        auto r = call(c, port, t, "POST", "/jobs/" + p.job + "/checkpoint",
                      {{"checkpoint_manifest_path", "/soak/" + p.job + "/manifest.json"}, {"progress", 0.5}}, auth);
        p.phase = 2;
        p.next_step = now + jitter(3, 15);
        if (r.status == 409) {  // cancelled or taken back meanwhile
          std::lock_guard<std::mutex> g(t.mu);
          ++t.conflicts;
          p.job.clear();
          p.phase = 0;
          p.next_step = now + jitter(1, 2);
        }
      } else {
        // Drawn per report: a roll fixed per job (its id's hash) handed the same tenth of the
        // jobs back on every attempt, forever (31,871 hand-backs in the first hour's run).
        const int roll = std::uniform_int_distribution<int>(0, 9)(rng);
        call_result r;
        if (roll < 8) {
          r = call(c, port, t, "POST", "/jobs/" + p.job + "/complete", nullptr, auth);
        } else if (roll == 8) {
          r = call(c, port, t, "POST", "/jobs/" + p.job + "/fail", {{"reason", "soak: failed on purpose"}}, auth);
        } else {
          r = call(c, port, t, "POST", "/jobs/" + p.job + "/handoff/start", {{"reason", "walltime"}}, auth);
          if (r.status == 204) r = call(c, port, t, "POST", "/jobs/" + p.job + "/handoff/complete", json::object(), auth);
        }
        {
          std::lock_guard<std::mutex> g(t.mu);
          if (r.status == 204)
            (roll < 8 ? t.jobs_completed : roll == 8 ? t.jobs_failed : t.jobs_handed_back)++;
          else if (r.status == 409)
            ++t.conflicts;
          else if (r.status != 0)
            t.error("job report -> " + std::to_string(r.status) + " " + r.body.dump().substr(0, 200));
        }
        p.job.clear();
        p.phase = 0;
        p.next_step = now + jitter(0.5, 2);
      }
    }
    due.push({std::min(p.next_beat, p.next_step), i});
  }
}

// --- the operator: submissions, cancels, requeues, prunes ---
void operator_thread(double jobs_per_second, tally& t) {
  std::unique_ptr<httplib::Client> c;
  int port = 0;
  const httplib::Headers admin = {{"X-API-Token", token}};
  std::mt19937_64 rng(99);
  std::vector<std::string> recent;
  const auto t0 = steady::now();
  for (uint64_t n = 0; !stopping.load(); ++n) {
    std::this_thread::sleep_until(
        t0 + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(n / jobs_per_second)));
    auto r =
        call(c, port, t, "POST", "/jobs", {{"title", "soak " + std::to_string(n)}, {"input_bundle_path", "/soak/bundle"}}, admin);
    if (r.status == 200) {
      std::lock_guard<std::mutex> g(t.mu);
      ++t.jobs_submitted;
      recent.push_back(r.body.value("id", ""));
      if (recent.size() > 200) recent.erase(recent.begin());
    } else if (r.status != 0) {
      std::lock_guard<std::mutex> g(t.mu);
      t.error("POST /jobs -> " + std::to_string(r.status) + " " + r.body.dump().substr(0, 200));
    }
    const uint64_t every = static_cast<uint64_t>(std::max(1.0, 10 * jobs_per_second));
    if (n % every == every / 2 && !recent.empty()) {  // a cancel every ~10 s
      auto id = recent[std::uniform_int_distribution<size_t>(0, recent.size() - 1)(rng)];
      auto d = call(c, port, t, "DELETE", "/jobs/" + id + "?force=true", nullptr, admin);
      std::lock_guard<std::mutex> g(t.mu);
      if (d.status / 100 == 2)
        ++t.cancels;
      else if (d.status == 409)
        ++t.conflicts;
      else if (d.status != 0)
        t.error("cancel -> " + std::to_string(d.status));
    }
    if (n % every == 0 && n > 0) {  // a requeue of a failed job every ~10 s
      auto failed = call(c, port, t, "GET", "/jobs?status=failed&limit=1", nullptr, admin);
      if (failed.status == 200 && failed.body.is_array() && !failed.body.empty()) {
        auto q = call(c, port, t, "POST", "/jobs/" + failed.body[0].value("id", "") + "/requeue", nullptr, admin);
        std::lock_guard<std::mutex> g(t.mu);
        if (q.status == 200)
          ++t.requeues;
        else if (q.status != 0 && q.status != 409)
          t.error("requeue -> " + std::to_string(q.status));
      }
    }
    if (n % (every * 6) == 1) {  // prune, every ~minute, what ended over 5 minutes ago (its record stays in the log)
      auto p = call(c, port, t, "DELETE", "/jobs?status=completed&status=failed&status=cancelled&older_than_minutes=5", nullptr,
                    admin);
      if (p.status != 200 && p.status != 0) {
        std::lock_guard<std::mutex> g(t.mu);
        t.error("prune -> " + std::to_string(p.status));
      }
    }
  }
}

// VmRSS, and its two parts: RssAnon (batond's own memory: heap, memtables, SQLite's page
// cache) and RssFile (mapped files: libraries, and views.sqlite, which SQLite maps).
// What batond says it holds (GET /metrics), sampled beside what /proc shows: who holds the heap.
struct memory_column {
  const char* csv;
  const char* series;
  bool in_kb;
};
const memory_column memory_columns[] = {
    {"heap_in_use_kb", R"(baton_memory_bytes{part="heap_in_use"})", true},
    {"heap_free_kb", R"(baton_memory_bytes{part="heap_free"})", true},
    {"sqlite_kb", R"(baton_memory_bytes{part="sqlite"})", true},
    {"rocksdb_memtables_kb", R"(baton_memory_bytes{part="rocksdb_memtables"})", true},
    {"rocksdb_block_cache_kb", R"(baton_memory_bytes{part="rocksdb_block_cache"})", true},
    {"rocksdb_table_readers_kb", R"(baton_memory_bytes{part="rocksdb_table_readers"})", true},
    {"jobs_pruned", "baton_jobs_pruned", false},
};

std::string scrape_metrics(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto r = c.Get("/metrics", {{"X-API-Token", token}});
  return r && r->status == 200 ? "\n" + r->body : "";
}

// One sample line's value, or -1 (no such line, or no scrape).
long long metric_value(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + series.size() + 2);
}

struct rss {
  long total_kb = 0, anon_kb = 0, file_kb = 0;
};
rss rss_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  rss r;
  auto value = [&](const char* key, long& out) {
    if (line.rfind(key, 0) == 0) out = std::stol(line.substr(std::strlen(key)));
  };
  while (std::getline(in, line)) {
    value("VmRSS:", r.total_kb);
    value("RssAnon:", r.anon_kb);
    value("RssFile:", r.file_kb);
  }
  return r;
}

size_t open_fds(pid_t pid) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    ++n;
  return n;
}

uint64_t dir_bytes(const fs::path& p) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const double minutes = argc > 1 ? std::stod(argv[1]) : 60;
  const int workers = argc > 2 ? std::stoi(argv[2]) : 5000;
  const double restart_minutes = std::getenv("SOAK_RESTART_MINUTES") ? std::stod(std::getenv("SOAK_RESTART_MINUTES")) : 5;
  const double jobs_per_second = std::getenv("SOAK_JOBS_PER_SECOND") ? std::stod(std::getenv("SOAK_JOBS_PER_SECOND")) : 1;
  const fs::path out = std::getenv("SOAK_OUT") ? std::getenv("SOAK_OUT") : "build/soak";
  fs::remove_all(out);
  fs::create_directories(out);
  daemon_process d;
  d.dir = fs::absolute(out);
  // Its own copy of batond: a rebuild during a long soak must not change what runs.
  d.binary = d.dir / "batond";
  fs::copy_file(BATOND_PATH, d.binary);
  std::ofstream(d.dir / "batond.yaml")
      << "workers: {heartbeat_interval_seconds: 30, heartbeat_timeout_multiplier: 4, reaper_interval_seconds: 30}\n"
      << "limits: {operator_requests_burst: 10000, operator_requests_per_second: 100, worker_requests_burst: 2000, "
         "worker_requests_per_second: 1000}\n"
      << "scheduling: {max_jobs_per_user: 100000000}\n"
      << "threads: {http: 16}\nlog_level: warn\n";
  if (!d.start()) {
    std::fprintf(stderr, "batond did not start; see %s\n", (d.dir / "batond.err").c_str());
    return 1;
  }
  current_port = d.port;
  std::printf("soak: %.0f min, %d pilots, %.1f jobs/s, a restart every %.0f min; samples in %s\n", minutes, workers,
              jobs_per_second, restart_minutes, (out / "samples.csv").c_str());

  tally t;
  std::atomic<int> registered{0};
  const int threads = 16;
  const auto t0 = steady::now();
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) ts.emplace_back(pilots_thread, i, threads, workers, std::ref(t), std::ref(registered));
  ts.emplace_back(operator_thread, jobs_per_second, std::ref(t));

  std::ofstream csv(out / "samples.csv");
  csv << "minute,rss_kb,rss_anon_kb,rss_file_kb,open_fds,data_bytes,jobs_created,requests,p50_ms,p99_ms,errors,"
         "refused_while_restarting,restarts";
  for (const auto& column : memory_columns) csv << "," << column.csv;
  csv << "\n";
  std::printf("%7s %9s %9s %5s %10s %9s %8s %8s %6s\n", "minute", "rss_kb", "anon_kb", "fds", "data_MB", "requests", "p50_ms",
              "p99_ms", "errors");
  int restarts = 0;
  auto next_restart = t0 + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(restart_minutes * 60));
  const auto end = t0 + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(minutes * 60));
  for (int sample = 1;; ++sample) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(10 * sample));
    const auto now = steady::now();
    std::vector<double> lat;
    uint64_t requests, errors, refused, jobs_created;
    {
      std::lock_guard<std::mutex> g(t.mu);
      lat.swap(t.latencies_ms);
      requests = t.requests;
      errors = t.errors;
      refused = t.refused_while_restarting;
      jobs_created = t.jobs_submitted + t.requeues;  // batond holds those not yet pruned; the pruned as small stubs
    }
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double p) { return lat.empty() ? 0.0 : lat[std::min(lat.size() - 1, static_cast<size_t>(p * lat.size()))]; };
    const double minute = std::chrono::duration<double>(now - t0).count() / 60;
    const rss mem = rss_of(d.pid);
    const size_t fds = open_fds(d.pid);
    const uint64_t bytes = dir_bytes(d.dir / "data");
    const std::string metrics = scrape_metrics(d.port);  // after the fd count: its connection is not batond's own
    csv << minute << "," << mem.total_kb << "," << mem.anon_kb << "," << mem.file_kb << "," << fds << "," << bytes << ","
        << jobs_created << "," << requests << "," << pct(0.5) << "," << pct(0.99) << "," << errors << "," << refused << ","
        << restarts;
    for (const auto& column : memory_columns) {
      const long long v = metric_value(metrics, column.series);
      csv << "," << (v < 0 || !column.in_kb ? v : v / 1024);
    }
    csv << "\n";
    csv.flush();
    if (sample % 6 == 0)
      std::printf("%7.1f %9ld %9ld %5zu %10.1f %9lu %8.2f %8.2f %6lu\n", minute, mem.total_kb, mem.anon_kb, fds, bytes / 1e6,
                  static_cast<unsigned long>(requests), pct(0.5), pct(0.99), static_cast<unsigned long>(errors));
    std::fflush(stdout);
    if (now >= end) break;
    if (restart_minutes > 0 && now >= next_restart) {
      restarting = true;
      int code = d.stop();
      if (code != 0) {
        std::lock_guard<std::mutex> g(t.mu);
        t.error("batond exited " + std::to_string(code) + " on SIGTERM");
      }
      if (!d.start()) {
        std::fprintf(stderr, "batond did not start again; see %s\n", (d.dir / "batond.err").c_str());
        stopping = true;
        restarting = false;
        for (auto& th : ts) th.join();
        return 1;
      }
      ++restarts;
      current_port = d.port;
      restarting = false;
      next_restart += std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(restart_minutes * 60));
    }
  }
  stopping = true;
  for (auto& th : ts) th.join();
  const int code = d.stop();
  std::printf(
      "pilots registered %d; requests %lu; errors %lu; refused while restarting %lu; restarts %d; batond's last exit %d\n",
      registered.load(), static_cast<unsigned long>(t.requests), static_cast<unsigned long>(t.errors),
      static_cast<unsigned long>(t.refused_while_restarting), restarts, code);
  std::printf(
      "jobs: submitted %lu, completed %lu, failed %lu, handed back %lu, cancelled %lu, requeued %lu; "
      "conflicts %lu (a report after a cancel), re-registrations %lu\n",
      static_cast<unsigned long>(t.jobs_submitted), static_cast<unsigned long>(t.jobs_completed),
      static_cast<unsigned long>(t.jobs_failed), static_cast<unsigned long>(t.jobs_handed_back),
      static_cast<unsigned long>(t.cancels), static_cast<unsigned long>(t.requeues), static_cast<unsigned long>(t.conflicts),
      static_cast<unsigned long>(t.reregistered));
  for (const auto& e : t.first_errors) std::printf("error: %s\n", e.c_str());
  return t.errors == 0 && code == 0 ? 0 : 1;
}
