#include "projections/postgres_view.hpp"

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "projections/sql_batch.hpp"
#include "projections/sql_rows.hpp"

namespace baton::projections {

namespace {

constexpr size_t commit_every = 4096;  // events held back at most before they are written

// libpq's conninfo quoting: 'value' with \ and ' escaped.
std::string conninfo_value(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// Rows as text parameters (NULL as a null pointer; doubles with every digit, so PostgreSQL
// stores the very value the SQLite view stores), many rows per statement: a round trip per
// row would cap the view at a few thousand events a second.
void write_rows(pqxx::work& tx, sql_table t, const std::vector<sql_row>& rows) {
  const size_t columns = sql_columns(t);
  const size_t per_statement = std::max<size_t>(1, std::min<size_t>(1000, 60000 / columns));  // PostgreSQL: <= 65535 parameters
  std::vector<std::string> text;
  std::vector<const char*> params;
  for (size_t at = 0; at < rows.size(); at += per_statement) {
    const size_t n = std::min(per_statement, rows.size() - at);
    text.assign(n * columns, std::string());
    params.assign(n * columns, nullptr);
    for (size_t r = 0; r < n; ++r)
      for (size_t i = 0; i < columns; ++i) {
        const size_t k = r * columns + i;
        std::visit(
            [&](const auto& v) {
              using T = std::decay_t<decltype(v)>;
              if constexpr (std::is_same_v<T, std::monostate>) {
                return;
              } else if constexpr (std::is_same_v<T, std::string>) {
                text[k] = v;
              } else if constexpr (std::is_same_v<T, double>) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.17g", v);
                text[k] = buf;
              } else {
                text[k] = std::to_string(v);
              }
              params[k] = text[k].c_str();
            },
            rows[at + r][i]);
      }
    tx.exec_params(sql_write_many(sql_dialect::postgres, t, n), pqxx::prepare::make_dynamic_params(params));
  }
}

// What one transaction step writes, table by table.
void write_rows(pqxx::work& tx, const sql_batch_rows& rows) {
  write_rows(tx, sql_table::events, rows.events);
  write_rows(tx, sql_table::decisions, rows.decisions);
  write_rows(tx, sql_table::jobs, rows.jobs);
  write_rows(tx, sql_table::run_segments, rows.run_segments);
  write_rows(tx, sql_table::workers, rows.workers);
  for (auto [table, t, list] : {std::tuple{"fair_share", sql_table::fair_share, &rows.fair_share},
                                std::tuple{"clusters", sql_table::clusters, &rows.clusters}})
    if (*list) {
      tx.exec(std::string("DELETE FROM ") + table);
      write_rows(tx, t, **list);
    }
}

}  // namespace

struct postgres_view::session {
  explicit session(const std::string& info) : conn(info) {}
  pqxx::connection conn;
};

postgres_view::postgres_view(postgres_options o, std::shared_ptr<const events::event_store> store, core::world at, uint64_t head)
    : projection(projection_name),
      o_(std::move(o)),
      store_(std::move(store)),
      world_(std::move(at)),
      clusters_(clusters_known(world_)),
      pause_(o_.retry_first) {
  restore_applied(head);
}

postgres_view::~postgres_view() {
  try {
    flush();
  } catch (...) {
  }
}

std::optional<std::string> postgres_view::last_error() const {
  std::lock_guard<std::mutex> lock(error_m_);
  return error_;
}

uint64_t postgres_view::stored_seq() const { return stored_.load(); }

bool postgres_view::pending() const {
  std::lock_guard<std::mutex> lock(m_);
  return held_events_ > 0 || !synced_;  // (the runner asks between batches, on the thread that applies)
}

bool postgres_view::sync_now() {
  std::lock_guard<std::mutex> lock(m_);
  if (synced_) return true;
  try {
    connect();
    catch_up();
    return true;
  } catch (const std::exception& e) {
    lost(e.what());
    return false;
  }
}

void postgres_view::flush() {
  std::lock_guard<std::mutex> lock(m_);
  try {
    if (synced_) {
      if (held_events_ > 0) store_held();
      return;
    }
    if (std::chrono::steady_clock::now() < retry_at_) return;
    connect();
    catch_up();
  } catch (const std::exception& e) {
    lost(e.what());
  }
}

void postgres_view::lost(const std::string& why) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(error_m_);
    first = synced_ || !error_ || *error_ != why;
    error_ = why;
  }
  db_.reset();
  synced_ = false;
  held_ = {};  // (catch_up() writes them again from the log)
  held_changes_ = {};
  held_events_ = 0;
  retry_at_ = std::chrono::steady_clock::now() + pause_;
  if (first)
    spdlog::error(
        "the PostgreSQL view is behind the log (stored up to event {}, the log is at {}); retrying every {} ms up to {} s: {}",
        stored_.load(), applied_seq(), pause_.count(), o_.retry_max.count() / 1000, why);
  pause_ = std::min(pause_ * 2, o_.retry_max);
}

