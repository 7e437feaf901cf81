// Re-derivation throughput (docs/benchmarks.md):
//   rederive_bench [EVENTS] [WORKERS]   default 1000000 64
// Writes a log of EVENTS events through the core's own decide/apply, as batond would: a
// multifactor policy over 10 accounts x 10 users, WORKERS workers that poll, start and
// complete jobs, new jobs submitted as the queue drains, a priority recalculation every
// 2,000 events and a planning cycle every 5,000. Then times `baton-replay rederive` on it
// (replay/rederive.cpp: every event decoded and applied, every decision decided again), and a
// plain verify pass for comparison. Prints events/s and decisions/s.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/log_builder.hpp"
#include "core/decide.hpp"
#include "core/world_snapshot.hpp"
#include "events/payload.hpp"
#include "replay/log_verify.hpp"
#include "replay/rederive.hpp"

using namespace baton;
using bench::log_builder;
using bench::uuid_of;
namespace C = core::commands;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  const uint64_t target = argc > 1 ? std::stoull(argv[1]) : 1'000'000;
  const size_t workers = argc > 2 ? std::stoul(argv[2]) : 64;
  auto dir = std::filesystem::temp_directory_path() / ("rederive_bench." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  log_builder b(dir.string());
  b.s.priority.max_jobs_per_user = 1u << 30;
  std::vector<std::string> users;
  for (int a = 0; a < 10; ++a) {
    core::account_def acc{"acct" + std::to_string(a), "root", static_cast<uint32_t>(1 + a), {}};
    for (int u = 0; u < 10; ++u) {
      users.push_back("u" + std::to_string(a) + "_" + std::to_string(u));
      acc.users[users.back()] = 1 + u % 3;
    }
    b.s.priority.accounts.push_back(std::move(acc));
  }
  auto admin = core::principal::operator_named("admin");
  auto t0 = clock_type::now();
  b.run(core::principal::loop(), C::recalculate_priorities{});
  std::vector<std::string> worker_ids;
  for (size_t i = 0; i < workers; ++i) {
    C::register_worker reg;
    reg.new_id = uuid_of('w', i);
    reg.gpu_model = i % 2 ? "A100" : "H100";
    reg.gpu_count = 1 + static_cast<int>(i % 4);
    reg.credential_sha256 = "00";
    b.run(core::principal::pilot_token(), reg);
    worker_ids.push_back(reg.new_id);
  }
  std::vector<std::string> held(workers);
  size_t next_job = 0;
  uint64_t next_recalc = 2000, next_plan = 5000;
  while (b.written < target) {
    while (b.w.queued.size() < 2 * workers) {  // keep a queue: polls choose among many
      C::create_job c;
      c.id = uuid_of('j', next_job);
      c.title = "md";
      c.input_bundle_path = "/b";
      c.user = users[(next_job * 31) % users.size()];
      c.gpu_count = 1 + next_job % 3;
      c.time_limit_seconds = 600 + static_cast<int64_t>(next_job % 7) * 600;
      ++next_job;
      b.run(admin, c);
      b.now += 1000;
    }
    for (size_t i = 0; i < workers && b.written < target; ++i) {
      b.now += 5000;
      b.leases.touch(worker_ids[i], b.now);  // as its heartbeats would
      auto me = core::principal::of_worker(worker_ids[i]);
      if (!held[i].empty()) {
        b.run(me, C::complete_job{held[i]});
        held[i].clear();
        continue;
      }
      auto o = b.run(me, C::request_job{worker_ids[i]});
      auto* answer = std::get_if<core::results::poll_answer>(&o.answer.value);
      if (answer && answer->assigned) {
        held[i] = answer->assigned->job_id;
        b.run(me, C::start_job{held[i]});
      }
    }
    if (b.written >= next_recalc) {
      b.run(core::principal::loop(), C::recalculate_priorities{});
      next_recalc += 2000;
    }
    if (b.written >= next_plan) {
      b.record(core::plan_cycle(b.w, b.leases, b.s, b.now).events);
      next_plan += 5000;
    }
  }
  b.flush();
  std::printf("log: %llu events (%zu jobs, %zu workers) written in %.1f s\n", static_cast<unsigned long long>(b.store->last_seq()),
              next_job, workers, seconds_since(t0));

  {
    auto t = clock_type::now();
    auto bytes = core::encode_world(b.w);
    double enc = seconds_since(t);
    t = clock_type::now();
    auto back = core::decode_world(bytes);
    std::printf("snapshot of that world: %zu bytes, encoded in %.2f s, decoded (indexes rebuilt) in %.2f s\n", bytes.size(), enc,
                seconds_since(t));
  }
  for (int round = 0; round < 3; ++round) {
    auto t = clock_type::now();
    auto r = replay::rederive_decisions(*b.store);
    double secs = seconds_since(t);
    std::printf("rederive: %llu decisions (%llu assignments, %llu recalculations, %llu plans) in %llu events, %.2f s: "
                "%.0f decisions/s, %.0f events/s, mismatches %llu\n",
                static_cast<unsigned long long>(r.decisions), static_cast<unsigned long long>(r.assignments),
                static_cast<unsigned long long>(r.recalculations), static_cast<unsigned long long>(r.plans),
                static_cast<unsigned long long>(r.events), secs, r.decisions / secs, r.events / secs,
                static_cast<unsigned long long>(r.mismatches));
  }
  auto t = clock_type::now();
  auto v = replay::verify_log(*b.store, {});
  std::printf("verify (decode every payload, hash chain): %llu events in %.2f s\n", static_cast<unsigned long long>(v.events),
              seconds_since(t));
  b.store.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
