// Catch-up speed of the SQL views (docs/benchmarks.md, docs/db-views.md):
//   view_bench [EVENTS] [WORKERS] [sqlite|postgres|both]   default 1000000 64 both
// Writes the campaign log (bench/campaign_log.hpp), then projects it from sequence 1 through
// the projections batond runs, and prints events/s:
// - into a new views.sqlite (projections/sqlite_view.hpp), in batches of 1,000 events as the
//   log writer's catch-up hands them over;
// - into PostgreSQL (projections/postgres_view.hpp), on a server of its own started in a
//   temporary directory (tests/support/postgres_server.hpp): the same batches as they come,
//   and the catch-up a database that was away does (the events read from the log, then the
//   rows they touched, one transaction).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "bench/campaign_log.hpp"
#include "projections/postgres_view.hpp"
#include "projections/sqlite_view.hpp"
#include "replay/recovery/world_recovery.hpp"
#include "support/postgres_server.hpp"

using namespace baton;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const uint64_t target = argc > 1 ? std::stoull(argv[1]) : 1'000'000;
  const size_t workers = argc > 2 ? std::stoul(argv[2]) : 64;
  const std::string which = argc > 3 ? argv[3] : "both";
  auto dir = std::filesystem::temp_directory_path() / ("view_bench." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    bench::log_builder b((dir / "eventlog").string());
    auto t0 = clock_type::now();
    const size_t jobs = bench::write_campaign_log(b, target, workers);
    std::printf("log: %llu events (%zu jobs, %zu workers) written in %.1f s\n",
                static_cast<unsigned long long>(b.store->last_seq()), jobs, workers,
                std::chrono::duration<double>(clock_type::now() - t0).count());
    for (int round = 0; round < 2 && which != "postgres"; ++round) {
      const auto path = (dir / ("views-" + std::to_string(round) + ".sqlite")).string();
      auto t = clock_type::now();
      projections::sqlite_view view(projections::sqlite_view::open(path, true), core::world{}, nullptr);
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
    if (which != "sqlite") {
      test::postgres_server pg;
      projections::postgres_options o{pg.dsn(), test::postgres_server::password, true};
      std::shared_ptr<const events::event_store> log(std::shared_ptr<void>(), b.store.get());  // not owned
      // As the events come: batches of 1,000, a commit every 4,096 events.
      auto t = clock_type::now();
      {
        projections::postgres_view view(o, log, core::world{}, 0);
        if (!view.sync_now()) {
          std::fprintf(stderr, "PostgreSQL: %s\n", view.last_error().value_or("?").c_str());
          return 1;
        }
        for (uint64_t seq = 1; seq <= b.store->last_seq();) {
          auto batch = b.store->read(seq, 1000);
          view.apply_batch(batch);
          seq = batch.back().seq + 1;
        }
        view.flush();
        double secs = std::chrono::duration<double>(clock_type::now() - t).count();
        std::printf("PostgreSQL view, batches as they come: %llu events in %.2f s, %.0f events/s\n",
                    static_cast<unsigned long long>(view.stored_seq()), secs, view.stored_seq() / secs);
      }
      // A database that was away since event 0: the world is at the log's end already.
      const uint64_t head = b.store->last_seq();
      auto world = replay::recover_world(*b.store, head).world;
      projections::postgres_view view(o, log, std::move(world), head);
      t = clock_type::now();
      if (!view.sync_now()) {
        std::fprintf(stderr, "PostgreSQL: %s\n", view.last_error().value_or("?").c_str());
        return 1;
      }
      double secs = std::chrono::duration<double>(clock_type::now() - t).count();
      std::printf("PostgreSQL view, catch-up from event 1 in one transaction: %llu events in %.2f s, %.0f events/s\n",
                  static_cast<unsigned long long>(view.stored_seq()), secs, view.stored_seq() / secs);
    }
  }
  if (!std::getenv("VIEW_BENCH_KEEP"))
    std::filesystem::remove_all(dir);
  else
    std::printf("kept %s\n", dir.c_str());
  return 0;
}
