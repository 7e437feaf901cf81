// A random campaign (seeded) against a real batond under each priority policy, with restarts
// and kill -9 in between: afterwards `batond --rederive` must re-derive every recorded
// assignment, priority recalculation, plan and preemption identically from the log. An owner
// partition and an urgent QOS preempt normal jobs; victims hand off when their worker next
// acts, or are taken back when their grace ends (ten seconds: long enough that a slow build's
// workers still act within it; the campaign ends by letting each worker act once more, then
// stages one preemption whose victim certainly hands off). The SQL view written through it
// all equals, row for row, the view rebuilt from sequence 1.
#include <gtest/gtest.h>

#include <cmath>
#include <sqlite3.h>

#include "replay/recovery/world_recovery.hpp"
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <random>

#include "support/batond_process.hpp"
#include "support/ids.hpp"
#include "support/sql_view.hpp"
#include "support/wait_until.hpp"

using namespace baton;
using nlohmann::json;

namespace {

std::string config_for(const std::string& policy) {
  return "scheduling:\n  policy: " + policy + R"(
  priority_calc_period_seconds: 3600
  partitions: {normal: {priority_tier: 1, priority_factor: 1}, test: {priority_tier: 100, priority_factor: 10},
               owner: {priority_tier: 10, priority_factor: 1, preempt: [normal]}}
  qos: {normal: {priority_factor: 0}, 2h: {priority_factor: 100}, interactive: {priority_factor: 1000},
        urgent: {priority_factor: 500, preempt: [normal, 2h]}}
  preempt_grace_seconds: 10
jobs: {worker_images: [solo]}
accounts:
  chem: {shares: 60, users: {ann: 1, bob: 2}}
  phys: {shares: 40, users: {cy: 1}}
  bio: {shares: 10, parent: phys, users: {di: 1}}
  root: {users: {eve: 20}}
)";
}

struct worker_handle {
  std::string id, token;
  std::string job;  // the job it holds, if any
};

class campaign : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(campaign, EveryDecisionReDerivesAfterRestarts) {
  test::temp_dir dir;
  auto d = std::make_unique<test::batond_process>(dir, config_for(GetParam()));
  ASSERT_GT(d->port(), 0) << d->err();
  std::mt19937 rng(20261123);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const char* users[] = {"ann", "bob", "cy", "di", "eve"};
  const char* partitions[] = {"normal", "normal", "normal", "normal", "test", "owner"};
  const char* qos[] = {"normal", "normal", "2h", "interactive", "urgent"};
  std::vector<worker_handle> workers;
  int assigned = 0, created = 0, plans_asked = 0, handoffs = 0;

  auto op_call = [&](const std::string& method, const std::string& path, const json& body) {
    auto c = d->client();
    auto r =
        method == "POST" ? c->Post(path.c_str(), body.is_null() ? "" : body.dump(), "application/json") : c->Get(path.c_str());
    EXPECT_TRUE(r) << path;
    return r ? r->status : 0;
  };
  auto as_worker = [&](const worker_handle& w, const std::string& path) {
    httplib::Client c("127.0.0.1", d->port());
    auto r = c.Post(path.c_str(), {{"X-Worker-Token", w.token}}, "", "application/json");
    EXPECT_TRUE(r) << path;
    return r ? json::parse(r->body.empty() ? "null" : r->body) : json(nullptr);
  };

  // A worker holding a job acts on it: told to make room, it hands off (or stops, for a
  // cancel); otherwise it finishes.
  // What a worker's control check says about the job it holds ({} without an answer).
  auto control_of = [&](const worker_handle& w) {
    httplib::Client c("127.0.0.1", d->port());
    auto ctl = c.Get(("/jobs/" + w.job + "/control").c_str(), {{"X-Worker-Token", w.token}});
    return ctl && ctl->status == 200 ? json::parse(ctl->body) : json::object();
  };
  auto finish = [&](worker_handle& w) {
    auto control = control_of(w);
    if (control.value("preemption_requested", false) && control["preempt"]["mode"] == "requeue") {
      as_worker(w, "/jobs/" + w.job + "/handoff/start");
      as_worker(w, "/jobs/" + w.job + "/handoff/complete");
      ++handoffs;
    } else if (!control.value("cancellation_requested", false)) {
      as_worker(w, "/jobs/" + w.job + (pick(5) ? "/complete" : "/fail"));
    }
    w.job.clear();
  };

