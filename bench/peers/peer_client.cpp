// The baton side of bench/peers/submit.sh and bench/peers/cycles.sh: a small HTTP client of a
// running batond (keep-alive connections on loopback, the operator token from BATON_API_TOKEN).
//   peer_client creates PORT CLIENTS JOBS
//       POST /jobs from CLIENTS threads, JOBS in all: jobs/s and each create's latency.
//   peer_client batch PORT N
//       one POST /jobs/batch of a job array "0-(N-1)": its wall time and how many it created.
//   peer_client cycles PORT PENDING BUSY SECONDS
//       BUSY workers registered and each handed a job (they stay running), then PENDING + the
//       samples' jobs queued (POST /jobs/batch), so at least PENDING stay pending throughout.
//       For SECONDS, as batond's own loops run planning cycles and priority recalculations
//       (the config's bf_interval_seconds and priority_calc_period_seconds; a follower of
//       GET /events/stream counts their events): a poll every 5 ms, each by another idle
//       worker registered before (timed: it is handed a job), and a POST /jobs every 20 ms
//       (timed). Prints the latencies (p50, p99, max) of the polls and the creates, and the
//       cycles' events seen meanwhile.
// Output lines start with the subcommand's name and carry "key value" pairs the scripts read.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using nlohmann::json;
using steady = std::chrono::steady_clock;

namespace {

std::string token() {
  const char* t = std::getenv("BATON_API_TOKEN");
  if (!t) {
    std::fprintf(stderr, "peer_client: BATON_API_TOKEN is not set\n");
    std::exit(2);
  }
  return t;
}

double now_ms() {
  static const auto epoch = steady::now();
  return std::chrono::duration<double, std::milli>(steady::now() - epoch).count();
}

std::unique_ptr<httplib::Client> client(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);  // else a POST with a body waits for a delayed ACK (Nagle)
  c->set_read_timeout(120, 0);
  c->set_default_headers({{"X-API-Token", token()}});
  return c;
}

[[noreturn]] void fail(const char* what, const httplib::Result& r) {
  std::fprintf(stderr, "peer_client: %s: %s\n", what,
               r ? (std::to_string(r->status) + " " + r->body.substr(0, 500)).c_str() : httplib::to_string(r.error()).c_str());
  std::exit(1);
}

struct stats {
  std::vector<double> ms;
  double pct(double p) {
    if (ms.empty()) return 0;
    std::sort(ms.begin(), ms.end());
    return ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))];
  }
  double mean() const {
    double s = 0;
    for (double v : ms) s += v;
    return ms.empty() ? 0 : s / ms.size();
  }
  double max() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
  std::string line() {
    char buf[160];
    std::snprintf(buf, sizeof buf, "n %zu mean %.2f p50 %.2f p99 %.2f max %.2f", ms.size(), mean(), pct(0.5), pct(0.99), max());
    return buf;
  }
};

json job_body(size_t k) {
  return {{"title", "peer bench " + std::to_string(k)},
          {"input_bundle_path", "/bundles/" + std::to_string(k)},
          {"time_limit_seconds", 600}};
}

int creates(int port, int clients, size_t jobs) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  stats all;
  auto t0 = steady::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < clients; ++t)
    ts.emplace_back([&] {
      auto c = client(port);
      std::vector<double> mine;
      for (size_t k; (k = next++) < jobs;) {
        const double start = now_ms();
        auto r = c->Post("/jobs", job_body(k).dump(), "application/json");
        if (!r || r->status != 200) fail("POST /jobs", r);
        mine.push_back(now_ms() - start);
      }
      std::lock_guard<std::mutex> g(mu);
      all.ms.insert(all.ms.end(), mine.begin(), mine.end());
    });
  for (auto& t : ts) t.join();
  const double s = std::chrono::duration<double>(steady::now() - t0).count();
  std::printf("creates jobs %zu seconds %.3f rate %.0f %s\n", jobs, s, jobs / s, all.line().c_str());
  return 0;
}

