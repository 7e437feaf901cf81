#pragma once
// The SQL view (projections/sqlite_view.hpp) in tests: every table of a views.sqlite as text,
// row by row in key order, and the same view rebuilt from sequence 1 of a log into a new file
// (through the same projection, fed offline), to compare a live view against.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "events/event_store.hpp"
#include "projections/sqlite_view.hpp"

namespace baton::test {

// "table|col|col|...\n" per row, tables in a fixed order, rows ordered by every column.
inline std::string dump_view(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK) << path;
  std::string out;
  for (const char* table : {"meta", "events", "jobs", "workers", "run_segments", "decisions", "fair_share", "clusters"}) {
    sqlite3_stmt* st = nullptr;
    std::string sql = std::string("SELECT * FROM ") + table;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sqlite3_errmsg(db);
      break;
    }
    const int columns = sqlite3_column_count(st);
    sqlite3_finalize(st);
    sql += " ORDER BY ";
    for (int c = 1; c <= columns; ++c) sql += std::to_string(c) + (c < columns ? ", " : "");
    sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) {
      out += table;
      for (int c = 0; c < columns; ++c) {
        auto* text = sqlite3_column_text(st, c);
        out += "|";
        out += text ? reinterpret_cast<const char*>(text) : "NULL";
      }
      out += "\n";
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// The log at `log_dir` (read-only) projected from sequence 1 into a new view at `path`.
inline void rebuild_view(const std::string& log_dir, const std::string& path) {
  events::store_options ro;
  ro.read_only = true;
  auto store = events::event_store::open(log_dir, ro);
  projections::sqlite_view view(projections::sqlite_view::open(path, true), core::world{}, nullptr);
  for (uint64_t seq = 1; seq <= store->last_seq();) {
    auto batch = store->read(seq, 500);
    ASSERT_FALSE(batch.empty());
    ASSERT_TRUE(view.apply_batch(batch)) << view.failure().value_or("");
    seq = batch.back().seq + 1;
  }
}

}  // namespace baton::test
