// Who may call what, over every route of the API, against a real batond: each row is a
// route, each column a kind of caller, each cell the status expected with a valid request
// and with an invalid one (bad body, parameter or id). Who is calling is settled before the
// request is looked at, so a caller who may not use a route gets the same answer either way.
//
// The table and its columns are tests/support/access_table.hpp (the session column's session
// is opened with the operator token). Beside the columns, a deregistered worker's own token on
// every route: answered as the forged one; a pilot's spent one-time credential likewise, in
// the Slurm integration test (a placeholder needs a real Slurm).
#include <gtest/gtest.h>

#include <array>
#include <optional>

#include "support/access_table.hpp"
#include "support/batond_process.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;
using namespace baton::test::access_table;

namespace {

const char* pilot_token = "pilot-token-0123456789abcdef";
const char* scrape_token = "scrape-token-0123456789abcdef";

// One daemon with a job {J} assigned to worker OWN, and a second worker OTHER.
struct world_under_test {
  test::temp_dir dir;
  std::unique_ptr<test::batond_process> d;
  std::string job, own_id, own_token, other_token;
  std::string gone_token;                    // a worker that deregistered: its token is no credential any more
  std::string session_a, session_b, csrf_b;  // two dashboard sessions (a: used without its CSRF token)

  world_under_test(bool accept_shared, stage at) {
    std::string config = accept_shared ? "workers: {accept_shared_token: true}\n" : "";
    d = std::make_unique<test::batond_process>(dir, config,
                                               std::vector<std::string>{"BATON_PILOT_TOKEN=" + std::string(pilot_token),
                                                                        "BATON_METRICS_TOKEN=" + std::string(scrape_token)});
    job = test::uid("auth-job");
    auto op = httplib::Headers{{"X-API-Token", test::test_token}};
    EXPECT_EQ(send(d->port(), "POST", "/jobs", {{"id", job}, {"title", "t"}, {"input_bundle_path", "/b"}}, op).status, 200);
    auto reg = [&] {
      auto r = send(d->port(), "POST", "/workers/register", {{"platform", "hpc"}}, op);
      auto j = json::parse(r.body);
      return std::make_pair(j.value("worker_id", ""), j.value("worker_token", ""));
    };
    std::tie(own_id, own_token) = reg();
    other_token = reg().second;
    auto [gone_id, gone] = reg();
    gone_token = gone;
    EXPECT_EQ(send(d->port(), "POST", "/workers/" + gone_id + "/deregister", nullptr, {{"X-Worker-Token", gone_token}}).status,
              204);
    auto login = [&](std::string& sid, std::string* csrf) {
      httplib::Client c("127.0.0.1", d->port());
      auto r = c.Post("/ui/login", json{{"token", test::test_token}}.dump(), "application/json");
      ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
      auto cookie = r->get_header_value("Set-Cookie");
      sid = cookie.substr(0, cookie.find(';'));  // "baton_session=<id>"
      if (csrf) *csrf = json::parse(r->body).value("csrf_token", "");
    };
    login(session_a, nullptr);
    login(session_b, &csrf_b);
    if (at == stage::queued) return;
    auto mine = httplib::Headers{{"X-Worker-Token", own_token}};
    EXPECT_EQ(json::parse(send(d->port(), "POST", "/jobs/request?worker_id=" + own_id, nullptr, mine).body)["job_id"], job);
    auto step = [&](const std::string& path, json body) {
      EXPECT_EQ(send(d->port(), "POST", "/jobs/" + job + path, body, mine).status, 204) << path;
    };
    if (at != stage::assigned) step("/start", nullptr);
    if (at == stage::handoff) step("/handoff/start", {{"reason", "walltime"}});
    if (at == stage::terminal) step("/complete", nullptr);
  }
  ~world_under_test() {
    if (d) {
      EXPECT_EQ(d->stop(), 0) << d->err();
    }
  }

  httplib::Headers credential(col c) const {
    switch (c) {
      case none:
        return {};
      case forged_dot:
        return {{"X-Worker-Token", "x.y"}};
      case forged_secret:
        return {{"X-Worker-Token", own_id + ".0123456789abcdef0123456789abcdef"}};
      case other_worker:
        return {{"X-Worker-Token", other_token}};
      case pilot:
        return {{"X-API-Token", pilot_token}};
      case operator_token:
      case shared_accepted:
        return {{"X-API-Token", test::test_token}};
      case own_worker:
        return {{"X-Worker-Token", own_token}};
      case scraper:
        return {{"X-API-Token", scrape_token}};
      case session_no_csrf:
        return {{"Cookie", session_a}};
      case session:
        return {{"Cookie", session_b}, {"X-CSRF-Token", csrf_b}};
      case ncols:
        break;
    }
    return {};
  }
  std::string expand(const std::string& path) const { return test::access_table::expand(path, job, own_id); }
};

// Deny statuses do not depend on the job's state, so the columns run in order on one daemon:
// the refusals first, the callers that may act last; the other callers that may act (the
// shared token on a RelayMD-style daemon, the dashboard's session) each on a daemon of their own.
void run_row(const row& r) {
  SCOPED_TRACE(r.method + " " + r.path);
  world_under_test a(false, r.at), b(true, r.at), s(false, r.at);
  for (int c = 0; c < ncols; ++c) {
    const world_under_test& w = c == shared_accepted ? b : c == session ? s : a;
    auto creds = w.credential(static_cast<col>(c));
    if (r.invalid) {
      auto bad = send(w.d->port(), r.method, w.expand(r.bad_path.value_or(r.path)), r.bad_body.value_or(r.body), creds);
      EXPECT_EQ(bad.status, (*r.invalid)[c]) << "invalid request, caller: " << col_names[c] << "\n" << bad.body;
      if (bad.status >= 400) {
        EXPECT_TRUE(json::accept(bad.body)) << "error bodies are JSON: " << bad.body;
      }
    }
    auto ok = send(w.d->port(), r.method, w.expand(r.path), r.body, creds);
    EXPECT_EQ(ok.status, r.valid[c]) << "valid request, caller: " << col_names[c] << "\n" << ok.body;
  }
  // A gone worker's own token is answered as a forged one, on every route.
  auto gone = send(a.d->port(), r.method, a.expand(r.path), r.body, {{"X-Worker-Token", a.gone_token}});
  EXPECT_EQ(gone.status, r.valid[forged_secret]) << "valid request, caller: a gone worker\n" << gone.body;
}

}  // namespace

class auth_table : public ::testing::TestWithParam<row> {};

TEST_P(auth_table, EveryCallerGetsItsExpectedAnswer) { run_row(GetParam()); }

INSTANTIATE_TEST_SUITE_P(routes, auth_table, ::testing::ValuesIn(rows()), [](const auto& info) {
  std::string name = info.param.method + "_" + info.param.path;
  for (auto& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name + "_" + std::to_string(info.index);
});
