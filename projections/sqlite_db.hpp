#pragma once
// A thin RAII layer over Debian's libsqlite3 for the SQL views: a connection, prepared
// statements with typed binds, and errors as exceptions that carry SQLite's message.
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace baton::projections {

class sqlite_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class sqlite_statement {
 public:
  sqlite_statement(sqlite3* db, std::string_view sql);
  ~sqlite_statement();
  sqlite_statement(const sqlite_statement&) = delete;
  sqlite_statement& operator=(const sqlite_statement&) = delete;

  // Binds by position (1-based); returns *this for chaining.
  sqlite_statement& bind(int i, int64_t v);
  sqlite_statement& bind(int i, double v);
  sqlite_statement& bind(int i, std::string_view v);
  sqlite_statement& bind(int i, std::nullopt_t);
  // Text SQLite reads in place instead of copying: `v` must stay alive and unchanged until
  // run() (which clears the bindings). For rows bound and run in one go (the SQL view's).
  sqlite_statement& bind_borrowed(int i, std::string_view v);
  // Steps once: true while a row is there to read.
  bool step();
  // Runs it to the end and resets it for the next binds.
  void run();
  void reset();
  int64_t column_int(int i) const;
  std::string column_text(int i) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class sqlite_db {
 public:
  // Opens (creating) the file in WAL mode: readers (sqlite3 on the command line, dashboards)
  // see the last committed transaction while the view writes the next.
  explicit sqlite_db(const std::string& path);
  ~sqlite_db();
  sqlite_db(const sqlite_db&) = delete;
  sqlite_db& operator=(const sqlite_db&) = delete;

  void exec(const std::string& sql);
  std::unique_ptr<sqlite_statement> prepare(std::string_view sql) { return std::make_unique<sqlite_statement>(db_, sql); }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace baton::projections