  for (int step = 0; step < 500; ++step) {
    int what = pick(100);
    if (what < 30) {  // a submission
      json body = {{"title", "c"},
                   {"input_bundle_path", "/b"},
                   {"user", users[pick(5)]},
                   {"partition", partitions[pick(6)]},
                   {"qos", qos[pick(5)]},
                   {"nice", pick(3) * 100},
                   {"gpu_count", 1 + pick(3)},
                   {"time_limit_seconds", 600 * (1 + pick(10))},
                   {"hold", pick(10) == 0},
                   {"interactive", pick(6) == 0},
                   {"requeue", pick(6) != 0}};
      body["id"] = test::uid("campaign-" + std::to_string(step));
      EXPECT_EQ(op_call("POST", "/jobs", body), 200);
      ++created;
    } else if ((what < 40 || workers.empty()) && workers.size() < 8) {  // a worker joins
      auto c = d->client();
      auto r = c->Post("/workers/register",
                       json{{"platform", pick(4) ? "hpc" : "salad"}, {"gpu_model", "A100"}, {"gpu_count", 1 + pick(4)}}.dump(),
                       "application/json");
      ASSERT_TRUE(r && r->status == 200);
      auto j = json::parse(r->body);
      workers.push_back({j["worker_id"], j["worker_token"], ""});
    } else if (what < 75) {  // a worker polls, or finishes what it holds
      auto& w = workers[static_cast<size_t>(pick(static_cast<int>(workers.size())))];
      if (w.job.empty()) {
        auto r = as_worker(w, "/jobs/request?worker_id=" + w.id);
        if (r.value("status", "") == "assigned") {
          w.job = r["job_id"];
          ++assigned;
          as_worker(w, "/jobs/" + w.job + "/start");
        }
      } else {
        finish(w);
      }
    } else if (what < 85) {  // an operator recalculates, or releases a held job
      int action = pick(3);
      if (action == 0) {
        EXPECT_EQ(op_call("POST", "/priority/recalculate", nullptr), 200);
      } else if (action == 1) {  // a planning cycle now: its starts and reservations re-derive too
        EXPECT_EQ(op_call("POST", "/plan", nullptr), 200);
        ++plans_asked;
      } else {
        auto c = d->client();
        auto r = c->Get("/jobs?status=queued&limit=100");
        ASSERT_TRUE(r && r->status == 200);
        for (const auto& j : json::parse(r->body))
          if (j["held"] == true) {
            EXPECT_EQ(op_call("POST", "/jobs/" + j["id"].get<std::string>() + "/release", nullptr), 200);
            break;
          }
      }
    } else if (what < 87) {  // a restart: clean, or kill -9 (acknowledged events survive)
      if (pick(2))
        ASSERT_EQ(d->stop(), 0) << d->err();
      else
        d->kill();
      d->start();
      ASSERT_GT(d->port(), 0) << d->err();
    }
  }
  for (auto& w : workers)  // (a victim told near the end hands off now, within its grace)
    if (!w.job.empty()) finish(w);
  const int campaign_handoffs = handoffs;
  // Then one preemption whose victim certainly hands off, however the timing went above: on an
  // image of its own, a normal job runs on that image's only worker, and an owner job comes.
  {
    auto c = d->client();
    auto r = c->Post("/workers/register",
                     json{{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}, {"worker_image_key", "solo"}}.dump(),
                     "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    auto j = json::parse(r->body);
    worker_handle solo{j["worker_id"], j["worker_token"], ""};
    json victim = {
        {"id", test::uid("solo-victim")}, {"title", "v"},    {"input_bundle_path", "/b"}, {"user", "ann"},
        {"partition", "normal"},          {"qos", "normal"}, {"requeue", true},           {"worker_image_key", "solo"}};
    ASSERT_EQ(op_call("POST", "/jobs", victim), 200);
    auto got = as_worker(solo, "/jobs/request?worker_id=" + solo.id);
    ASSERT_EQ(got.value("job_id", ""), victim["id"]) << got;
    ++assigned;
    solo.job = victim["id"];
    as_worker(solo, "/jobs/" + solo.job + "/start");
    json owner = {{"id", test::uid("solo-owner")}, {"title", "o"},
                  {"input_bundle_path", "/b"},     {"user", "ann"},
                  {"partition", "owner"},          {"worker_image_key", "solo"}};
    ASSERT_EQ(op_call("POST", "/jobs", owner), 200);
    // (the scheduler checks right after a submission that may preempt; its grace is ten seconds)
    ASSERT_TRUE(test::wait_until([&] { return control_of(solo).value("preemption_requested", false); }, std::chrono::seconds(5)))
        << "the owner job preempts the only job on its image";
    finish(solo);
    ASSERT_EQ(handoffs, campaign_handoffs + 1);
  }
  EXPECT_GT(assigned, 50) << "the campaign must exercise the policy";
  EXPECT_GT(plans_asked, 5) << "and the planning cycle";
  ASSERT_EQ(d->stop(), 0) << d->err();
  test::child_process tool({BATOND_PATH, "--data-dir", dir / "data", "--rederive"}, dir / "rederive", {"BATON_CONFIG=/dev/null"});
  EXPECT_EQ(test::exit_code(tool.wait()), 0) << tool.err();
  EXPECT_NE(tool.out().find("ok: " + std::to_string(assigned) + " assignment decisions"), std::string::npos)
      << tool.out() << tool.err();
  EXPECT_EQ(tool.out().find(" 0 plans"), std::string::npos) << "plans were recorded and re-derived: " << tool.out();
  EXPECT_EQ(tool.out().find(" 0 preemption decisions"), std::string::npos) << "preemptions too: " << tool.out();
  // The SQL view, written through the restarts and kills above, row for row as a rebuild.
  const std::string rebuilt = dir / "rebuilt.sqlite";
  test::rebuild_view(dir / "data/eventlog", rebuilt);
  EXPECT_TRUE(test::dump_view(dir / "data/views.sqlite") == test::dump_view(rebuilt))
      << "the live SQL view differs from its rebuild";
  // Recalculations re-key queued jobs without an event of theirs: the view's priorities are
  // still the log's (the world recovered from it), job by job.
  {
    events::store_options ro;
    ro.read_only = true;
    auto world = replay::recover_world(*events::event_store::open(dir / "data/eventlog", ro)).world;
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2((dir / "data/views.sqlite").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT id, priority FROM jobs", -1, &st, nullptr), SQLITE_OK);
    size_t rows = 0, mismatched = 0, prioritised = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      ++rows;
      const core::job* j = world.find_job(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
      mismatched += !j || j->priority != sqlite3_column_int64(st, 1);
      prioritised += sqlite3_column_int64(st, 1) != 0;
    }
    sqlite3_finalize(st);
    // The fair_share table: every association's figures at the recalculation in force.
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT account || '/' || \"user\", fair_share, usage_gpu_seconds, level_fs FROM fair_share",
                                 -1, &st, nullptr),
              SQLITE_OK);
    size_t shares = 0, share_mismatches = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      ++shares;
      auto s = world.priority.shares.find(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
      share_mismatches += s == world.priority.shares.end() || s->second.fair_share != sqlite3_column_double(st, 1) ||
                          s->second.usage != sqlite3_column_double(st, 2) ||
                          (sqlite3_column_type(st, 3) == SQLITE_NULL) != std::isinf(s->second.level_fs);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    EXPECT_EQ(shares, world.priority.shares.size());
    EXPECT_EQ(share_mismatches, 0u) << "associations whose fair share in the view is not the log's";
    if (GetParam() == std::string("multifactor")) {
      EXPECT_GE(shares, 5u) << "ann, bob, cy, di, eve";
    }
    EXPECT_EQ(rows, world.jobs.size());
    EXPECT_EQ(mismatched, 0u) << "jobs whose priority in the view is not the log's";
    if (GetParam() != std::string("fifo")) {
      EXPECT_GT(prioritised, 0u) << "the campaign gave jobs priorities";
    }
  }
  std::cout << "[ info ] " << tool.out() << "[ info ] " << campaign_handoffs << " hand-offs after a preemption in the campaign\n";
}

INSTANTIATE_TEST_SUITE_P(policies, campaign, ::testing::Values("multifactor", "lattice:ml_training", "fifo"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n)
                             if (ch == ':') ch = '_';
                           return n;
                         });
