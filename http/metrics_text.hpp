#pragma once
// GET /metrics in Prometheus' text exposition format (version 0.0.4): what the scheduler
// counts, the log's head, each log-fed projection's progress, and the process's memory.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/labelled_counters.hpp"
#include "actors/latency_histogram.hpp"
#include "core/app/outcome.hpp"
#include "events/log_reader.hpp"
#include "http/process_figures.hpp"
#include "http/request_counters.hpp"
#include "http/storage/backend.hpp"
#include "projections/live_feed.hpp"
#include "projections/projection.hpp"

namespace baton::http {

// Where the figures beside the scheduler's counts come from; a null source leaves its series out.
struct metrics_sources {
  uint64_t log_last_seq = 0;
  std::vector<std::shared_ptr<const projections::projection>> projections;
  const actors::log_metrics* log = nullptr;                        // the log writer's latencies
  const request_counters* requests = nullptr;                      // answers by route and status
  const actors::poll_metrics* polls = nullptr;                     // polls by result, and their latency
  const actors::slurm_call_counters* slurm = nullptr;              // sbatch/squeue calls by cluster and result
  const actors::cluster_cycle_counters* cluster_cycles = nullptr;  // provisioning cycles by cluster
  const projections::live_feed* feed = nullptr;                    // clients following GET /events/stream
  const storage::transfer_counters* transfers = nullptr;           // blob bytes through batond (local backend)
  std::optional<process_figures> process;                          // memory and descriptors
  std::optional<events::log_memory> log_memory;                    // what RocksDB holds in memory
};

std::string metrics_text(const core::results::metrics& m, const metrics_sources& from);

}  // namespace baton::http
