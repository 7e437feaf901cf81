// Re-derivation throughput (docs/benchmarks.md):
//   rederive_bench [EVENTS] [WORKERS]   default 1000000 64
// Writes a log of EVENTS events through the core's own decide/apply, as batond would: a
// multifactor policy over 10 accounts x 10 users, WORKERS workers that poll, start and
// complete jobs, new jobs submitted as the queue drains, a priority recalculation every
// 2,000 events and a planning cycle every 5,000. Then times `baton-replay rederive` on it
// (replay/audit/rederive.cpp: every event decoded and applied, every decision decided again), and a
// plain verify pass for comparison. Prints events/s and decisions/s.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/campaign_log.hpp"
#include "bench/log_builder.hpp"
#include "core/app/decide.hpp"
#include "core/world/world_snapshot.hpp"
#include "events/payload.hpp"
#include "replay/audit/log_verify.hpp"
#include "replay/audit/rederive.hpp"

using namespace baton;
using bench::log_builder;
using bench::uuid_of;
namespace C = core::commands;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// CPU seconds used so far by the calling thread (RUSAGE_THREAD) or by the whole process.
double cpu_seconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t target = argc > 1 ? std::stoull(argv[1]) : 1'000'000;
  const size_t workers = argc > 2 ? std::stoul(argv[2]) : 64;
  auto dir = std::filesystem::temp_directory_path() / ("rederive_bench." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const bool keep = std::getenv("REDERIVE_BENCH_KEEP") != nullptr;  // the log, for baton-replay
  log_builder b((dir / "eventlog").string());                       // (where baton-replay reads a data dir's log)
  auto t0 = clock_type::now();
  const size_t jobs = bench::write_campaign_log(b, target, workers);
  std::printf("log: %llu events (%zu jobs, %zu workers) written in %.1f s\n",
              static_cast<unsigned long long>(b.store->last_seq()), jobs, workers, seconds_since(t0));

  {
    auto t = clock_type::now();
    auto bytes = core::encode_world(b.w);
    double enc = seconds_since(t);
    t = clock_type::now();
    auto back = core::decode_world(bytes);
    std::printf("snapshot of that world: %zu bytes, encoded in %.2f s, decoded (indexes rebuilt) in %.2f s\n", bytes.size(), enc,
                seconds_since(t));
  }
  // The passes run as baton-replay runs: on the log as batond leaves it at a clean shutdown
  // (flushed to its tables), in a process that holds no other world. (Timed beside the
  // half-gigabyte world that wrote the log, a pass took 1.27 - 2.00 s, median 1.70 s,
  // against 1.21 - 1.40 s, median 1.26 s, without it.)
  b.store->flush();
  b.w = core::world{};
  for (int round = 0; round < 3; ++round) {
    auto t = clock_type::now();
    const double own0 = cpu_seconds(RUSAGE_THREAD), all0 = cpu_seconds(RUSAGE_SELF);
    auto r = replay::rederive_decisions(*b.store);
    double secs = seconds_since(t);
    // The applying thread is this one; the reading thread (and RocksDB's) the rest.
    const double own = cpu_seconds(RUSAGE_THREAD) - own0, others = cpu_seconds(RUSAGE_SELF) - all0 - own;
    std::printf(
        "rederive: %llu decisions (%llu assignments, %llu recalculations, %llu plans) in %llu events, %.2f s: "
        "%.0f decisions/s, %.0f events/s, mismatches %llu; CPU: applying thread %.2f s, reading thread %.2f s\n",
        static_cast<unsigned long long>(r.decisions), static_cast<unsigned long long>(r.assignments),
        static_cast<unsigned long long>(r.recalculations), static_cast<unsigned long long>(r.plans),
        static_cast<unsigned long long>(r.events), secs, r.decisions / secs, r.events / secs,
        static_cast<unsigned long long>(r.mismatches), own, others);
    // What baton-replay leaves to the process's exit (replay/audit/rederive.hpp), timed apart.
    t = clock_type::now();
    r.world.reset();
    std::printf("  freeing its world afterwards: %.2f s\n", seconds_since(t));
  }
  auto t = clock_type::now();
  auto v = replay::verify_log(*b.store, {});
  std::printf("verify (decode every payload, hash chain): %llu events in %.2f s\n", static_cast<unsigned long long>(v.events),
              seconds_since(t));
  b.store.reset();
  if (keep) {
    std::printf("kept: baton-replay rederive --data-dir %s\n", dir.c_str());
    return 0;
  }
  std::filesystem::remove_all(dir);
  return 0;
}