void postgres_view::connect() {
  std::string info = o_.dsn;
  // A server that does not answer must not hold the view's thread (or batond's start and stop)
  // for as long as TCP would try: libpq's default is to wait forever.
  if (info.find("connect_timeout") == std::string::npos) info += " connect_timeout=5";
  if (!o_.password.empty()) info += " password=" + conninfo_value(o_.password);
  db_ = std::make_unique<session>(info);
  pqxx::work tx(db_->conn);
  std::string version;
  uint64_t stored = 0;
  if (!tx.exec1("SELECT to_regclass('meta') IS NULL")[0].as<bool>()) {
    auto v = tx.exec("SELECT value FROM meta WHERE key = 'schema_version'");
    if (!v.empty()) version = v[0][0].c_str();
    auto a = tx.exec("SELECT value FROM meta WHERE key = 'applied_seq'");
    if (!a.empty()) stored = std::stoull(a[0][0].c_str());
  }
  std::string rebuild;
  if (o_.rebuild)
    rebuild = "asked to rebuild it";
  else if (version.empty())
    rebuild = "a new database";
  else if (version != std::to_string(sql_schema_version))
    rebuild = "its schema is version " + version + ", this batond writes " + std::to_string(sql_schema_version);
  else if (stored > applied_seq())
    rebuild = "it holds events up to " + std::to_string(stored) + ", the log ends at " + std::to_string(applied_seq());
  if (!rebuild.empty()) {
    for (const auto& t : sql_tables()) tx.exec("DROP TABLE IF EXISTS " + t);
    tx.exec(sql_schema(sql_dialect::postgres));
    tx.exec("INSERT INTO meta VALUES ('schema_version', '" + std::to_string(sql_schema_version) + "'), ('applied_seq', '0')");
    stored = 0;
    if (!version.empty() || o_.rebuild) spdlog::warn("the PostgreSQL view is rebuilt from event 1: {}", rebuild);
  }
  tx.commit();
  o_.rebuild = false;  // once
  db_->conn.prepare("w_offset", "UPDATE meta SET value = $1 WHERE key = 'applied_seq'");
  stored_ = stored;
}

// The events after the stored offset, read from the log, then the current rows of everything
// they touched (the world is at applied_seq()), then the offset: one transaction.
void postgres_view::catch_up() {
  const uint64_t target = applied_seq();
  const auto started = std::chrono::steady_clock::now();
  const uint64_t from = stored_.load();
  if (stored_ < target) {
    pqxx::work tx(db_->conn);
    rows_to_catch_up(*store_, from, target, world_, clusters_, [&](const sql_batch_rows& rows) {
      for (const auto& [seq, why] : rows.damaged) skip(seq, why + ": written with U+FFFD in its place");
      write_rows(tx, rows);
    });
    tx.exec_prepared("w_offset", std::to_string(target));
    tx.commit();
    stored_ = target;
  }
  synced_ = true;
  {
    std::lock_guard<std::mutex> lock(error_m_);
    error_.reset();
  }
  pause_ = o_.retry_first;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  spdlog::info("the PostgreSQL view is caught up at event {} ({} written in {} ms)", target, target - from, ms.count());
}

void postgres_view::store_held() {
  pqxx::work tx(db_->conn);
  add_state_rows(world_, held_changes_, clusters_, held_);
  write_rows(tx, held_);
  tx.exec_prepared("w_offset", std::to_string(held_to_));
  tx.commit();
  stored_ = held_to_;
  held_ = {};
  held_changes_ = {};
  held_events_ = 0;
}

void postgres_view::apply(const std::vector<events::event_envelope>& batch) {
  if (batch.empty()) return;
  std::lock_guard<std::mutex> lock(m_);
  // The world follows the log whatever the database does; the rows follow when it is there.
  auto changed = projections::apply_batch(world_, batch, clusters_);  // (not projection::apply_batch)
  if (!synced_) return;                                               // flush() catches up later, from the log
  // Held back until the runner's flush (or commit_every events), then written in one
  // transaction: a statement per table per flush instead of per log batch, and a job or
  // worker that several batches touched is written once, as it is then.
  add_event_rows(batch, changed, held_);
  for (const auto& [seq, why] : held_.damaged) skip(seq, why + ": written with U+FFFD in its place");
  held_.damaged.clear();
  merge_changes(held_changes_, std::move(changed));
  held_events_ += batch.size();
  held_to_ = batch.back().seq;
  if (held_events_ < commit_every) return;
  try {
    store_held();
  } catch (const std::exception& e) {
    lost(e.what());
  }
}

}  // namespace baton::projections
