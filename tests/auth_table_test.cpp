// Who may call what, over every route of the API, against a real batond: each row is a
// route, each column a kind of caller, each cell the status expected with a valid request
// and with an invalid one (bad body, parameter or id). Who is calling is settled before the
// request is looked at, so a caller who may not use a route gets the same answer either way.
//
// Columns: no credential; a forged worker token "x.y"; a real worker id with a wrong secret;
// another worker's own token; the pilot token; the operator (shared) token; the worker's own
// token; the shared token on a daemon with workers.accept_shared_token (RelayMD workers); the
// Prometheus scrape token; the dashboard's session cookie without its CSRF header; the
// session cookie with it (a session opened with the operator token). Beside the columns, a
// deregistered worker's own token on every route: answered as the forged one.
#include <gtest/gtest.h>

#include <array>
#include <optional>

#include "support/batond_process.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;

namespace {

enum col {
  none, forged_dot, forged_secret, other_worker, pilot, operator_token, own_worker, shared_accepted,
  scraper, session_no_csrf, session, ncols
};
const char* col_names[ncols] = {"none",     "x.y",        "<id>.<wrong>", "other worker",      "pilot",  "operator",
                                "own worker", "shared (accepted)", "scrape token", "session, no CSRF", "session"};
using statuses = std::array<int, ncols>;

// The job's state when the row runs: what its valid request needs.
enum class stage { queued, assigned, running, handoff, terminal };

struct row {
  std::string method, path;  // {J}: the job, held by the own worker; {OWN}: the own worker's id
  json body;                 // null: no body
  statuses valid;
  // The invalid variant: another path, or another body (nullopt: the route reads neither).
  std::optional<std::string> bad_path;
  std::optional<json> bad_body;
  std::optional<statuses> invalid;
  stage at = stage::assigned;
};

const char* pilot_token = "pilot-token-0123456789abcdef";
const char* scrape_token = "scrape-token-0123456789abcdef";

struct reply {
  int status = 0;
  std::string body;
};

// GET replies are read through a handler so that the live stream (which never ends) gives
// its status and is then left.
reply send(int port, const std::string& method, const std::string& path, const json& body, const httplib::Headers& h) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  std::string text = body.is_null() ? "" : body.dump();
  if (method == "GET") {
    reply out;
    c.Get(path.c_str(), h,
          [&](const httplib::Response& r) {
            out.status = r.status;
            return r.get_header_value("Content-Type").rfind("text/event-stream", 0) != 0;
          },
          [&](const char* data, size_t n) { return out.body.append(data, n), true; });
    return out.status ? out : reply{-1, ""};
  }
  httplib::Result r = method == "POST" ? c.Post(path.c_str(), h, text, "application/json")
                      : method == "PUT" ? c.Put(path.c_str(), h, text, "application/json")
                                        : c.Delete(path.c_str(), h, text, "application/json");
  if (!r) return {-1, ""};
  return {r->status, r->body};
}

// One daemon with a job {J} assigned to worker OWN, and a second worker OTHER.
struct world_under_test {
  test::temp_dir dir;
  std::unique_ptr<test::batond_process> d;
  std::string job, own_id, own_token, other_token;
  std::string gone_token;  // a worker that deregistered: its token is no credential any more
  std::string session_a, session_b, csrf_b;  // two dashboard sessions (a: used without its CSRF token)

  world_under_test(bool accept_shared, stage at) {
    std::string config = accept_shared ? "workers: {accept_shared_token: true}\n" : "";
    d = std::make_unique<test::batond_process>(dir, config, std::vector<std::string>{
        "BATON_PILOT_TOKEN=" + std::string(pilot_token), "BATON_METRICS_TOKEN=" + std::string(scrape_token)});
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
    EXPECT_EQ(send(d->port(), "POST", "/workers/" + gone_id + "/deregister", nullptr, {{"X-Worker-Token", gone_token}}).status, 204);
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
      case none: return {};
      case forged_dot: return {{"X-Worker-Token", "x.y"}};
      case forged_secret: return {{"X-Worker-Token", own_id + ".0123456789abcdef0123456789abcdef"}};
      case other_worker: return {{"X-Worker-Token", other_token}};
      case pilot: return {{"X-API-Token", pilot_token}};
      case operator_token:
      case shared_accepted: return {{"X-API-Token", test::test_token}};
      case own_worker: return {{"X-Worker-Token", own_token}};
      case scraper: return {{"X-API-Token", scrape_token}};
      case session_no_csrf: return {{"Cookie", session_a}};
      case session: return {{"Cookie", session_b}, {"X-CSRF-Token", csrf_b}};
      case ncols: break;
    }
    return {};
  }
  std::string expand(std::string path) const {
    for (auto [key, value] : {std::pair<std::string, std::string>{"{J}", job}, {"{OWN}", own_id}})
      for (size_t at; (at = path.find(key)) != std::string::npos;) path.replace(at, key.size(), value);
    return path;
  }
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