int batch(int port, size_t n) {
  auto c = client(port);
  json body = {{"array", "0-" + std::to_string(n - 1)}, {"job", job_body(0)}};
  const std::string text = body.dump();
  auto t0 = steady::now();
  auto r = c->Post("/jobs/batch", text, "application/json");
  const double s = std::chrono::duration<double>(steady::now() - t0).count();
  if (!r || r->status != 200) fail("POST /jobs/batch", r);
  const size_t created = json::parse(r->body).value("created", size_t{0});
  std::printf("batch jobs %zu seconds %.3f\n", created, s);
  return created == n ? 0 : 1;
}

std::pair<std::string, std::string> register_worker(httplib::Client& c) {
  json body = {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}, {"worker_image_key", "default"}};
  auto r = c.Post("/workers/register", body.dump(), "application/json");
  if (!r || r->status != 200) fail("POST /workers/register", r);
  auto j = json::parse(r->body);
  return {j.at("worker_id").get<std::string>(), j.at("worker_token").get<std::string>()};
}

// One poll; true if it was handed a job.
bool poll(httplib::Client& c, const std::pair<std::string, std::string>& w) {
  auto r = c.Post(("/jobs/request?worker_id=" + w.first).c_str(), {{"X-Worker-Token", w.second}}, "", "application/json");
  if (!r || r->status != 200) fail("POST /jobs/request", r);
  return r->body.find("\"assigned\"") != std::string::npos;
}

// Queues n jobs in batches of at most 10,000 (POST /jobs/batch's limit), numbered from `from`.
void queue_jobs(httplib::Client& c, size_t from, size_t n) {
  for (size_t done = 0; done < n;) {
    const size_t k = std::min<size_t>(10000, n - done);
    json list = json::array();
    for (size_t i = 0; i < k; ++i) list.push_back(job_body(from + done + i));
    auto r = c.Post("/jobs/batch", json{{"jobs", list}}.dump(), "application/json");
    if (!r || r->status != 200) fail("POST /jobs/batch", r);
    done += k;
  }
}

