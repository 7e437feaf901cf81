// Event log benchmarks (docs/benchmarks.md):
//   eventlog_bench append PRODUCERS SECONDS   durable appends/s through the log writer actor
//   eventlog_bench replay EVENTS              replay rate (decode + hash chain + apply)
//   eventlog_bench create EVENTS              the store's cost of a new stream's first event
// Each run uses a fresh RocksDB under $TMPDIR (default /tmp) and removes it afterwards.
#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_map>

#include "actors/log_writer.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"

using namespace baton;
using clock_type = std::chrono::steady_clock;

namespace {

std::string fresh_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/baton-bench-XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A UUID-shaped id, as real job ids and command ids are (uuid4): no long shared prefixes.
std::string uuid_like(uint64_t a, uint64_t b) {
  char buf[40];
  uint64_t h = splitmix(a * 1000003 + b), l = splitmix(h ^ b);
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-8%03x-%012llx", static_cast<unsigned>(h >> 32),
                static_cast<unsigned>(h >> 16) & 0xffff, static_cast<unsigned>(h) & 0xfff, static_cast<unsigned>(l >> 48) & 0xfff,
                static_cast<unsigned long long>(l & 0xffffffffffffULL));
  return buf;
}

// An event shaped like the real ones: a job stream id, a command id and a small payload.
events::append_command job_command(uint64_t job, uint64_t n) {
  events::append_command c;
  c.stream_id = "job/" + uuid_like(job, 0);
  c.command_id = uuid_like(job, n + 1);
  c.recorded_at_us = 1'763'800'000'000'000LL + static_cast<int64_t>(n);
  c.correlation_id = "req-" + std::to_string(n);
  c.actor = "worker:bench";
  c.events.push_back({"job.progress_reported", 1, events::to_payload({{"progress", 0.5}, {"worker_id", "w-17"}, {"step", n}})});
  return c;
}

struct shared_counters {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> acked{0};
  std::atomic<int> running{0};
  std::mutex mu;
  std::vector<double> latencies_ms;
};

void produce(caf::event_based_actor* self, actors::log_writer_actor log, shared_counters* c, uint64_t id, uint64_t n,
             std::vector<double>* lat) {
  if (c->stop) {
    std::lock_guard<std::mutex> g(c->mu);
    c->latencies_ms.insert(c->latencies_ms.end(), lat->begin(), lat->end());
    delete lat;
    --c->running;
    self->quit();
    return;
  }
  auto t0 = clock_type::now();
  self->request(log, caf::infinite, actors::append_atom::value, std::vector<events::append_command>{job_command(id, n)})
      .then(
          [=](std::vector<events::append_result>& r) {
            if (r.empty() || !r[0].ok()) std::abort();
            lat->push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
            ++c->acked;
            produce(self, log, c, id, n + 1, lat);
          },
          [=](caf::error&) { std::abort(); });
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

int bench_append(int producers, double seconds) {
  auto dir = fresh_dir();
  std::shared_ptr<events::event_store> store = events::event_store::open(dir);
  shared_counters c;
  actors::log_status st;
  {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    caf::actor_system sys{cfg};
    auto log = actors::spawn_log_writer(sys, store);
    auto t0 = clock_type::now();
    for (int p = 0; p < producers; ++p) {
      ++c.running;
      sys.spawn([log, &c, p](caf::event_based_actor* self) { produce(self, log, &c, p, 0, new std::vector<double>); });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    c.stop = true;
    uint64_t acked = c.acked;
    double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
    while (c.running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    caf::scoped_actor self{sys};
    self->request(log, caf::infinite, actors::status_atom::value)
        .receive([&](actors::log_status& s) { st = s; }, [](caf::error&) {});
    std::printf(
        "append producers=%d seconds=%.1f durable_events_per_s=%.0f events_per_batch=%.1f events_per_fsync=%.1f p50_ms=%.2f "
        "p99_ms=%.2f\n",
        producers, elapsed, acked / elapsed, double(st.events_written) / double(std::max<uint64_t>(1, st.commits)),
        double(st.events_written) / double(std::max<uint64_t>(1, st.syncs)), percentile(c.latencies_ms, 0.50),
        percentile(c.latencies_ms, 0.99));
    caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
  }
  store.reset();
  std::filesystem::remove_all(dir);
  return 0;
}

int bench_replay(uint64_t total) {
  auto dir = fresh_dir();
  {
    auto store = events::event_store::open(dir, {false});
    auto t0 = clock_type::now();
    std::vector<events::append_command> batch;
    for (uint64_t i = 0; i < total; ++i) {
      batch.push_back(job_command(i % 10000, i));
      if (batch.size() == 1000 || i + 1 == total) {
        store->append(batch);
        batch.clear();
      }
    }
    store->flush();
    std::printf("replay setup: wrote %llu events in %.2f s\n", static_cast<unsigned long long>(total),
                std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  auto t_open = clock_type::now();
  auto store = events::event_store::open(dir);
  double open_s = std::chrono::duration<double>(clock_type::now() - t_open).count();

  // Apply: the latest version and event count per stream, the shape of a real projection.
  for (bool verify : {true, false}) {
    std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> per_stream;
    uint64_t n = 0;
    auto t0 = clock_type::now();
    store->scan(1, 0, verify, [&](const events::event_view& v) {
      auto& s = per_stream[std::string(v.stream_id)];
      s.first = v.stream_version;
      ++s.second;
      ++n;
      return true;
    });
    double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    std::printf("replay events=%llu chain_verified=%s seconds=%.3f events_per_s=%.0f streams=%zu open_s=%.3f\n",
                static_cast<unsigned long long>(n), verify ? "yes" : "no", secs, n / secs, per_stream.size(), open_s);
  }
  store.reset();
  std::filesystem::remove_all(dir);
  return 0;
}

// Every event opens a new job stream (a submission's job.created): the store looks the
// stream's head up before numbering it. Batches of 100 as the log writer forms them under
// load, without the fsync (the log writer overlaps it), timed per 100,000 appends.
int bench_create(uint64_t total) {
  auto dir = fresh_dir();
  {
    auto store = events::event_store::open(dir, {false});
    std::vector<events::append_command> batch;
    auto t0 = clock_type::now();
    for (uint64_t i = 0; i < total; ++i) {
      batch.push_back(job_command(i, 0));
      if (batch.size() == 100 || i + 1 == total) {
        store->append(batch);
        batch.clear();
      }
      if ((i + 1) % 100'000 == 0 || i + 1 == total) {
        double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
        uint64_t n = (i + 1) % 100'000 ? (i + 1) % 100'000 : 100'000;
        std::printf("create streams=%llu us_per_new_stream_append=%.2f\n", static_cast<unsigned long long>(i + 1),
                    secs / n * 1e6);
        t0 = clock_type::now();
      }
    }
  }
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "append" && argc == 4) return bench_append(std::stoi(argv[2]), std::stod(argv[3]));
  if (mode == "replay" && argc == 3) return bench_replay(std::stoull(argv[2]));
  if (mode == "create" && argc == 3) return bench_create(std::stoull(argv[2]));
  std::fprintf(stderr, "usage: eventlog_bench append PRODUCERS SECONDS | replay EVENTS | create EVENTS\n");
  return 2;
}