// A session acts as the operator it logged in with; without its CSRF header a change is
// refused (403) before anything else, a read is not. The scrape token reads /metrics only
// (elsewhere it is known and refused, 403, as the pilot token is).
//                      none  x.y  <id>. other pilot  op   own  shared scrape no-csrf session
const statuses operator_ok200{401, 401, 401, 403, 403, 200, 403, 200, 403, 200, 200};
const statuses operator_write200{401, 401, 401, 403, 403, 200, 403, 200, 403, 403, 200};
const statuses operator_ok204{401, 401, 401, 403, 403, 204, 403, 204, 403, 403, 204};
const statuses operator_bad{401, 401, 401, 403, 403, 422, 403, 422, 403, 422, 422};
const statuses operator_write_bad{401, 401, 401, 403, 403, 422, 403, 422, 403, 403, 422};
const statuses self_ok204{401, 401, 401, 403, 403, 401, 204, 204, 403, 403, 401};
const statuses self_bad{401, 401, 401, 403, 403, 401, 422, 422, 403, 403, 401};
const statuses job_ok204{401, 401, 401, 409, 403, 401, 204, 204, 403, 403, 401};
const statuses job_bad_body{401, 401, 401, 409, 403, 401, 422, 422, 403, 403, 401};  // ownership before the body
const statuses job_bad_id{401, 401, 401, 422, 403, 401, 422, 422, 403, 403, 401};    // a malformed id names no job

const std::string bad_id = "/jobs/not-a-uuid";

