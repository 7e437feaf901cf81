// The SQL view (projections/sqlite_view.hpp) against a real batond: bursts of concurrent
// requests with kill -9 while the view is writing leave every event in it exactly once and
// every row as a rebuild from sequence 1 and the recovered world have it; --rebuild-projection
// and a schema of another version rebuild it identically; /healthz reports its lag; the
// config can turn it off.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "projections/sql_rows.hpp"
#include "replay/recovery/world_recovery.hpp"
#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/sql_view.hpp"
#include "support/view_load.hpp"

using namespace baton;
using nlohmann::json;

namespace {

int64_t query_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

// Runs one generated write with every column bound as text: `value(i)` for column i.
void write_row(sqlite3* db, const std::string& sql, size_t columns, const std::function<std::string(size_t)>& value) {
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::string> values;
  for (size_t i = 0; i < columns; ++i) values.push_back(value(i));
  for (size_t i = 0; i < columns; ++i) sqlite3_bind_text(st, static_cast<int>(i + 1), values[i].c_str(), -1, SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db);
  sqlite3_finalize(st);
}

std::string text_of(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  std::string v;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return v;
}

}  // namespace

// A job's user and account, and a run segment's worker, are written once: the upsert leaves
// them (and the indexes over them) alone and sets everything else.
TEST(sql_view, UpsertsSetWhatChangesAndLeaveWhatARowNeverChanges) {
  using projections::sql_dialect;
  using projections::sql_table;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, projections::sql_schema(sql_dialect::sqlite).c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  const auto jobs = projections::sql_write(sql_dialect::sqlite, sql_table::jobs);
  const size_t job_columns = projections::sql_columns(sql_table::jobs);
  // Columns in schema order: id, title, status, user, account, ...
  write_row(db, jobs, job_columns, [](size_t i) {
    return i == 0 ? "j1" : i == 2 ? "queued" : i == 3 ? "ann" : i == 4 ? "chem" : "1";
  });
  write_row(db, jobs, job_columns, [](size_t i) {
    return i == 0 ? "j1" : i == 2 ? "running" : i == 3 ? "bob" : i == 4 ? "phys" : "2";
  });
  EXPECT_EQ(text_of(db, "SELECT status || ' ' || \"user\" || ' ' || account || ' ' || title FROM jobs WHERE id = 'j1'"),
            "running ann chem 2");
  const auto segments = projections::sql_write(sql_dialect::sqlite, sql_table::run_segments);
  const size_t segment_columns = projections::sql_columns(sql_table::run_segments);
  // job_id, n, worker_id, started_at, ended_at, ...
  write_row(db, segments, segment_columns, [](size_t i) { return i == 0 ? "j1" : i == 1 ? "0" : i == 2 ? "w1" : "a"; });
  write_row(db, segments, segment_columns, [](size_t i) { return i == 0 ? "j1" : i == 1 ? "0" : i == 2 ? "w2" : "b"; });
  EXPECT_EQ(text_of(db, "SELECT worker_id || ' ' || ended_at FROM run_segments WHERE job_id = 'j1'"), "w1 b");
  EXPECT_EQ(jobs.find("account = excluded"), std::string::npos) << jobs;
  EXPECT_NE(jobs.find("status = excluded.status"), std::string::npos) << jobs;
  sqlite3_close(db);
}

