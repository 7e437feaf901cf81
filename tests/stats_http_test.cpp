// GET /stats/minutes over HTTP against a real batond: the per-minute counts the dashboard's
// overview draws (projections/minute_stats.hpp) agree with the jobs the API lists, a user
// counts only their own jobs and an admin every job (GET /summary's rule), `since` is checked
// (422 naming it), the caller is checked first (missing, forged, a worker's credential), and a
// restart rebuilds the same minutes from the log. Also GET /priority's pages (the queue page).
#include <algorithm>
#include <set>

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/batond_process.hpp"

using namespace baton;
using nlohmann::json;

namespace {

const char* config = R"(scheduling:
  policy: multifactor
  partitions:
    normal: {priority_tier: 1, priority_factor: 1}
accounts:
  chem: {shares: 50, users: {ann: 1, bo: 1}}
)";

struct reply {
  int status = 0;
  json body;
};

reply of(const httplib::Result& r) {
  if (!r) return {};
  return {r->status, r->body.empty() ? json(nullptr) : json::parse(r->body, nullptr, false)};
}

struct daemon_under_test {
  test::temp_dir dir;
  test::batond_process d{dir, config};

  reply get(const std::string& path, const std::string& token = test::test_token) {
    return of(d.client(token)->Get(path.c_str()));
  }
  reply post(const std::string& path, const json& body, const std::string& token = test::test_token) {
    return of(d.client(token)->Post(path.c_str(), body.dump(), "application/json"));
  }
  std::string user(const std::string& name) {
    auto r = post("/operators", json{{"name", name}, {"role", "user"}, {"accounts", json::array({"chem"})}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body.value("token", "");
  }
  // A registered worker that polls once; its job id ("" when none).
  std::string worker_takes_a_job() {
    auto reg = post("/workers/register", json{{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}});
    EXPECT_EQ(reg.status, 200) << reg.body.dump();
    httplib::Client wc("127.0.0.1", d.port());
    wc.set_default_headers({{"X-Worker-Token", reg.body["worker_token"].get<std::string>()}});
    auto poll =
        of(wc.Post(("/jobs/request?worker_id=" + reg.body["worker_id"].get<std::string>()).c_str(), "", "application/json"));
    return poll.body.value("job_id", "");
  }
};

uint64_t assignments(const json& stats) {
  uint64_t n = 0;
  for (const auto& m : stats["minutes"]) n += m["assignments"].get<uint64_t>();
  return n;
}

}  // namespace

TEST(stats_http, MinutesCountWhatTheLogHoldsForWhomTheCallerMaySee) {
  daemon_under_test t;
  const std::string ann = t.user("ann"), bo = t.user("bo");
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(t.post("/jobs", json{{"title", "a" + std::to_string(i)}, {"input_bundle_path", "/b"}}, ann).status, 200);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(t.post("/jobs", json{{"title", "b" + std::to_string(i)}, {"input_bundle_path", "/b"}}, bo).status, 200);
  std::vector<std::string> taken;
  for (int i = 0; i < 3; ++i) taken.push_back(t.worker_takes_a_job());
  for (const auto& id : taken) ASSERT_FALSE(id.empty());

  // An admin: every job. The log is read up to the request's time, so no waiting here.
  auto all = t.get("/stats/minutes");
  ASSERT_EQ(all.status, 200) << all.body.dump();
  EXPECT_EQ(all.body["scope"], "all");
  EXPECT_EQ(all.body["window_minutes"], 1440);
  ASSERT_FALSE(all.body["minutes"].empty());
  EXPECT_EQ(assignments(all.body), 3u);
  EXPECT_EQ(all.body["minutes"].back()["queued"], 2);
  EXPECT_EQ(all.body["minutes"].back()["queued"], t.get("/summary").body["jobs"]["queued"]);
  int peak = 0;
  for (const auto& m : all.body["minutes"]) {
    EXPECT_GE(m["queued_max"], m["queued"]) << m.dump();
    peak = std::max(peak, m["queued_max"].get<int>());
  }
  EXPECT_EQ(peak, 5) << "five queued before any worker came, whatever minute that was";

  // A user: their own jobs, as GET /summary and GET /jobs count them.
  for (const auto& [name, token] : {std::pair<std::string, std::string>{"ann", ann}, {"bo", bo}}) {
    SCOPED_TRACE(name);
    auto own = t.get("/stats/minutes", token);
    ASSERT_EQ(own.status, 200) << own.body.dump();
    EXPECT_EQ(own.body["scope"], "own");
    const size_t theirs_taken = t.get("/jobs?status=assigned", token).body.size();
    EXPECT_EQ(assignments(own.body), theirs_taken);
    EXPECT_EQ(own.body["minutes"].back()["queued"], t.get("/summary", token).body["jobs"].value("queued", 0));
    EXPECT_EQ(own.body["minutes"].back()["queued"].get<int>() + static_cast<int>(theirs_taken), name == "ann" ? 3 : 2);
  }

  // since: the minute that holds it on; a time after the last minute gives none.
  auto last = all.body["minutes"].back();
  auto from_last = t.get("/stats/minutes?since=" + last["minute"].get<std::string>());
  ASSERT_EQ(from_last.status, 200) << from_last.body.dump();
  ASSERT_EQ(from_last.body["minutes"].size(), 1u) << from_last.body.dump();
  EXPECT_EQ(from_last.body["minutes"][0], last);
  EXPECT_EQ(t.get("/stats/minutes?since=2999-01-01T00:00:00Z").body["minutes"], json::array());
  for (std::string bad : std::vector<std::string>{"yesterday", "2026-01-01T00:00:00", "", std::string(65, '1')}) {
    auto r = t.get("/stats/minutes?since=" + bad);
    EXPECT_EQ(r.status, 422) << bad;
    EXPECT_EQ(r.body["field"], "since") << r.body.dump();
  }

  // The caller before anything else: none, forged, a worker's.
  EXPECT_EQ(t.get("/stats/minutes?since=yesterday", "").status, 401);
  EXPECT_EQ(t.get("/stats/minutes", "x.y").status, 401);
  auto reg = t.post("/workers/register", json{{"platform", "hpc"}});
  httplib::Client wc("127.0.0.1", t.d.port());
  wc.set_default_headers({{"X-Worker-Token", reg.body["worker_token"].get<std::string>()}});
  EXPECT_EQ(of(wc.Get("/stats/minutes?since=yesterday")).status, 403);

  // Rebuilt from event 1 after a restart: the same minutes (later ones carry the levels on).
  t.d.stop();
  t.d.start();
  auto again = t.get("/stats/minutes");
  ASSERT_EQ(again.status, 200) << again.body.dump();
  const auto& before = all.body["minutes"];
  ASSERT_GE(again.body["minutes"].size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(again.body["minutes"][i], before[i]) << i;
  EXPECT_EQ(again.body["minutes"].back()["queued"], 2);
}

// The queue page's pages: GET /priority in evaluation order, limit and offset, the total
// counted whatever the page, titles with each row.
TEST(stats_http, PriorityPagesInEvaluationOrderWithTitlesAndTheTotal) {
  daemon_under_test t;
  json jobs = json::array();
  for (int i = 0; i < 25; ++i)
    jobs.push_back({{"title", "job-" + std::to_string(i) + std::string(300, 'x')}, {"input_bundle_path", "/b"}});
  ASSERT_EQ(t.post("/jobs/batch", json{{"jobs", jobs}}).status, 200);
  auto whole = t.get("/priority");
  ASSERT_EQ(whole.status, 200) << whole.body.dump();
  ASSERT_EQ(whole.body["jobs"].size(), 25u);
  EXPECT_EQ(whole.body["total"], 25);
  EXPECT_EQ(whole.body["limit"], nullptr);
  json paged = json::array();
  for (int offset = 0; offset < 25; offset += 10) {
    auto page = t.get("/priority?limit=10&offset=" + std::to_string(offset));
    ASSERT_EQ(page.status, 200) << page.body.dump();
    EXPECT_EQ(page.body["total"], 25);
    EXPECT_EQ(page.body["offset"], offset);
    EXPECT_EQ(page.body["limit"], 10);
    EXPECT_EQ(page.body["jobs"].size(), offset < 20 ? 10u : 5u);
    for (const auto& j : page.body["jobs"]) paged.push_back(j);
  }
  EXPECT_EQ(paged, whole.body["jobs"]) << "the pages, one after another, are the whole queue in its order";
  std::set<std::string> titles, sent;
  for (const auto& j : whole.body["jobs"]) titles.insert(j["title"].get<std::string>());
  for (const auto& j : jobs) sent.insert(j["title"].get<std::string>());
  EXPECT_EQ(titles, sent) << "every title whole";
  EXPECT_EQ(t.get("/priority?limit=10&offset=40").body["jobs"], json::array());
  for (std::string bad : {"limit=0", "limit=10001", "limit=ten", "offset=-1"}) {
    auto r = t.get("/priority?" + bad);
    EXPECT_EQ(r.status, 422) << bad;
    EXPECT_EQ(r.body["field"], bad.substr(0, bad.find('='))) << r.body.dump();
  }
}
