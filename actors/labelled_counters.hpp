#pragma once
// Counters keyed by a fixed number of label values, for GET /metrics (e.g. Slurm calls by
// cluster, command and result; polls by result). Any thread counts, any thread reads.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace baton::actors {

template <size_t N>
class labelled_counters {
 public:
  using key = std::array<std::string, N>;
  void count(const key& labels) {
    std::lock_guard<std::mutex> lock(m_);
    ++counts_[labels];
  }
  std::map<key, uint64_t> read() const {
    std::lock_guard<std::mutex> lock(m_);
    return counts_;
  }

 private:
  mutable std::mutex m_;
  std::map<key, uint64_t> counts_;
};

// Slurm commands run by the cluster actors: (cluster, command "sbatch"|"squeue", result "ok"|"failed").
using slurm_call_counters = labelled_counters<3>;
// Provisioning cycles each cluster actor ended, whatever they did (cluster): that provisioning
// is alive, also for a disabled cluster, which calls nothing.
using cluster_cycle_counters = labelled_counters<1>;

}  // namespace baton::actors