void wait_for_views(httplib::Client& c) {
  for (auto deadline = steady::now() + std::chrono::minutes(5); steady::now() < deadline;) {
    auto r = c.Get("/healthz");
    if (!r || r->status != 200) fail("GET /healthz", r);
    uint64_t lag = 0;
    const json health = json::parse(r->body);
    for (const auto& [name, p] : health.at("projections").items()) lag += p.value("lag_events", 0ull);
    if (lag == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "peer_client: the views did not catch up within 5 minutes\n");
  std::exit(1);
}

int cycles(int port, size_t pending, size_t busy, double seconds) {
  const int poll_every_ms = 5, create_every_ms = 20;
  const size_t samples = static_cast<size_t>(seconds * 1000 / poll_every_ms) + 1;
  auto c = client(port);
  // The busy pool: each worker takes a job and keeps it (no heartbeat is due: the config's
  // intervals are long), so the pending jobs wait for them.
  std::vector<std::pair<std::string, std::string>> pool;
  for (size_t i = 0; i < busy; ++i) pool.push_back(register_worker(*c));
  queue_jobs(*c, 0, busy);
  for (auto& w : pool)
    if (!poll(*c, w)) {
      std::fprintf(stderr, "peer_client: a busy-pool worker was not handed a job\n");
      return 1;
    }
  queue_jobs(*c, busy, pending + samples);
  // The workers that poll, one poll each, registered before the window (a registration waits on
  // the scheduler as a poll does: registered in the window, it took the wait, not the poll).
  std::vector<std::pair<std::string, std::string>> idle;
  for (size_t i = 0; i < samples; ++i) idle.push_back(register_worker(*c));
  wait_for_views(*c);

  // The cycles' events as a dashboard sees them: counted by type while the window is open.
  std::atomic<bool> window{false}, stream_open{false};
  std::map<std::string, int> seen;
  std::mutex seen_mu;
  httplib::Client follower("127.0.0.1", port);
  follower.set_read_timeout(3600, 0);
  std::string pending_text;
  std::thread following([&] {
    follower.Get(
        "/events/stream", {{"X-API-Token", token()}},
        [&](const httplib::Response& r) {
          stream_open = r.status == 200;
          return r.status == 200;
        },
        [&](const char* data, size_t n) {
          pending_text.append(data, n);
          for (size_t eol; (eol = pending_text.find('\n')) != std::string::npos; pending_text.erase(0, eol + 1)) {
            const std::string line = pending_text.substr(0, eol);
            if (!window || line.rfind("data: {", 0) != 0) continue;
            const auto j = json::parse(line.substr(6), nullptr, false);
            if (j.is_object() && j.contains("type")) {
              std::lock_guard<std::mutex> g(seen_mu);
              ++seen[j["type"].get<std::string>()];
            }
          }
          return true;
        });
  });
  for (auto deadline = steady::now() + std::chrono::seconds(30); !stream_open;
       std::this_thread::sleep_for(std::chrono::milliseconds(5)))
    if (steady::now() > deadline) {
      std::fprintf(stderr, "peer_client: GET /events/stream did not answer within 30 s\n");
      std::exit(1);
    }
  struct timed {
    double start, end;
  };
  std::vector<timed> polls, creates_timed;
  size_t assigned = 0;
  const double t0 = now_ms();
  window = true;
  std::thread poller([&] {
    auto pc = client(port);
    for (size_t i = 0; now_ms() - t0 < seconds * 1000 && i < idle.size(); ++i) {
      const double start = now_ms();
      assigned += poll(*pc, idle[i]);
      polls.push_back({start, now_ms()});
      const double next = t0 + (i + 1) * poll_every_ms;
      if (next > now_ms()) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(next - now_ms()));
    }
  });
  std::thread creator([&] {
    auto cc = client(port);
    for (size_t i = 0; now_ms() - t0 < seconds * 1000; ++i) {
      const double start = now_ms();
      auto r = cc->Post("/jobs", job_body(1000000 + i).dump(), "application/json");
      if (!r || r->status != 200) fail("POST /jobs", r);
      creates_timed.push_back({start, now_ms()});
      const double next = t0 + (i + 1) * create_every_ms;
      if (next > now_ms()) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(next - now_ms()));
    }
  });
  poller.join();
  creator.join();
  window = false;
  follower.stop();
  following.join();

  stats polls_all, creates_all;
  for (const auto& t : polls) polls_all.ms.push_back(t.end - t.start);
  for (const auto& t : creates_timed) creates_all.ms.push_back(t.end - t.start);
  auto r = c->Get("/jobs?status=queued&limit=1");
  const std::string queued = r && r->has_header("X-Total-Count") ? r->get_header_value("X-Total-Count") : "?";
  std::printf("cycles events plans %d recalculations %d applied %d\n", seen["scheduler.plan_made"],
              seen["scheduler.priorities_recalculated"], seen["scheduler.priorities_applied"]);
  std::printf("cycles polls %s assigned %zu\n", polls_all.line().c_str(), assigned);
  std::printf("cycles creates %s\n", creates_all.line().c_str());
  std::printf("cycles queued_at_end %s\n", queued.c_str());
  return assigned == polls.size() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "creates" && argc == 5) return creates(std::stoi(argv[2]), std::stoi(argv[3]), std::stoul(argv[4]));
  if (what == "batch" && argc == 4) return batch(std::stoi(argv[2]), std::stoul(argv[3]));
  if (what == "cycles" && argc == 6)
    return cycles(std::stoi(argv[2]), std::stoul(argv[3]), std::stoul(argv[4]), std::stod(argv[5]));
  std::fprintf(stderr,
               "usage: peer_client creates PORT CLIENTS JOBS | batch PORT N | cycles PORT PENDING BUSY SECONDS\n"
               "       (the operator token in BATON_API_TOKEN)\n");
  return 2;
}
