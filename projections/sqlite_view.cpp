#include "projections/sqlite_view.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "events/envelope.hpp"
#include "projections/sql_batch.hpp"
#include "projections/sql_rows.hpp"
#include "projections/world_snapshots.hpp"

namespace baton::projections {

namespace {

// Binds a row's values in column order and runs the statement.
void write_row(sqlite_statement& st, const sql_row& row) {
  for (size_t i = 0; i < row.size(); ++i) {
    const int at = static_cast<int>(i + 1);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::monostate>)
            st.bind(at, std::nullopt);
          else if constexpr (std::is_same_v<T, std::string>)
            st.bind_borrowed(at, v);  // (the row outlives run())
          else
            st.bind(at, v);
        },
        row[i]);
  }
  st.run();
}

}  // namespace

struct sqlite_view::statements {
  std::unique_ptr<sqlite_statement> event, job, worker, segment, decision, fair_share, cluster, offset;
};

sqlite_view::opened sqlite_view::open(const std::string& path, bool drop) {
  opened o;
  o.db = std::make_unique<sqlite_db>(path);
  auto& db = *o.db;
  std::string version;
  const int schema_version = sql_schema_version;
  {
    auto has_meta = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
    has_meta->step();
    if (has_meta->column_int(0) > 0) {
      auto v = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'");
      if (v->step()) version = v->column_text(0);
      auto a = db.prepare("SELECT value FROM meta WHERE key = 'applied_seq'");
      if (a->step()) o.applied = std::stoull(a->column_text(0));
    }
  }
  const bool fresh = version.empty();
  if (drop)
    o.rebuilt = "asked to rebuild it";
  else if (!fresh && version != std::to_string(schema_version))
    o.rebuilt = "its schema is version " + version + ", this batond writes " + std::to_string(schema_version);
  if (fresh || !o.rebuilt.empty()) {
    db.exec("BEGIN IMMEDIATE");
    for (const auto& t : sql_tables()) db.exec("DROP TABLE IF EXISTS " + t);
    db.exec(sql_schema(sql_dialect::sqlite));
    db.exec("INSERT INTO meta VALUES ('schema_version', '" + std::to_string(schema_version) + "'), ('applied_seq', '0')");
    db.exec("COMMIT");
    o.applied = 0;
  }
  return o;
}

sqlite_view::sqlite_view(opened o, core::world at, std::shared_ptr<const events::event_store> store)
    : projection(projection_name),
      db_(std::move(o.db)),
      st_(std::make_unique<statements>()),
      world_(std::move(at)),
      clusters_(clusters_known(world_)),
      store_(std::move(store)) {
  auto& db = *db_;
  st_->event = db.prepare(sql_write(sql_dialect::sqlite, sql_table::events));
  st_->job = db.prepare(sql_write(sql_dialect::sqlite, sql_table::jobs));
  st_->worker = db.prepare(sql_write(sql_dialect::sqlite, sql_table::workers));
  st_->segment = db.prepare(sql_write(sql_dialect::sqlite, sql_table::run_segments));
  st_->decision = db.prepare(sql_write(sql_dialect::sqlite, sql_table::decisions));
  st_->fair_share = db.prepare(sql_write(sql_dialect::sqlite, sql_table::fair_share));
  st_->cluster = db.prepare(sql_write(sql_dialect::sqlite, sql_table::clusters));
  st_->offset = db.prepare("UPDATE meta SET value = ?1 WHERE key = 'applied_seq'");
  restore_applied(o.applied);
  stored_ = written_ = o.applied;
}

sqlite_view::~sqlite_view() {
  try {
    flush();
  } catch (const std::exception& e) {
    spdlog::error("the SQL view could not commit its last events: {}", e.what());
  }
}

std::optional<std::string> sqlite_view::stalled() const {
  std::lock_guard<std::mutex> lock(why_m_);
  if (behind_why_.empty()) return std::nullopt;
  return "cannot write its file (" + behind_why_ + "); retrying, it catches up from the log";
}

bool sqlite_view::pending() const {
  std::lock_guard<std::mutex> lock(m_);
  return open_ || behind_;
}

void sqlite_view::flush() {
  std::lock_guard<std::mutex> lock(m_);
  try {
    if (behind_) {
      if (std::chrono::steady_clock::now() >= retry_at_) catch_up();
    } else if (open_) {
      commit();
    }
  } catch (const std::exception& e) {
    fell_behind(e.what());
    if (!store_) throw;
  }
}