TEST(sql_view, KillNineWhileTheViewWritesLeavesEveryEventOnceAndEveryRowAsRebuilt) {
  test::temp_dir dir;
  auto d = std::make_unique<test::batond_process>(dir, "");
  ASSERT_GT(d->port(), 0) << d->err();
  for (int round = 0; round < 3; ++round) {
    test::burst(*d, round, 60 + 40 * round);
    d->start();
    ASSERT_GT(d->port(), 0) << d->err();
  }
  test::burst(*d, 3, std::nullopt);  // and one that ends normally
  ASSERT_TRUE(test::caught_up(*d));
  ASSERT_EQ(d->stop(), 0) << d->err();

  const std::string live = dir / "data/views.sqlite";
  events::store_options ro;
  ro.read_only = true;
  auto store = events::event_store::open(dir / "data/eventlog", ro);
  const auto last = static_cast<int64_t>(store->last_seq());
  ASSERT_GT(last, 300);
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM events"), last) << "every event once";
  EXPECT_EQ(query_int(live, "SELECT max(seq) FROM events"), last);
  EXPECT_EQ(query_int(live, "SELECT value FROM meta WHERE key = 'applied_seq'"), last);

  // Row for row what a rebuild from sequence 1 writes.
  const std::string rebuilt = dir / "rebuilt.sqlite";
  test::rebuild_view(dir / "data/eventlog", rebuilt);
  const auto want = test::dump_view(rebuilt), got = test::dump_view(live);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the live view differs from its rebuild";

  // And what the world recovered from the log says of every job and worker.
  auto world = replay::recover_world(*store).world;
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM jobs"), static_cast<int64_t>(world.jobs.size() + world.pruned.size()));
  EXPECT_GT(world.pruned.size(), 0u) << "the bursts pruned ended jobs";
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM jobs WHERE pruned = 1"), static_cast<int64_t>(world.pruned.size()));
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM workers"), static_cast<int64_t>(world.workers.size()));
  int64_t completed = 0, running_segments = 0;
  for (const auto& [id, j] : world.jobs.by_id()) {
    completed += j.status == core::job_status::completed;
    for (const auto& s : j.segments) running_segments += !s.ended_at;
  }
  world.pruned.for_each(
      false, [&](const std::string&, const core::pruned_job& p) { completed += p.status == core::job_status::completed; });
  EXPECT_GT(completed, 0) << "the bursts ran jobs to the end";
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM jobs WHERE status = 'completed'"), completed);
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM run_segments WHERE ended_at IS NULL"), running_segments);
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM decisions WHERE type = 'job.assigned'"),
            query_int(live, "SELECT count(*) FROM events WHERE type = 'job.assigned'"));
  // Recalculations came in the middle of the load: the priorities they re-keyed are the log's.
  EXPECT_GT(query_int(live, "SELECT count(*) FROM events WHERE type = 'scheduler.priorities_recalculated'"), 4);
  int64_t queued = 0, distinct_priorities = 0;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(live.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT id, priority FROM jobs WHERE status = 'queued'", -1, &st, nullptr), SQLITE_OK);
  std::set<int64_t> seen;
  while (sqlite3_step(st) == SQLITE_ROW) {
    ++queued;
    const core::job* j = world.find_job(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->priority, sqlite3_column_int64(st, 1)) << j->id;
    seen.insert(sqlite3_column_int64(st, 1));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  distinct_priorities = static_cast<int64_t>(seen.size());
  EXPECT_GT(queued, 0);
  EXPECT_GT(distinct_priorities, 1) << "nice values give queued jobs different priorities";
}

TEST(sql_view, ARebuildAskedForOrForcedByAnotherSchemaGivesTheSameView) {
  test::temp_dir dir;
  auto d = std::make_unique<test::batond_process>(dir, "");
  ASSERT_GT(d->port(), 0) << d->err();
  test::burst(*d, 0, std::nullopt);
  ASSERT_TRUE(test::caught_up(*d));
  auto h = test::healthz(*d);
  EXPECT_EQ(h["projections"]["views"]["applied_sequence"], h["last_sequence"]);
  const std::string path = dir / "data/views.sqlite";
  // Committed while batond runs (the runner flushes a fifth of a second after a batch): a
  // reader beside it sees every event.
  const int64_t last = h["last_sequence"];
  bool visible = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       !visible && std::chrono::steady_clock::now() < deadline;) {
    visible = query_int(path, "SELECT count(*) FROM events") == last;
    if (!visible) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(visible) << "the view's rows are not committed while batond runs";
  ASSERT_EQ(d->stop(), 0) << d->err();
  ASSERT_NE(test::dump_view(path).find("\njobs|"), std::string::npos);

  // Each start below rebuilds the view; each time it must equal a rebuild of the log made here.
  auto same_as_a_rebuild = [&](const std::string& name) {
    const std::string rebuilt = dir / name;
    test::rebuild_view(dir / "data/eventlog", rebuilt);
    return test::dump_view(path) == test::dump_view(rebuilt);
  };
  EXPECT_TRUE(same_as_a_rebuild("first.sqlite"));

  d->start({"--rebuild-projection", "views"});
  ASSERT_GT(d->port(), 0) << d->err();
  ASSERT_EQ(d->stop(), 0) << d->err();
  EXPECT_NE(d->err().find("rebuilt from event 1: asked to rebuild it"), std::string::npos) << d->err();
  EXPECT_TRUE(same_as_a_rebuild("second.sqlite"));

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '0' WHERE key = 'schema_version'", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  d->start();
  ASSERT_GT(d->port(), 0) << d->err();
  ASSERT_EQ(d->stop(), 0) << d->err();
  EXPECT_NE(d->err().find("its schema is version 0"), std::string::npos) << d->err();
  EXPECT_TRUE(same_as_a_rebuild("third.sqlite"));
  EXPECT_EQ(query_int(path, "SELECT value FROM meta WHERE key = 'schema_version'"), projections::sql_schema_version);

  test::child_process bad({BATOND_PATH, "--data-dir", dir / "data", "--rebuild-projection", "nope"}, dir / "bad", {});
  EXPECT_EQ(test::exit_code(bad.wait()), 2);
  EXPECT_NE(bad.err().find("no projection named 'nope'"), std::string::npos) << bad.err();
}

TEST(sql_view, TheConfigTurnsItOff) {
  test::temp_dir dir;
  test::batond_process d(dir, "projections: {sqlite: false}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_FALSE(test::healthz(d)["projections"].contains("views"));
  EXPECT_FALSE(std::filesystem::exists(dir / "data/views.sqlite"));
  EXPECT_EQ(d.stop(), 0);
}

TEST(sql_view, TheClustersTableFollowsTheSwitchesAndARebuildAgrees) {
  test::temp_dir dir;
  test::batond_process d(dir,
                         "provisioning: {interval_seconds: 3600}\n"
                         "clusters:\n  - {name: lab, partition: no-such-partition, worker_images: {default: {}}}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  const std::string live = dir / "data/views.sqlite";
  auto switch_to = [&](const char* verb) {
    auto r = d.client()->Post((std::string("/clusters/lab/") + verb).c_str(), R"({"reason": "maintenance"})", "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    ASSERT_TRUE(test::caught_up(d));  // committed: what /healthz reports is what readers see
  };
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM clusters"), 0) << "a cluster the log never named";
  switch_to("disable");
  EXPECT_EQ(query_int(live, "SELECT enabled FROM clusters WHERE name = 'lab'"), 0);
  switch_to("enable");
  EXPECT_EQ(query_int(live, "SELECT enabled FROM clusters WHERE name = 'lab'"), 1);
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM clusters"), 1);
  ASSERT_EQ(d.stop(), 0) << d.err();
  const std::string rebuilt = dir / "rebuilt.sqlite";
  test::rebuild_view(dir / "data/eventlog", rebuilt);
  EXPECT_TRUE(test::dump_view(rebuilt) == test::dump_view(live));
}
