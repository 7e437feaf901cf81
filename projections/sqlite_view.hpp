#pragma once
// The SQL view (docs/db-views.md): `<data_dir>/views.sqlite`, readable with sqlite3 and other
// tools while batond runs. A log-fed projection that keeps its own world (the same
// core::apply over the same durable events) and writes, in SQLite transactions: the events
// themselves, the rows of the jobs and workers they touched (their run segments with them),
// the decisions, fair share at each recalculation, the clusters, and the last sequence applied. The offset commits with the rows, so after a
// kill -9 the view resumes exactly after its last commit: every event in it once.
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "core/world.hpp"
#include "projections/projection.hpp"
#include "projections/sqlite_db.hpp"

namespace baton::projections {

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

  // `at`: the world after event `db.applied` (the daemon recovers it from the log).
  sqlite_view(opened db, core::world at);
  ~sqlite_view() override;  // commits what is pending

  // Batches go into one open transaction, committed (with the offset) once 4,096 events are in
  // it or at flush(): a commit per small batch wrote the same index pages over and over.
  bool pending() const override;
  void flush() override;
  // The last sequence committed: what another reader of the file sees (/healthz's lag).
  uint64_t stored_seq() const override { return stored_.load(); }

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  struct statements;

  void commit();  // with m_ held

  mutable std::mutex m_;
  bool open_ = false;     // a transaction is open
  size_t uncommitted_ = 0;  // events in it
  uint64_t written_ = 0;    // the last sequence in it
  std::atomic<uint64_t> stored_{0};  // the last committed
  std::unique_ptr<sqlite_db> db_;
  std::unique_ptr<statements> st_;
  core::world world_;
  std::set<std::string> clusters_;  // the clusters table's rows (projections/sql_batch.hpp)
};

}  // namespace baton::projections
