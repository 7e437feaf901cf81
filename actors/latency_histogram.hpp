#pragma once
// Durations counted into fixed buckets, for Prometheus histograms (GET /metrics). Any thread
// observes, any thread reads; relaxed atomics, so a scrape may see a sample in one bucket a
// moment before it shows in the count: a reading is a consistent-enough snapshot, never a
// torn number.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "actors/labelled_counters.hpp"

namespace baton::actors {

class latency_histogram {
 public:
  // Upper bounds in seconds (le), from half a millisecond (an fsync on a good disk) to 2.5 s.
  static constexpr std::array<double, 12> bounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};

  void observe(std::chrono::steady_clock::duration d) {
    const double s = std::chrono::duration<double>(d).count();
    size_t i = 0;
    while (i < bounds.size() && s > bounds[i]) ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);  // i == bounds.size(): above every bound
    sum_us_.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count()),
                      std::memory_order_relaxed);
  }

  struct reading {
    std::array<uint64_t, bounds.size() + 1> cumulative{};  // samples <= each bound, then all of them
    double sum_seconds = 0;
  };
  reading read() const {
    reading r;
    uint64_t running = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) r.cumulative[i] = running += buckets_[i].load(std::memory_order_relaxed);
    r.sum_seconds = static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6;
    return r;
  }

 private:
  std::array<std::atomic<uint64_t>, bounds.size() + 1> buckets_{};
  std::atomic<uint64_t> sum_us_{0};
};

// What the log writer measures for GET /metrics.
struct log_metrics {
  latency_histogram fsync;   // each WAL fdatasync
  latency_histogram append;  // an append, from its arrival at the log writer to its durable reply
};

// What the worker API measures of polls (POST /jobs/request) for GET /metrics.
struct poll_metrics {
  latency_histogram seconds;     // from the request's arrival to its answer (an assignment: once durable)
  labelled_counters<2> results;  // (result "assigned"|"no_job_available"|"refused", the reason or error code)
};

}  // namespace baton::actors
