// Secrets never leave where they belong: after a small campaign that uses every kind of
// credential (the admin's, the pilot's, the scrape token, a named operator's, workers', a
// dashboard session and its CSRF token, and real tokens sent where they are refused), none of
// them appears in batond's own output, in any file of its data dir (the event log's RocksDB
// files, the SQL view, the anchors, the snapshots), or in an audit export.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/batond_process.hpp"

using namespace baton::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string pilot_token = "pilot-secret-5f0c2a9e71d34b86a0e1";
const std::string metrics_token = "scrape-secret-c81d3e2f9a4b47d0b6c5";
const std::string salad_key = "salad-secret-7a1e04b9c3d2f5e68a90";

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// "<name>.<secret>" -> "<secret>": the name part is no secret (it is in the log by design).
std::string secret_part(const std::string& token) {
  auto dot = token.find('.');
  return dot == std::string::npos ? token : token.substr(dot + 1);
}

}  // namespace

TEST(Secrets, NoCredentialAppearsInTheLogTheViewsTheExportOrBatondsOutput) {
  temp_dir dir;
  // Salad configured (its API unreachable: nothing here needs it), so the pilot token registers
  // a Salad worker.
  batond_process d{
      dir,
      "salad: {organization: o, project: p, container_group: g, api_base_url: 'http://127.0.0.1:9', "
      "interval_seconds: 3600}\n",
      {"BATON_PILOT_TOKEN=" + pilot_token, "BATON_METRICS_TOKEN=" + metrics_token, "BATON_SALAD_API_KEY=" + salad_key}};
  ASSERT_GT(d.port(), 0) << d.err();
  auto admin = d.client();
  std::vector<std::string> secrets = {test_token, pilot_token, metrics_token, salad_key};

  auto post = [&](httplib::Client& c, const std::string& path, const json& body, httplib::Headers h = {}) {
    auto r = c.Post(path.c_str(), h, body.dump(), "application/json");
    return r ? std::make_pair(r->status, json::parse(r->body, nullptr, false)) : std::make_pair(0, json());
  };
  auto [op_status, op] = post(*admin, "/operators", {{"name", "alice"}, {"role", "user"}, {"accounts", {"root"}}});
  ASSERT_EQ(op_status, 200) << op;
  const std::string alice = op["token"];
  secrets.push_back(secret_part(alice));

  httplib::Client anon("127.0.0.1", d.port());
  std::vector<std::pair<std::string, std::string>> workers;  // id, token
  for (auto& reg_token : {std::string(test_token), pilot_token}) {
    auto [st, w] = post(anon, "/workers/register",
                        {{"platform", reg_token == pilot_token ? "salad" : "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}},
                        {{"X-API-Token", reg_token}});
    ASSERT_EQ(st, 200) << w;
    workers.emplace_back(w["worker_id"], w["worker_token"]);
    secrets.push_back(secret_part(w["worker_token"]));
  }
  auto [job_status, job] = post(anon, "/jobs", {{"title", "md"}, {"input_bundle_path", "/b"}}, {{"X-API-Token", alice}});
  ASSERT_EQ(job_status, 200) << job;
  auto as_worker = [&](size_t i) { return httplib::Headers{{"X-Worker-Token", workers[i].second}}; };
  EXPECT_EQ(post(anon, "/workers/" + workers[0].first + "/heartbeat", json::object(), as_worker(0)).first, 204);
  EXPECT_EQ(post(anon, "/jobs/request?worker_id=" + workers[0].first, json::object(), as_worker(0)).first, 200);
  // Real tokens where they are refused: another worker's, a worker's on an operator route,
  // the scrape token on an API route, a wrong secret with a real name.
  EXPECT_EQ(post(anon, "/workers/" + workers[0].first + "/heartbeat", json::object(), as_worker(1)).first, 403);
  EXPECT_EQ(post(anon, "/jobs", {{"title", "x"}, {"input_bundle_path", "/b"}}, as_worker(0)).first, 403);
  EXPECT_EQ(anon.Get("/jobs", {{"X-API-Token", metrics_token}})->status, 403);
  EXPECT_EQ(anon.Get("/jobs", {{"X-API-Token", "alice.0000" + secret_part(alice).substr(4)}})->status, 401);
  EXPECT_EQ(anon.Get("/metrics", {{"Authorization", "Bearer " + metrics_token}})->status, 200);
  // A dashboard session.
  auto login = anon.Post("/ui/login", json{{"token", alice}}.dump(), "application/json");
  ASSERT_TRUE(login && login->status == 200) << (login ? login->body : "");
  std::string cookie = login->get_header_value("Set-Cookie");
  cookie = cookie.substr(0, cookie.find(';'));
  secrets.push_back(cookie.substr(cookie.find('=') + 1));
  secrets.push_back(json::parse(login->body).value("csrf_token", ""));
  ASSERT_FALSE(secrets.back().empty()) << login->body;
  EXPECT_EQ(anon.Get("/jobs", {{"Cookie", cookie}})->status, 200);
  // The audit export.
  auto exported = admin->Get("/audit/export");
  ASSERT_TRUE(exported && exported->status == 200);
  ASSERT_EQ(d.stop(), 0) << d.err();

  // Every event decoded, as `batond --dump` prints it (the table files on disk are compressed:
  // a byte scan of them alone could miss a secret).
  auto dump = batond_tool(dir, {"--dump"}, {"BATON_SALAD_API_KEY=" + salad_key});
  ASSERT_EQ(dump.code, 0) << dump.err;
  std::vector<std::pair<std::string, std::string>> places = {
      {"batond's stderr", d.err()}, {"the audit export", exported->body}, {"batond --dump", dump.out}};
  // The scan reads what it should: the non-secret halves are there.
  EXPECT_NE(dump.out.find("operator:alice"), std::string::npos);
  EXPECT_NE(dump.out.find(workers[1].first), std::string::npos);
  EXPECT_NE(exported->body.find(workers[0].first), std::string::npos);
  size_t files = 0;
  for (auto& e : fs::recursive_directory_iterator(dir / "data")) {
    if (!e.is_regular_file()) continue;
    const auto name = e.path().filename().string();
    // where a generated token is kept (0600)
    if (name == "api_token" || name == "pilot_token") continue;
    places.emplace_back(e.path().string(), bytes_of(e.path()));
    ++files;
  }
  EXPECT_GT(files, 5u) << "the log's files, the view, the anchors";
  for (const auto& secret : secrets) {
    ASSERT_GE(secret.size(), 16u) << secret;
    for (const auto& [where, text] : places)
      EXPECT_EQ(text.find(secret), std::string::npos) << "a secret (" << secret.substr(0, 6) << "...) is in " << where;
  }
}
