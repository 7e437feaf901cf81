// Backfill planner benchmark (docs/scheduling.md, "Backfill planner (core)"):
//   backfill_bench [PENDING_JOBS] [NODES]   default 10000 2000
// Builds two instances from a fixed seed, then times whole cycles (profiles built, jobs
// walked) of core::backfill and core::main_loop. Five rounds each; best and median.
//  - workers: NODES baton workers of capacity 1 (four GPU models, 1-8 GPUs), most busy, half
//    with a pilot allocation end, a tenth pending allocations opening within two hours;
//    jobs in 20 resource classes (model and minimum GPUs, or any model), a fifth checkpointing.
//  - machine: one node of 4096 processors, ~1000 running jobs, jobs asking 1-512 processors
//    (the shape of an SWF trace replay).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/planning/backfill.hpp"

using namespace baton;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr core::time_us minute = 60'000'000;
constexpr core::time_us now = 1'700'000'000LL * 1'000'000;

struct splitmix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t in(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

core::plan_input workers(size_t jobs, size_t nodes) {
  splitmix rng{42};
  core::plan_input in;
  in.now = now;
  const int gpu_counts[] = {1, 2, 4, 8};
  std::vector<int> model(nodes), gpus(nodes);
  for (size_t n = 0; n < nodes; ++n) {
    char id[32];
    std::snprintf(id, sizeof id, "w%05zu", n);
    core::plan_node node{id, 1, 0, core::time_never};
    model[n] = static_cast<int>(rng.in(0, 3));
    gpus[n] = gpu_counts[rng.in(0, 3)];
    if (rng.in(0, 9) == 0) {  // a pending allocation
      node.available_from = now + rng.in(5, 120) * minute;
      node.available_until = node.available_from + 48 * 60 * minute;
    } else {
      if (rng.in(0, 1)) node.available_until = now + rng.in(60, 48 * 60) * minute;
      if (rng.in(0, 99) < 85)
        in.running.push_back({"r" + std::to_string(n), static_cast<uint32_t>(n), 1, now + rng.in(1, 24 * 60) * minute});
    }
    in.nodes.push_back(node);
  }
  for (int m = 0; m <= 4; ++m)  // model 4: any model
    for (int g : gpu_counts) {
      core::resource_class c;
      for (size_t n = 0; n < nodes; ++n)
        if ((m == 4 || model[n] == m) && gpus[n] >= g) c.nodes.push_back(static_cast<uint32_t>(n));
      in.classes.push_back(std::move(c));
    }
  for (size_t j = 0; j < jobs; ++j) {
    core::plan_job pj;
    pj.id = "j" + std::to_string(j);
    pj.units = 1;
    pj.duration = rng.in(10, 48 * 60) * minute;
    pj.resource_class = static_cast<uint32_t>(rng.in(0, 19));
    pj.user = "u" + std::to_string(rng.in(0, 299));
    pj.partition = "p" + std::to_string(rng.in(0, 3));
    if (rng.in(0, 4) == 0) {
      pj.checkpoints = true;
      pj.min_useful = rng.in(10, 60) * minute;
    }
    in.pending.push_back(std::move(pj));
  }
  return in;
}

core::plan_input machine(size_t jobs) {
  splitmix rng{7};
  core::plan_input in;
  in.now = now;
  in.nodes.push_back({"machine", 4096, 0, core::time_never});
  int64_t used = 0;
  for (size_t r = 0; used < 4000; ++r) {
    int64_t k = std::min<int64_t>(rng.in(1, 8), 4096 - used);
    used += k;
    in.running.push_back({"r" + std::to_string(r), 0, k, now + rng.in(1, 24 * 60) * minute});
  }
  for (size_t j = 0; j < jobs; ++j) {
    core::plan_job pj;
    pj.id = "j" + std::to_string(j);
    pj.units = 1LL << rng.in(0, 9);
    pj.duration = rng.in(1, 24 * 60) * minute;
    pj.user = "u" + std::to_string(rng.in(0, 299));
    pj.partition = "batch";
    in.pending.push_back(std::move(pj));
  }
  return in;
}

double ms_since(clock_type::time_point t) { return std::chrono::duration<double, std::milli>(clock_type::now() - t).count(); }

template <class F>
void measure(const char* what, F&& cycle) {
  std::vector<double> ms;
  core::plan p;
  for (int round = 0; round < 5; ++round) {
    auto t = clock_type::now();
    p = cycle();
    ms.push_back(ms_since(t));
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-38s best %7.1f ms  median %7.1f ms   tested %5u probes %9llu  started %5zu reserved %5zu skipped %5zu\n", what,
              ms.front(), ms[ms.size() / 2], p.counters.jobs_tested, static_cast<unsigned long long>(p.counters.probes),
              p.starts.size(), p.reservations.size(), p.skipped.size());
}

}  // namespace

int main(int argc, char** argv) {
  size_t jobs = argc > 1 ? std::stoul(argv[1]) : 10000, nodes = argc > 2 ? std::stoul(argv[2]) : 2000;
  auto w = workers(jobs, nodes);
  auto m = machine(jobs);
  std::printf("workers: %zu nodes, %zu running, %zu classes, %zu pending; machine: 4096 units, %zu running, %zu pending\n",
              w.nodes.size(), w.running.size(), w.classes.size(), w.pending.size(), m.running.size(), m.pending.size());
  core::backfill_limits slurm_like;  // bf_max_job_test 2000, no per-user or per-partition limit
  core::backfill_limits gwdg;
  gwdg.bf_max_job_user = 15;
  gwdg.bf_max_job_part = 200;
  measure("workers: backfill (defaults)", [&] { return core::backfill(w, slurm_like); });
  measure("workers: backfill (GWDG limits)", [&] { return core::backfill(w, gwdg); });
  core::backfill_limits every;
  every.bf_max_job_test = 0;
  measure("workers: backfill (every job tested)", [&] { return core::backfill(w, every); });
  measure("workers: main loop (depth 500)", [&] { return core::main_loop(w); });
  measure("machine: backfill (defaults)", [&] { return core::backfill(m, slurm_like); });
  measure("machine: main loop (depth 500)", [&] { return core::main_loop(m); });
  return 0;
}
