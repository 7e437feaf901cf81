// The PostgreSQL view (projections/postgres_view.hpp) against a real batond and a real
// PostgreSQL the test starts: after bursts with kill -9 while the view writes, and after the
// database went away and came back while batond kept serving, it holds every event once and
// every row as the SQLite view rebuilt from sequence 1 has it; --rebuild-projection postgres
// writes it again identically; a wrong password or no server never stops batond; a password
// in the config file is refused.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <cmath>
#include <cstdlib>

#include "support/batond_process.hpp"
#include "support/postgres_server.hpp"
#include "support/sql_view.hpp"
#include "support/view_load.hpp"

using namespace baton;

namespace {

// A field as both views should show it: numbers with a fraction in one form ("80.0" in
// SQLite is "80" in PostgreSQL), everything else as it is.
std::string normalized(const std::string& field) {
  if (field.find_first_of(".eE") == std::string::npos) return field;
  char* end = nullptr;
  double v = std::strtod(field.c_str(), &end);
  if (field.empty() || *end != '\0' || !std::isfinite(v)) return field;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string normalized_dump(const std::string& dump) {
  std::string out, field;
  for (char c : dump) {
    if (c == '|' || c == '\n') {
      out += normalized(field);
      out += c;
      field.clear();
    } else {
      field += c;
    }
  }
  return out;
}

// The PostgreSQL view in dump_view's format: "table|col|...\n", rows ordered by every column.
std::string dump_postgres(const std::string& dsn) {
  pqxx::connection c(dsn);
  pqxx::work tx(c);
  tx.exec("SET extra_float_digits = 0");  // 15 digits, as SQLite prints
  std::string out;
  for (const char* table : {"meta", "events", "jobs", "workers", "run_segments", "decisions", "fair_share", "clusters"}) {
    const auto columns = tx.exec(std::string("SELECT * FROM ") + table + " LIMIT 0").columns();
    std::string sql = std::string("SELECT * FROM ") + table + " ORDER BY ";
    for (pqxx::row::size_type i = 1; i <= columns; ++i) sql += std::to_string(i) + (i < columns ? ", " : "");
    for (const auto& row : tx.exec(sql)) {
      out += table;
      for (const auto& f : row) out += std::string("|") + (f.is_null() ? "NULL" : f.c_str());
      out += "\n";
    }
  }
  return normalized_dump(out);
}

int64_t pg_int(const std::string& dsn, const std::string& sql) {
  pqxx::connection c(dsn);
  pqxx::work tx(c);
  return tx.exec1(sql)[0].as<int64_t>();
}

std::string config_for(const test::postgres_server& pg) { return "projections: {postgres: {dsn: \"" + pg.dsn() + "\"}}\n"; }

std::vector<std::string> password_env() { return {"BATON_POSTGRES_PASSWORD=" + std::string(test::postgres_server::password)}; }

// The SQLite view of the same log, rebuilt from sequence 1, as the reference.
std::string reference(const test::temp_dir& dir, const std::string& name) {
  test::rebuild_view(dir / "data/eventlog", dir / name);
  return normalized_dump(test::dump_view(dir / name));
}

}  // namespace

TEST(postgres_view, KillNineAndADatabaseAwayLeaveEveryEventOnceAndEveryRowAsRebuilt) {
  test::postgres_server pg;
  test::temp_dir dir;
  auto d = std::make_unique<test::batond_process>(dir, config_for(pg), password_env());
  ASSERT_GT(d->port(), 0) << d->err();
  for (int round = 0; round < 2; ++round) {  // killed after some of its transactions committed
    test::burst(*d, round, 200 + 100 * round);
    d->start();
    ASSERT_GT(d->port(), 0) << d->err();
  }
  test::burst(*d, 2, std::nullopt);  // rows written as the events come, committed by the runner's flushes
  ASSERT_TRUE(test::caught_up(*d, "postgres")) << test::healthz(*d).dump();

  // The database goes away: batond goes on serving, the view falls behind and says so.
  pg.stop();
  const int64_t before = test::healthz(*d).value("last_sequence", 0);
  test::burst(*d, 3, std::nullopt);
  auto h = test::healthz(*d);
  EXPECT_GT(h.value("last_sequence", 0), before + 100) << "batond kept deciding and recording";
  EXPECT_GT(h["projections"]["postgres"]["lag_events"].get<int64_t>(), 0) << h.dump();
  EXPECT_EQ(h["status"], "ok");
  pg.start();
  ASSERT_TRUE(test::caught_up(*d, "postgres")) << test::healthz(*d).dump() << d->err();
  ASSERT_EQ(d->stop(), 0) << d->err();
  EXPECT_NE(d->err().find("the PostgreSQL view is behind the log"), std::string::npos) << "the outage is logged";

  const std::string dsn = pg.dsn_with_password();
  events::store_options ro;
  ro.read_only = true;
  const auto last = static_cast<int64_t>(events::event_store::open(dir / "data/eventlog", ro)->last_seq());
  EXPECT_EQ(pg_int(dsn, "SELECT count(*) FROM events"), last) << "every event once";
  EXPECT_EQ(pg_int(dsn, "SELECT value::bigint FROM meta WHERE key = 'applied_seq'"), last);
  EXPECT_GT(pg_int(dsn, "SELECT count(*) FROM jobs WHERE status = 'completed'"), 0);
  // docs/db-views.md's PostgreSQL query: GPU-hours per account and user over the last week.
  {
    pqxx::connection c(dsn);
    pqxx::work tx(c);
    auto r = tx.exec(R"sql(
      SELECT j.account, j."user", round((sum(s.gpu_seconds) / 3600.0)::numeric, 2) AS gpu_hours
      FROM run_segments s JOIN jobs j ON j.id = s.job_id
      WHERE s.ended_at::timestamptz >= now() - interval '7 days'
      GROUP BY j.account, j."user" ORDER BY gpu_hours DESC)sql");
    ASSERT_EQ(r.size(), 1u) << "one account and user ran everything";
    EXPECT_EQ(std::string(r[0][0].c_str()), "root");
  }
  const auto got = dump_postgres(dsn), want = reference(dir, "rebuilt.sqlite");
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the PostgreSQL view differs from the SQLite view rebuilt from the log";
}

TEST(postgres_view, ARebuildWritesTheSameRowsAndBadCredentialsNeverStopBatond) {
  test::postgres_server pg;
  test::temp_dir dir;
  auto d = std::make_unique<test::batond_process>(dir, config_for(pg), password_env());
  ASSERT_GT(d->port(), 0) << d->err();
  test::burst(*d, 0, std::nullopt);
  ASSERT_TRUE(test::caught_up(*d, "postgres"));
  ASSERT_EQ(d->stop(), 0) << d->err();
  const auto first = dump_postgres(pg.dsn_with_password());
  EXPECT_TRUE(first == reference(dir, "first.sqlite"));

  d->start({"--rebuild-projection", "postgres"});
  ASSERT_GT(d->port(), 0) << d->err();
  ASSERT_TRUE(test::caught_up(*d, "postgres"));
  ASSERT_EQ(d->stop(), 0) << d->err();
  EXPECT_NE(d->err().find("rebuilt from event 1: asked to rebuild it"), std::string::npos) << d->err();
  const auto second = dump_postgres(pg.dsn_with_password());
  EXPECT_TRUE(second == reference(dir, "second.sqlite")) << "the rebuilt view is the log's (with the restart's events)";
  EXPECT_GT(second.size(), first.size());

  // A wrong password: batond starts, serves and records; the view waits and says why.
  test::temp_dir other;
  test::batond_process wrong(other, config_for(pg), {"BATON_POSTGRES_PASSWORD=wrong"});
  ASSERT_GT(wrong.port(), 0) << wrong.err();
  auto made =
      wrong.client()->Post("/jobs", nlohmann::json{{"title", "t"}, {"input_bundle_path", "/b"}}.dump(), "application/json");
  ASSERT_TRUE(made);
  EXPECT_EQ(made->status, 200);
  auto h = test::healthz(wrong);
  EXPECT_GT(h["projections"]["postgres"]["lag_events"].get<int64_t>(), 0) << h.dump();
  EXPECT_EQ(wrong.stop(), 0) << wrong.err();
  EXPECT_NE(wrong.err().find("password authentication failed"), std::string::npos) << wrong.err();
  EXPECT_EQ(wrong.err().find(test::postgres_server::password), std::string::npos) << "the password is never logged";
}

TEST(postgres_view, APasswordInTheConfigFileIsRefused) {
  test::temp_dir dir;
  std::ofstream(dir / "batond.yaml") << "projections: {postgres: {dsn: \"host=/tmp dbname=x password=secret\"}}\n";
  test::child_process p({BATOND_PATH, "--config", dir / "batond.yaml", "--data-dir", dir / "data"}, dir / "run", {});
  EXPECT_EQ(test::exit_code(p.wait()), 2);
  EXPECT_NE(p.err().find("projections.postgres.dsn"), std::string::npos) << p.err();
  EXPECT_NE(p.err().find("BATON_POSTGRES_PASSWORD"), std::string::npos) << p.err();
  EXPECT_EQ(p.err().find("secret"), std::string::npos) << "the config error does not repeat the password";
}