std::vector<row> rows() {
  std::vector<row> t;
  //                                  none  x.y  <id>. other pilot  op   own  shared scrape no-csrf session
  // --- workers ---
  // The pilot token registers Salad workers only (pilot_token_scope): Slurm pilots have one-time credentials.
  t.push_back({"POST", "/workers/register", {{"platform", "hpc"}}, {401, 401, 401, 403, 403, 200, 403, 200, 403, 403, 200},
               std::nullopt, json{{"platform", "cloud"}}, statuses{401, 401, 401, 403, 422, 422, 403, 422, 403, 403, 422}});
  t.push_back({"POST", "/workers/{OWN}/heartbeat", json::object(), self_ok204, std::nullopt, json{{"progress", 5}}, self_bad});
  t.push_back({"POST", "/workers/{OWN}/credential", {{"grace_seconds", 60}}, {401, 401, 401, 403, 403, 401, 200, 200, 403, 403, 401},
               std::nullopt, json{{"grace_seconds", -1}}, self_bad});
  t.push_back({"POST", "/workers/{OWN}/deregister", nullptr, self_ok204});
  t.push_back({"GET", "/workers", nullptr, operator_ok200, "/workers?state=bogus", std::nullopt, operator_bad});
  t.push_back({"POST", "/jobs/request?worker_id={OWN}", nullptr, {401, 401, 401, 403, 403, 401, 200, 200, 403, 403, 401},
               "/jobs/request", std::nullopt, statuses{401, 401, 401, 422, 403, 401, 422, 422, 403, 403, 401}});
  // --- jobs, worker side ---
  t.push_back({"GET", "/jobs/{J}/control", nullptr, {401, 401, 401, 403, 403, 401, 200, 200, 403, 401, 401},
               bad_id + "/control", std::nullopt, statuses{401, 401, 401, 422, 403, 401, 422, 422, 403, 401, 401}});
  t.push_back({"POST", "/jobs/{J}/start", nullptr, job_ok204, bad_id + "/start", std::nullopt, job_bad_id});
  t.push_back({"POST", "/jobs/{J}/checkpoint", {{"checkpoint_manifest_path", "/ck/1.json"}}, job_ok204, std::nullopt,
               json{{"progress", 0.5}}, job_bad_body});
  t.push_back({"POST", "/jobs/{J}/handoff/start", {{"reason", "walltime"}}, job_ok204, std::nullopt, json::object(),
               job_bad_body, stage::running});
  t.push_back({"POST", "/jobs/{J}/handoff/complete", json::object(), job_ok204, std::nullopt, json{{"progress", 7}},
               job_bad_body, stage::handoff});
  t.push_back({"POST", "/jobs/{J}/complete", nullptr, job_ok204, bad_id + "/complete", std::nullopt, job_bad_id});
  t.push_back({"POST", "/jobs/{J}/fail", {{"reason", "boom"}}, job_ok204, std::nullopt, json{{"reason", 5}}, job_bad_body});
  // --- jobs, operator side ---
  t.push_back({"POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}}, operator_write200, std::nullopt,
               json{{"title", 5}}, operator_write_bad});
  t.push_back({"GET", "/jobs", nullptr, operator_ok200, "/jobs?limit=0", std::nullopt, operator_bad});
  t.push_back({"GET", "/jobs/{J}", nullptr, operator_ok200, bad_id, std::nullopt, operator_bad});
  t.push_back({"DELETE", "/jobs/{J}?force=true", nullptr, operator_ok204, "/jobs/{J}?force=maybe", std::nullopt,
               operator_write_bad});
  t.push_back({"POST", "/jobs/{J}/requeue", nullptr, operator_write200, bad_id + "/requeue", std::nullopt,
               operator_write_bad, stage::terminal});
  t.push_back({"DELETE", "/jobs?status=completed", nullptr, operator_write200, "/jobs?status=running", std::nullopt,
               operator_write_bad});
  t.push_back({"DELETE", "/jobs?older_than_minutes=60", nullptr, operator_write200,
               "/jobs?older_than_minutes=60&older_than_days=1", std::nullopt, operator_write_bad});
  t.push_back({"GET", "/jobs/{J}/history", nullptr, operator_ok200, bad_id + "/history", std::nullopt, operator_bad});
  // --- who goes first ---
  for (std::string verb : {"hold", "release"})
    t.push_back({"POST", "/jobs/{J}/" + verb, nullptr, operator_write200, bad_id + "/" + verb, std::nullopt,
                 operator_write_bad, stage::queued});
  t.push_back({"GET", "/jobs/{J}/priority", nullptr, operator_ok200, bad_id + "/priority", std::nullopt, operator_bad,
               stage::queued});
  t.push_back({"GET", "/priority", nullptr, operator_ok200});
  t.push_back({"GET", "/fairshare", nullptr, operator_ok200});
  t.push_back({"POST", "/priority/recalculate", nullptr, operator_write200});
  t.push_back({"POST", "/plan", nullptr, operator_write200});
  // --- named operators' token rotation (an admin, or the operator themself: none here) ---
  t.push_back({"POST", "/operators/nobody/token", {{"grace_seconds", 60}}, {401, 401, 401, 403, 403, 404, 403, 404, 403, 403, 404},
               std::nullopt, json{{"grace_seconds", "soon"}}, operator_write_bad});
  // --- the pilot token's rotation (admins; this daemon's comes from BATON_PILOT_TOKEN: 409) ---
  t.push_back({"POST", "/pilot-token", {{"grace_seconds", 60}}, {401, 401, 401, 403, 403, 409, 403, 409, 403, 403, 409},
               std::nullopt, json{{"grace_seconds", "soon"}}, operator_write_bad});
  // --- the audit export ---
  t.push_back({"GET", "/audit/export?format=csv", nullptr, operator_ok200, "/audit/export?from=yesterday", std::nullopt,
               operator_bad});
  // --- Prometheus: the scrape token's one route ---
  t.push_back({"GET", "/metrics", nullptr, {401, 401, 401, 403, 403, 200, 403, 200, 200, 200, 200}});
  // --- the live stream and the dashboard's own routes ---
  t.push_back({"GET", "/events/stream", nullptr, operator_ok200, "/events/stream?after=soon", std::nullopt, operator_bad});
  t.push_back({"GET", "/ui/session", nullptr, {401, 401, 401, 401, 401, 401, 401, 401, 401, 200, 200}});
  t.push_back({"POST", "/ui/logout", nullptr, {401, 401, 401, 401, 401, 401, 401, 401, 401, 403, 200}});
  t.push_back({"GET", "/ui/", nullptr, {200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200}, "/ui/nothing-here.js",
               std::nullopt, statuses{404, 404, 404, 404, 404, 404, 404, 404, 404, 404, 404}});
  // Logging in reads the token in the body, whatever the request's own headers say.
  t.push_back({"POST", "/ui/login", {{"token", test::test_token}}, {200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200},
               std::nullopt, json{{"token", "x.y"}}, statuses{401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401}});
  // --- clusters, config, cloud ---
  t.push_back({"GET", "/clusters", nullptr, operator_ok200});
  t.push_back({"GET", "/config/slurm-clusters", nullptr, operator_ok200});
  t.push_back({"PUT", "/config/slurm-clusters/enabled", {{"enabled", json::object()}}, operator_ok204, std::nullopt,
               json{{"enabled", 5}}, operator_write_bad});
  t.push_back({"GET", "/config/worker-images", nullptr, operator_ok200});
  t.push_back({"GET", "/cloud/salad", nullptr, {401, 401, 401, 403, 403, 404, 403, 404, 403, 404, 404}});  // not configured here
  for (std::string verb : {"enable", "disable"})
    t.push_back({"POST", "/clusters/gpu/" + verb, json::object(), {401, 401, 401, 403, 403, 404, 403, 404, 403, 403, 404},
                 std::nullopt, json{{"reason", 5}}, operator_write_bad});
  // --- open ---
  t.push_back({"GET", "/healthz", nullptr, {200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200}});
  return t;
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
