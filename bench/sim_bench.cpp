// Simulation speed (docs/benchmarks.md): a 200,000-job workload made by concatenating the
// archive logs in tests/data/swf (SDSC-SP2 and KTH-SP2, each copy after the one before, its
// users and groups its own), on a machine of 128 processors, under each policy asked for.
// Usage: sim_bench [JOBS [POLICY ...]]   (default 200000 easy multifactor)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "replay/sim/sim_metrics.hpp"
#include "replay/sim/simulator.hpp"
#include "replay/sim/swf.hpp"

using namespace baton::replay;

int main(int argc, char** argv) {
  size_t want = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200000;
  std::vector<std::string> policies;
  for (int i = 2; i < argc; ++i) policies.push_back(argv[i]);
  if (policies.empty()) policies = {"easy", "multifactor"};
  const std::string dir = SWF_DATA_DIR;
  std::vector<std::vector<sim_job>> sources{
      filter_jobs(read_swf(dir + "/SDSC-SP2-1998-4.2-cln.swf.gz"), swf_filter::batsim, 128),
      filter_jobs(read_swf(dir + "/KTH-SP2-1996-2-original.swf.gz"), swf_filter::sc15, 100)};
  std::vector<sim_job> jobs;
  int64_t offset = 0, copy = 0;
  while (jobs.size() < want) {
    const auto& src = sources[static_cast<size_t>(copy) % sources.size()];
    int64_t last = 0;
    for (const auto& j : src) {
      if (jobs.size() >= want) break;
      sim_job c = j;
      c.id = static_cast<int64_t>(jobs.size()) + 1;
      c.submit += offset;
      c.user += copy * 100000;
      c.group += copy * 100000;
      last = std::max(last, c.submit);
      jobs.push_back(c);
    }
    offset = last + 86400;
    ++copy;
  }
  std::printf("sim_bench: %zu jobs from %lld copies of SDSC-SP2 and KTH-SP2, 128 processors\n", jobs.size(),
              static_cast<long long>(copy));
  for (const auto& policy : policies) {
    sim_settings s;
    s.capacity = 128;
    if (!sim_policy_from(policy, s)) {
      std::fprintf(stderr, "unknown policy %s\n", policy.c_str());
      return 2;
    }
    auto t0 = std::chrono::steady_clock::now();
    auto r = simulate(jobs, s);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto m = measure(r.jobs, s.capacity);
    std::printf("  %-18s %7.2f s  (%8.0f jobs/s, %zu passes, %zu recalculations; mean wait %.0f s, mean bsld %.1f)\n",
                policy.c_str(), seconds, static_cast<double>(jobs.size()) / seconds, static_cast<size_t>(r.passes),
                static_cast<size_t>(r.recalculations), m.mean_wait, m.mean_bsld_10);
  }
  return 0;
}
