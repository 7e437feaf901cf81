// Catch-up speed of the SQL view (docs/benchmarks.md, docs/db-views.md):
//   view_bench [EVENTS] [WORKERS]   default 1000000 64
// Writes the campaign log (bench/campaign_log.hpp), then projects it from sequence 1 into a new
// views.sqlite through the projection batond runs (projections/sqlite_view.hpp), in batches of
// 1,000 events as the log writer's catch-up hands them over, and prints events/s.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "bench/campaign_log.hpp"
#include "projections/sqlite_view.hpp"

using namespace baton;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const uint64_t target = argc > 1 ? std::stoull(argv[1]) : 1'000'000;
  const size_t workers = argc > 2 ? std::stoul(argv[2]) : 64;
  auto dir = std::filesystem::temp_directory_path() / ("view_bench." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    bench::log_builder b((dir / "eventlog").string());
    auto t0 = clock_type::now();
    const size_t jobs = bench::write_campaign_log(b, target, workers);
    std::printf("log: %llu events (%zu jobs, %zu workers) written in %.1f s\n",
                static_cast<unsigned long long>(b.store->last_seq()), jobs, workers,
                std::chrono::duration<double>(clock_type::now() - t0).count());
    for (int round = 0; round < 2; ++round) {
      const auto path = (dir / ("views-" + std::to_string(round) + ".sqlite")).string();
      auto t = clock_type::now();
      projections::sqlite_view view(projections::sqlite_view::open(path, true), core::world{});
      for (uint64_t seq = 1; seq <= b.store->last_seq();) {
        auto batch = b.store->read(seq, 1000);
        if (!view.apply_batch(batch)) {
          std::fprintf(stderr, "view failed: %s\n", view.failure().value_or("?").c_str());
          return 1;
        }
        seq = batch.back().seq + 1;
      }
      double secs = std::chrono::duration<double>(clock_type::now() - t).count();
      std::printf("SQL view from sequence 1: %llu events in %.2f s, %.0f events/s, file %.0f MB\n",
                  static_cast<unsigned long long>(view.applied_seq()), secs, view.applied_seq() / secs,
                  static_cast<double>(std::filesystem::file_size(path)) / 1e6);
    }
  }
  if (!std::getenv("VIEW_BENCH_KEEP")) std::filesystem::remove_all(dir);
  else std::printf("kept %s\n", dir.c_str());
  return 0;
}
