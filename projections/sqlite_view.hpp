#pragma once
// The SQL view (docs/db-views.md): `<data_dir>/views.sqlite`, readable with sqlite3 and other
// tools while batond runs. A log-fed projection that keeps its own world (the same
// core::apply over the same durable events) and writes, in SQLite transactions: the events
// themselves, the rows of the jobs and workers they touched (their run segments with them),
// the decisions, fair share at each recalculation, the clusters, and the last sequence applied. The offset commits with the rows, so after a
// kill -9 the view resumes exactly after its last commit: every event in it once.
//
// A write that fails (a full disk: SQLITE_FULL) rolls back to the last commit; the view's
// world goes on following the log, and flush() retries after a growing pause (0.5 s doubling
// to 30 s), catching the rows up from the log in one transaction (as the PostgreSQL view
// does). So the view never stops batond, and it comes back by itself once it can write.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "core/world/world.hpp"
#include "events/event_store.hpp"
#include "projections/projection.hpp"
#include "projections/sqlite_db.hpp"

namespace baton::projections {

struct sql_batch_rows;
class world_snapshots;

class sqlite_view : public projection {
 public:
  static constexpr const char* projection_name = "views";

  struct opened {
    std::unique_ptr<sqlite_db> db;
    uint64_t applied = 0;  // the last sequence its rows hold (0: empty)
    std::string rebuilt;   // why it was emptied to be rebuilt from sequence 1 ("" if it was not)
  };
  // Opens (creating) the view's file. It is emptied, to be rebuilt from sequence 1, when
  // `drop` says so (batond --rebuild-projection views) or its schema is another version.
  static opened open(const std::string& path, bool drop);

  // `at`: the world after event `db.applied` (the daemon recovers it from the log). `store`:
  // the log, read to catch up after a failed write (none: a failed write fails the view).
  sqlite_view(opened db, core::world at, std::shared_ptr<const events::event_store> store);
  ~sqlite_view() override;  // commits what is pending

  // Batches go into one open transaction, committed (with the offset) once 4,096 events are in
  // it or at flush(): a commit per small batch wrote the same index pages over and over.
  bool pending() const override;
  void flush() override;
  // The last sequence committed: what another reader of the file sees (/healthz's lag).
  uint64_t stored_seq() const override { return stored_.load(); }
  std::optional<std::string> stalled() const override;

  // State snapshots taken of this view's world (projections/world_snapshots.hpp, lent): from
  // now on every batch applied is handed to them. And at a clean stop, one of everything.
  void feed_snapshots(std::shared_ptr<world_snapshots> snapshots);
  void write_snapshot_now();

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  struct statements;

  void commit();                                // with m_ held
  void fell_behind(const std::string& why);     // with m_ held: rolled back, retried by flush()
  void catch_up();                              // with m_ held
  void write_rows(const sql_batch_rows& rows);  // with m_ held, in the open transaction

  mutable std::mutex m_;
  bool open_ = false;                // a transaction is open
  size_t uncommitted_ = 0;           // events in it
  uint64_t written_ = 0;             // the last sequence in it
  std::atomic<uint64_t> stored_{0};  // the last committed
  std::unique_ptr<sqlite_db> db_;
  std::unique_ptr<statements> st_;
  core::world world_;
  std::shared_ptr<world_snapshots> snapshots_;  // fed from world_, if batond lent it
  std::set<std::string> clusters_;              // the clusters table's rows (projections/sql_batch.hpp)
  std::shared_ptr<const events::event_store> store_;
  bool behind_ = false;       // a write failed: the rows stay at stored_ until catch_up() succeeds
  mutable std::mutex why_m_;  // (not m_, which a long catch-up holds: /healthz asks)
  std::string behind_why_;    // the failed write's error while behind_, else ""
  std::chrono::steady_clock::time_point retry_at_;
  std::chrono::milliseconds pause_{500};
};

}  // namespace baton::projections
