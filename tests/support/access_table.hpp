#pragma once
// Who may call what, as a table: every route of the API (a row) against every kind of caller
// (a column), with the status expected for a valid request and for an invalid one.
// tests/auth_table_test.cpp runs it against real batonds; the Slurm integration test runs it
// once more with a pilot's one-time credential after that credential was spent (a placeholder
// needs a real Slurm). The columns: no credential; a forged worker token "x.y"; a real worker
// id with a wrong secret; another worker's own token; the pilot token; the operator (shared)
// token; the worker's own token; the shared token on a daemon with
// workers.accept_shared_token (RelayMD workers); the Prometheus scrape token; the dashboard's
// session cookie without its CSRF header; the session cookie with it.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/batond_process.hpp"

namespace baton::test::access_table {

using nlohmann::json;

// clang-format off
enum col {
  none, forged_dot, forged_secret, other_worker, pilot, operator_token, own_worker, shared_accepted,
  scraper, session_no_csrf, session, ncols
};
inline const char* col_names[ncols] = {"none",     "x.y",        "<id>.<wrong>", "other worker",      "pilot",  "operator",
                                "own worker", "shared (accepted)", "scrape token", "session, no CSRF", "session"};
// clang-format on
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

// A session acts as the operator it logged in with; without its CSRF header a change is
// refused (403) before anything else, a read is not. The scrape token reads /metrics only
// (elsewhere it is known and refused, 403, as the pilot token is).
//                      none  x.y  <id>. other pilot  op   own  shared scrape no-csrf session
inline const statuses operator_ok200{401, 401, 401, 403, 403, 200, 403, 200, 403, 200, 200};
inline const statuses operator_write200{401, 401, 401, 403, 403, 200, 403, 200, 403, 403, 200};
inline const statuses operator_ok204{401, 401, 401, 403, 403, 204, 403, 204, 403, 403, 204};
inline const statuses operator_bad{401, 401, 401, 403, 403, 422, 403, 422, 403, 422, 422};
inline const statuses operator_write_bad{401, 401, 401, 403, 403, 422, 403, 422, 403, 403, 422};
inline const statuses self_ok204{401, 401, 401, 403, 403, 401, 204, 204, 403, 403, 401};
inline const statuses self_bad{401, 401, 401, 403, 403, 401, 422, 422, 403, 403, 401};
inline const statuses job_ok204{401, 401, 401, 409, 403, 401, 204, 204, 403, 403, 401};
inline const statuses job_bad_body{401, 401, 401, 409, 403, 401, 422, 422, 403, 403, 401};  // ownership before the body
inline const statuses job_bad_id{401, 401, 401, 422, 403, 401, 422, 422, 403, 403, 401};    // a malformed id names no job

inline const std::string bad_id = "/jobs/not-a-uuid";

// A row names only what its route needs (the invalid variant and the stage are often left
// out), so the compiler's note that later members take their defaults is not wanted here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
inline std::vector<row> rows() {
  // clang-format off
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
  // --- the data plane (docs/storage.md): a worker's file sets, a job's files, operators' bundles ---
  const std::string digest(64, 'a');
  const json manifest{{"kind", "checkpoint"}, {"attempt", 1}, {"files", {{{"path", "state.chk"}, {"sha256", digest}, {"size", 3}}}}};
  t.push_back({"POST", "/jobs/{J}/files", manifest, {401, 401, 401, 409, 403, 401, 200, 200, 403, 403, 401}, std::nullopt,
               json{{"kind", "checkpoint"}, {"attempt", 1}, {"files", {{{"path", "../up"}, {"sha256", digest}, {"size", 3}}}}},
               statuses{401, 401, 401, 409, 403, 401, 422, 422, 403, 403, 401}});
  // (a set nobody opened: its holder alone would find it, so every worker hears 404)
  t.push_back({"POST", "/jobs/{J}/files/00000000-0000-4000-8000-000000000001/commit", json::object(),
               {401, 401, 401, 404, 403, 401, 404, 404, 403, 403, 401}, bad_id + "/files/x/commit", std::nullopt,
               statuses{401, 401, 401, 422, 403, 401, 422, 422, 403, 403, 401}});
  t.push_back({"GET", "/jobs/{J}/files", nullptr, {401, 401, 401, 409, 403, 200, 200, 200, 403, 200, 200},
               bad_id + "/files", std::nullopt, statuses{401, 401, 401, 422, 403, 422, 422, 422, 403, 422, 422}});
  t.push_back({"POST", "/blobs/uploads", {{"purpose", "bundle"}, {"sha256", digest}, {"size", 3}}, operator_write200,
               std::nullopt, json{{"sha256", "zz"}, {"size", 3}}, operator_write_bad});
  t.push_back({"POST", "/blobs/uploads/0123456789abcdef/complete", json::object(),
               {401, 401, 401, 403, 403, 404, 403, 404, 403, 403, 404}, std::nullopt, json{{"parts", 5}}, operator_write_bad});
  // The local backend's byte routes, with grants nobody was given: every credential that may
  // hold one hears 404 (a grant is found before its holder is compared; blob_transfer_test
  // covers another holder's grant, 403).
  t.push_back({"PUT", "/blobs/uploads/0123456789abcdef?offset=0", json::object(),
               {401, 401, 401, 404, 403, 404, 404, 404, 403, 403, 404}});
  t.push_back({"GET", "/blobs/uploads/0123456789abcdef", nullptr, {401, 401, 401, 404, 403, 404, 404, 404, 403, 404, 404}});
  t.push_back({"GET", "/blobs/downloads/00112233445566778899aabbccddeeff", nullptr,
               {401, 401, 401, 404, 403, 404, 404, 404, 403, 404, 404}});
  // --- jobs, operator side ---
  t.push_back({"POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}}, operator_write200, std::nullopt,
               json{{"title", 5}}, operator_write_bad});
  t.push_back({"POST", "/jobs/batch", {{"jobs", {{{"title", "t"}, {"input_bundle_path", "/b"}}}}}, operator_write200, std::nullopt,
               json{{"jobs", {{{"title", 5}}}}}, operator_write_bad});
  t.push_back({"GET", "/jobs", nullptr, operator_ok200, "/jobs?limit=0", std::nullopt, operator_bad});
  t.push_back({"GET", "/summary", nullptr, operator_ok200});
  t.push_back({"GET", "/stats/minutes", nullptr, operator_ok200, "/stats/minutes?since=yesterday", std::nullopt, operator_bad});
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
  t.push_back({"GET", "/priority?limit=50&offset=0", nullptr, operator_ok200, "/priority?limit=0", std::nullopt, operator_bad});
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
  // clang-format on
  return t;
}
#pragma GCC diagnostic pop

struct reply {
  int status = 0;
  std::string body;
};

// GET replies are read through a handler so that the live stream (which never ends) gives
// its status and is then left.
inline reply send(int port, const std::string& method, const std::string& path, const json& body, const httplib::Headers& h) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  std::string text = body.is_null() ? "" : body.dump();
  if (method == "GET") {
    reply out;
    c.Get(
        path.c_str(), h,
        [&](const httplib::Response& r) {
          out.status = r.status;
          return r.get_header_value("Content-Type").rfind("text/event-stream", 0) != 0;
        },
        [&](const char* data, size_t n) { return out.body.append(data, n), true; });
    return out.status ? out : reply{-1, ""};
  }
  httplib::Result r = method == "POST"  ? c.Post(path.c_str(), h, text, "application/json")
                      : method == "PUT" ? c.Put(path.c_str(), h, text, "application/json")
                                        : c.Delete(path.c_str(), h, text, "application/json");
  if (!r) return {-1, ""};
  return {r->status, r->body};
}

// {J} and {OWN} in a row's path replaced.
inline std::string expand(std::string path, const std::string& job, const std::string& own) {
  for (auto [key, value] : {std::pair<std::string, std::string>{"{J}", job}, {"{OWN}", own}})
    for (size_t at; (at = path.find(key)) != std::string::npos;) path.replace(at, key.size(), value);
  return path;
}

}  // namespace baton::test::access_table