void sqlite_view::commit() {
  db_->exec("COMMIT");
  open_ = false;
  uncommitted_ = 0;
  stored_ = written_;
}

void sqlite_view::fell_behind(const std::string& why) {
  if (open_) try {
      db_->exec("ROLLBACK");  // (SQLite may have rolled back already: then this fails, harmlessly)
    } catch (...) {
    }
  open_ = false;
  uncommitted_ = 0;
  written_ = stored_;
  if (!store_) return;  // no log to catch up from: the caller fails the view
  if (!behind_) {
    spdlog::error("the SQL view cannot write ({}): it stays at event {} and catches up from the log when it can", why,
                  stored_.load());
    pause_ = std::chrono::milliseconds(500);
  } else {
    pause_ = std::min<std::chrono::milliseconds>(pause_ * 2, std::chrono::seconds(30));
  }
  behind_ = true;
  {
    std::lock_guard<std::mutex> lock(why_m_);
    behind_why_ = why.empty() ? "unknown error" : why;
  }
  retry_at_ = std::chrono::steady_clock::now() + pause_;
}

void sqlite_view::catch_up() {
  const uint64_t from = stored_.load(), target = applied_seq();
  db_->exec("BEGIN IMMEDIATE");
  open_ = true;
  rows_to_catch_up(*store_, from, target, world_, clusters_, [&](const sql_batch_rows& rows) { write_rows(rows); });
  st_->offset->bind(1, std::to_string(target)).run();
  written_ = target;
  commit();
  behind_ = false;
  {
    std::lock_guard<std::mutex> lock(why_m_);
    behind_why_.clear();
  }
  spdlog::info("the SQL view caught up from event {} to {}", from, target);
}

void sqlite_view::write_rows(const sql_batch_rows& rows) {
  for (const auto& [seq, why] : rows.damaged) skip(seq, why + ": written with U+FFFD in its place");
  for (auto [st, list] : {std::pair{st_->event.get(), &rows.events},
                          {st_->decision.get(), &rows.decisions},
                          {st_->job.get(), &rows.jobs},
                          {st_->segment.get(), &rows.run_segments},
                          {st_->worker.get(), &rows.workers}})
    for (const auto& row : *list) write_row(*st, row);
  for (auto [table, st, list] : {std::tuple{"fair_share", st_->fair_share.get(), &rows.fair_share},
                                 std::tuple{"clusters", st_->cluster.get(), &rows.clusters}})
    if (*list) {
      db_->exec(std::string("DELETE FROM ") + table);
      for (const auto& row : **list) write_row(*st, row);
    }
}

void sqlite_view::feed_snapshots(std::shared_ptr<world_snapshots> snapshots) {
  std::lock_guard<std::mutex> lock(m_);
  snapshots_ = std::move(snapshots);
}

void sqlite_view::write_snapshot_now() {
  std::lock_guard<std::mutex> lock(m_);
  if (snapshots_) snapshots_->write_now(world_);
}

void sqlite_view::apply(const std::vector<events::event_envelope>& batch) {
  if (batch.empty()) return;
  std::lock_guard<std::mutex> lock(m_);
  // The world follows the log whatever the file does; the rows follow when they can.
  const auto changed = projections::apply_batch(world_, batch, clusters_);  // (not projection::apply_batch)
  if (snapshots_ && !snapshots_->follow(world_, batch)) {                   // (they fail alone: the view goes on)
    spdlog::error("state snapshots stop for this run: {}", snapshots_->failure().value_or("failed"));
    snapshots_.reset();
  }
  if (behind_) return;  // flush() catches up later, from the log
  try {
    if (!open_) {
      db_->exec("BEGIN IMMEDIATE");
      open_ = true;
    }
    write_rows(rows_of(world_, batch, changed, clusters_));
    st_->offset->bind(1, std::to_string(batch.back().seq)).run();
    written_ = batch.back().seq;
    uncommitted_ += batch.size();
    if (uncommitted_ >= 4096) commit();
  } catch (const std::exception& e) {
    fell_behind(e.what());
    if (!store_) throw;  // the runner fails the projection: its rows stay at the last commit
  }
}

}  // namespace baton::projections
