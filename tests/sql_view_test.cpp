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
#include <thread>

#include "replay/world_recovery.hpp"
#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/sql_view.hpp"

using namespace baton;
using nlohmann::json;

namespace {

json healthz(const test::batond_process& d) {
  auto r = d.client()->Get("/healthz");
  return r && r->status == 200 ? json::parse(r->body) : json();
}

// Waits (with a deadline) until the view has applied every event the log has.
bool view_caught_up(const test::batond_process& d) {
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20); std::chrono::steady_clock::now() < deadline;) {
    auto h = healthz(d);
    if (h.contains("projections") && h["projections"].contains("views") && h["projections"]["views"]["lag_events"] == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

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

// A worker that registers, then polls, starts and completes (or fails) what it is given.
void worker_loop(int port, int rounds, int seed) {
  httplib::Client op("127.0.0.1", port);
  op.set_connection_timeout(2, 0);
  op.set_read_timeout(5, 0);
  auto r = op.Post("/workers/register", {{"X-API-Token", test::test_token}},
                   json{{"platform", "hpc"}, {"gpu_model", "A100"}}.dump(), "application/json");
  if (!r || r->status != 200) return;
  auto w = json::parse(r->body);
  httplib::Headers as_worker{{"X-Worker-Token", w["worker_token"].get<std::string>()}};
  for (int i = 0; i < rounds; ++i) {
    auto p = op.Post(("/jobs/request?worker_id=" + w["worker_id"].get<std::string>()).c_str(), as_worker, "", "application/json");
    if (!p) return;  // batond went away
    if (p->status != 200) continue;
    auto a = json::parse(p->body, nullptr, false);
    if (a.is_discarded() || a.value("status", "") != "assigned") continue;
    const std::string job = a["job_id"];
    op.Post(("/jobs/" + job + "/start").c_str(), as_worker, "", "application/json");
    op.Post(("/jobs/" + job + ((i + seed) % 4 ? "/complete" : "/fail")).c_str(), as_worker, "", "application/json");
  }
}

void submitter_loop(int port, int jobs, const std::string& prefix) {
  httplib::Client op("127.0.0.1", port);
  op.set_connection_timeout(2, 0);
  op.set_read_timeout(5, 0);
  for (int i = 0; i < jobs; ++i) {
    auto r = op.Post("/jobs", {{"X-API-Token", test::test_token}},
                     json{{"id", test::uid(prefix + std::to_string(i))}, {"title", "burst"}, {"input_bundle_path", "/b"}}.dump(),
                     "application/json");
    if (!r) return;
  }
}

// One burst: two submitters and two workers at once; kill -9 once the log has grown by
// `kill_after` events (the view is applying batches then), else let the burst finish.
void burst(test::batond_process& d, int round, std::optional<uint64_t> kill_after) {
  const uint64_t start_seq = healthz(d).value("last_sequence", 0);
  const int port = d.port();
  std::vector<std::thread> load;
  for (int s = 0; s < 2; ++s) load.emplace_back(submitter_loop, port, 60, "r" + std::to_string(round) + "s" + std::to_string(s) + "-");
  for (int w = 0; w < 2; ++w) load.emplace_back(worker_loop, port, 40, w);
  if (kill_after) {
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20); std::chrono::steady_clock::now() < deadline;)
      if (healthz(d).value("last_sequence", 0) >= start_seq + *kill_after) break;
    d.kill();
  }
  for (auto& t : load) t.join();
}

}  // namespace

TEST(sql_view, KillNineWhileTheViewWritesLeavesEveryEventOnceAndEveryRowAsRebuilt) {
  test::temp_dir dir;
  auto d = std::make_unique<test::batond_process>(dir, "");
  ASSERT_GT(d->port(), 0) << d->err();
  for (int round = 0; round < 3; ++round) {
    burst(*d, round, 60 + 40 * round);
    d->start();
    ASSERT_GT(d->port(), 0) << d->err();
  }
  burst(*d, 3, std::nullopt);  // and one that ends normally
  ASSERT_TRUE(view_caught_up(*d));
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
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM jobs"), static_cast<int64_t>(world.jobs.size()));
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM workers"), static_cast<int64_t>(world.workers.size()));
  int64_t completed = 0, running_segments = 0;
  for (const auto& [id, j] : world.jobs) {
    completed += j.status == core::job_status::completed;
    for (const auto& s : j.segments) running_segments += !s.ended_at;
  }
  EXPECT_GT(completed, 0) << "the bursts ran jobs to the end";
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM jobs WHERE status = 'completed'"), completed);
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM run_segments WHERE ended_at IS NULL"), running_segments);
  EXPECT_EQ(query_int(live, "SELECT count(*) FROM decisions WHERE type = 'job.assigned'"),
            query_int(live, "SELECT count(*) FROM events WHERE type = 'job.assigned'"));
}

TEST(sql_view, ARebuildAskedForOrForcedByAnotherSchemaGivesTheSameView) {
  test::temp_dir dir;
  auto d = std::make_unique<test::batond_process>(dir, "");
  ASSERT_GT(d->port(), 0) << d->err();
  burst(*d, 0, std::nullopt);
  ASSERT_TRUE(view_caught_up(*d));
  auto h = healthz(*d);
  EXPECT_EQ(h["projections"]["views"]["applied_sequence"], h["last_sequence"]);
  const std::string path = dir / "data/views.sqlite";
  // Committed while batond runs (the runner flushes a fifth of a second after a batch): a
  // reader beside it sees every event.
  const int64_t last = h["last_sequence"];
  bool visible = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10); !visible && std::chrono::steady_clock::now() < deadline;) {
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
  EXPECT_EQ(query_int(path, "SELECT value FROM meta WHERE key = 'schema_version'"), 1);

  test::child_process bad({BATOND_PATH, "--data-dir", dir / "data", "--rebuild-projection", "nope"}, dir / "bad", {});
  EXPECT_EQ(test::exit_code(bad.wait()), 2);
  EXPECT_NE(bad.err().find("no projection named 'nope'"), std::string::npos) << bad.err();
}

TEST(sql_view, TheConfigTurnsItOff) {
  test::temp_dir dir;
  test::batond_process d(dir, "projections: {sqlite: false}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_FALSE(healthz(d)["projections"].contains("views"));
  EXPECT_FALSE(std::filesystem::exists(dir / "data/views.sqlite"));
  EXPECT_EQ(d.stop(), 0);
}
