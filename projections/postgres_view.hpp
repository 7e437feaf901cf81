#pragma once
// The SQL view in PostgreSQL (docs/db-views.md), for dashboards such as Grafana: the same
// tables and values as the SQLite view (projections/sql_rows.hpp), when
// `projections.postgres.dsn` is set.
//
// A database is another service that may go away, so this view never fails batond and never
// holds the log up: its own world follows the log whatever the database does, and the rows
// follow when they can. While the database is unreachable (or refuses), the view retries
// with a growing pause (0.5 s doubling to 30 s); when it is back, the view reads the offset
// stored there and catches up from the log itself: the events after that offset, then the
// current rows of every job and worker they touched, all in one transaction with the new
// offset. So the database holds every event once, and its rows are those of its offset,
// also after a kill -9 of batond or of PostgreSQL.
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/world/world.hpp"
#include "events/event_store.hpp"
#include "projections/projection.hpp"
#include "projections/sql_batch.hpp"

namespace baton::projections {

struct postgres_options {
  std::string dsn;       // a libpq connection string, without the password
  std::string password;  // BATON_POSTGRES_PASSWORD ("" = none: peer or trust authentication)
  bool rebuild = false;  // drop the tables and write them again from event 1 (batond --rebuild-projection postgres)
  std::chrono::milliseconds retry_first{500}, retry_max{30000};
};

class postgres_view : public projection {
 public:
  static constexpr const char* projection_name = "postgres";

  // `at`: the world after event `head` (the log's last sequence when batond starts); `store`:
  // the log, read to catch the database up from its own offset.
  postgres_view(postgres_options o, std::shared_ptr<const events::event_store> store, core::world at, uint64_t head);
  ~postgres_view() override;

  // Connects and catches the database up now (batond does this once before it serves).
  // False, with why in last_error(), when it could not; the view retries later by itself.
  bool sync_now();
  // Rows held back, or a database that is behind and due a retry.
  bool pending() const override;
  // Writes and commits the rows held back; when the database is behind, reconnects and
  // catches up if the pause since the last try is over.
  void flush() override;
  // The last sequence committed to the database (what its readers see).
  uint64_t stored_seq() const override;
  std::optional<std::string> last_error() const;
  std::optional<std::string> stalled() const override { return last_error(); }

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  void connect();                     // opens the connection, creates or checks the schema, reads its offset
  void catch_up();                    // the events after the stored offset, the rows they touched, the offset
  void store_held();                  // the rows held back and their offset, in one transaction
  void lost(const std::string& why);  // drops the connection; the next try comes after the pause

  postgres_options o_;
  std::shared_ptr<const events::event_store> store_;
  core::world world_;
  std::set<std::string> clusters_;  // the clusters table's rows (projections/sql_batch.hpp)

  mutable std::mutex m_;             // apply, flush and sync_now (the runner's thread; batond's at start and stop)
  struct session;                    // the libpqxx connection
  std::unique_ptr<session> db_;      // null while disconnected
  bool synced_ = false;              // connected, and the database holds everything up to applied but the rows held back
  std::atomic<uint64_t> stored_{0};  // committed offset (read by GET /metrics and /healthz without the lock)
  // Applied to the world, not yet written: the events' own rows, what they changed (whose rows
  // are built when written), how many events and the last one's sequence.
  sql_batch_rows held_;
  sql_batch held_changes_;
  size_t held_events_ = 0;
  uint64_t held_to_ = 0;
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::milliseconds pause_;
  mutable std::mutex error_m_;
  std::optional<std::string> error_;
};

}  // namespace baton::projections
