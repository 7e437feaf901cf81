#pragma once
// GET /metrics in Prometheus' text exposition format (version 0.0.4): what the scheduler
// counts, the log's head and each log-fed projection's progress.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/latency_histogram.hpp"
#include "core/outcome.hpp"
#include "http/request_counters.hpp"
#include "projections/projection.hpp"

namespace baton::http {

// `log`: the log writer's latencies (none: those series are left out).
std::string metrics_text(const core::results::metrics& m, uint64_t log_last_seq,
                         const std::vector<std::shared_ptr<const projections::projection>>& projections,
                         const actors::log_metrics* log = nullptr, const request_counters* requests = nullptr);

}  // namespace baton::http
