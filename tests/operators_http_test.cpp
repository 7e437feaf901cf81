// Named operators against a real batond: an admin creates users with their own tokens and
// the accounts they may charge; a user sees and changes only their own jobs, cannot charge
// another account or submit for someone else, cannot use admin routes; a forged, unknown or
// revoked token is 401; the token is shown once and only its hash is kept.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/batond_process.hpp"
#include "support/ids.hpp"

using namespace baton;
using nlohmann::json;

namespace {

const char* config = R"(accounts:
  chem: {shares: 50, users: {ann: 1}}
  phys: {shares: 50, users: {bob: 1}}
)";

struct reply {
  int status = 0;
  json body;
};

struct fixture {
  test::temp_dir dir;
  test::batond_process d{dir, config};

  reply call(const std::string& token, const std::string& method, const std::string& path, const json& body = nullptr) {
    httplib::Client c("127.0.0.1", d.port());
    httplib::Headers h;
    if (!token.empty()) h.emplace("X-API-Token", token);
    httplib::Result r = method == "GET"      ? c.Get(path.c_str(), h)
                        : method == "DELETE" ? c.Delete(path.c_str(), h)
                        : method == "PUT"    ? c.Put(path.c_str(), h, body.dump(), "application/json")
                                             : c.Post(path.c_str(), h, body.is_null() ? "" : body.dump(), "application/json");
    if (!r) return {};
    return {r->status, r->body.empty() ? json(nullptr) : json::parse(r->body, nullptr, false)};
  }
  std::string create_operator(const std::string& name, const std::string& role, json accounts) {
    auto r = call(test::test_token, "POST", "/operators", {{"name", name}, {"role", role}, {"accounts", accounts}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body.value("name", ""), name);
    return r.body.value("token", "");
  }
};

}  // namespace

TEST(operators_http, UsersSeeAndChangeOnlyTheirOwnJobs) {
  fixture f;
  auto ann = f.create_operator("ann", "user", {"chem"});
  auto bob = f.create_operator("bob", "user", json::array());
  auto carol = f.create_operator("carol", "admin", json::array());
  ASSERT_EQ(ann.rfind("ann.", 0), 0u) << "the token names its operator";

  auto made = f.call(ann, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}});
  ASSERT_EQ(made.status, 200) << made.body.dump();
  std::string id = made.body["id"];
  EXPECT_EQ(made.body["user"], "ann");
  EXPECT_EQ(made.body["account"], "chem");

  for (auto [method, path] : std::vector<std::pair<std::string, std::string>>{{"GET", "/jobs/" + id},
                                                                              {"GET", "/jobs/" + id + "/history"},
                                                                              {"GET", "/jobs/" + id + "/priority"},
                                                                              {"POST", "/jobs/" + id + "/hold"},
                                                                              {"POST", "/jobs/" + id + "/release"},
                                                                              {"DELETE", "/jobs/" + id}}) {
    EXPECT_EQ(f.call(bob, method, path).status, 404) << method << " " << path << ": another user's job";
    EXPECT_EQ(f.call(ann, method, path).status / 100, 2) << method << " " << path << ": her own";
  }
  EXPECT_EQ(f.call(carol, "GET", "/jobs/" + id).status, 200) << "an admin sees every job";
  EXPECT_EQ(f.call(bob, "GET", "/jobs").body.size(), 0u);
  EXPECT_EQ(f.call(carol, "GET", "/jobs").body.size(), 1u);

  auto charge = f.call(ann, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}, {"account", "phys"}});
  EXPECT_EQ(charge.status, 403);
  EXPECT_EQ(charge.body.value("field", ""), "account");
  auto for_bob = f.call(ann, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}, {"user", "bob"}});
  EXPECT_EQ(for_bob.status, 403);
  EXPECT_EQ(for_bob.body.value("field", ""), "user");
  EXPECT_EQ(f.call(bob, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}}).body["account"], "phys")
      << "no accounts given: those whose users list bob";

  // Admin routes, checked before the body is read.
  for (auto [method, path] : std::vector<std::pair<std::string, std::string>>{{"POST", "/operators"},
                                                                              {"GET", "/operators"},
                                                                              {"DELETE", "/operators/bob"},
                                                                              {"POST", "/priority/recalculate"},
                                                                              {"DELETE", "/jobs?status=completed"},
                                                                              {"PUT", "/config/slurm-clusters/enabled"},
                                                                              {"POST", "/workers/register"},
                                                                              {"GET", "/audit/export"},
                                                                              {"GET", "/audit/export?from=bad"},
                                                                              {"GET", "/metrics"}}) {
    auto r = f.call(ann, method, path, json::object());
    EXPECT_EQ(r.status, 403) << method << " " << path << ": " << r.body.dump();
  }
}

TEST(operators_http, APrunedJobStaysItsOwnersAlone) {
  fixture f;
  auto ann = f.create_operator("ann", "user", {"chem"});
  auto bob = f.create_operator("bob", "user", json::array());
  auto carol = f.create_operator("carol", "admin", json::array());
  std::string id = f.call(ann, "POST", "/jobs", {{"title", "t"}, {"input_bundle_path", "/b"}}).body.value("id", "");
  ASSERT_EQ(f.call(ann, "DELETE", "/jobs/" + id).status / 100, 2);
  EXPECT_EQ(f.call(ann, "DELETE", "/jobs?older_than_minutes=0").status, 403) << "pruning is an admin's";
  ASSERT_EQ(f.call(carol, "DELETE", "/jobs?older_than_minutes=0").body.value("deleted", 0), 1);

  for (auto [method, path] : std::vector<std::pair<std::string, std::string>>{{"GET", "/jobs/" + id},
                                                                              {"GET", "/jobs/" + id + "/history"},
                                                                              {"GET", "/jobs/" + id + "/priority"},
                                                                              {"POST", "/jobs/" + id + "/hold"},
                                                                              {"POST", "/jobs/" + id + "/release"},
                                                                              {"DELETE", "/jobs/" + id},
                                                                              {"POST", "/jobs/" + id + "/requeue"}}) {
    EXPECT_EQ(f.call(bob, method, path).status, 404) << method << " " << path << ": another user's pruned job";
    auto mine = f.call(ann, method, path);
    if (method == "GET" && path.find("/priority") == std::string::npos) {
      EXPECT_EQ(mine.status, 200) << method << " " << path << ": her own, read from the log";
    } else {
      EXPECT_EQ(mine.status, 409) << method << " " << path << ": nothing more happens to a pruned job";
      EXPECT_EQ(mine.body.value("error", ""), "job_pruned") << method << " " << path;
    }
  }
  EXPECT_EQ(f.call(ann, "GET", "/jobs/" + id).body.value("pruned", false), true);
  EXPECT_EQ(f.call(carol, "GET", "/jobs/" + id).status, 200) << "an admin sees every job";
  EXPECT_EQ(f.call(bob, "GET", "/jobs?include_pruned=true").body.size(), 0u);
  EXPECT_EQ(f.call(ann, "GET", "/jobs?include_pruned=true").body.size(), 1u);
  EXPECT_EQ(f.call(ann, "GET", "/jobs").body.size(), 0u);
}

TEST(operators_http, ForgedUnknownAndRevokedTokensAre401) {
  fixture f;
  auto ann = f.create_operator("ann", "user", {"chem"});
  EXPECT_EQ(f.call(ann, "GET", "/jobs").status, 200);
  EXPECT_EQ(f.call("ann.0123456789abcdef", "GET", "/jobs").status, 401) << "a forged secret";
  EXPECT_EQ(f.call("nobody." + ann.substr(4), "GET", "/jobs").status, 401) << "ann's secret under another name";
  EXPECT_EQ(f.call("", "GET", "/jobs").status, 401);
  auto list = f.call(test::test_token, "GET", "/operators");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.body.dump().find(ann.substr(4)), std::string::npos) << "the token is never shown again";
  EXPECT_FALSE(list.body[0].contains("token_sha256"));
  EXPECT_EQ(f.call(test::test_token, "DELETE", "/operators/ann").status, 204);
  EXPECT_EQ(f.call(ann, "GET", "/jobs").status, 401) << "revoked";
  EXPECT_EQ(f.call(test::test_token, "DELETE", "/operators/ann").status, 204) << "revoking twice changes nothing";
  EXPECT_EQ(f.call(test::test_token, "GET", "/operators").body[0]["revoked"], true);
  // Revocation survives a restart: it is an event.
  ASSERT_EQ(f.d.stop(), 0);
  f.d.start();
  EXPECT_EQ(f.call(ann, "GET", "/jobs").status, 401);
  auto again = f.create_operator("ann", "user", {"chem"});
  EXPECT_EQ(f.call(again, "GET", "/jobs").status, 200) << "a revoked name may be given a new token";
  EXPECT_EQ(f.call(ann, "GET", "/jobs").status, 401) << "the old one stays dead";
}

TEST(operators_http, CreationIsValidated) {
  fixture f;
  f.create_operator("ann", "user", {"chem"});
  auto dup = f.call(test::test_token, "POST", "/operators", {{"name", "ann"}});
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(f.call(test::test_token, "POST", "/operators", {{"name", "admin"}}).body.value("field", ""), "name");
  EXPECT_EQ(f.call(test::test_token, "POST", "/operators", {{"name", "a.b"}}).body.value("field", ""), "name");
  EXPECT_EQ(f.call(test::test_token, "POST", "/operators", {{"name", "x"}, {"role", "root"}}).body.value("field", ""), "role");
  auto acct = f.call(test::test_token, "POST", "/operators", {{"name", "y"}, {"accounts", {"nope"}}});
  EXPECT_EQ(acct.status, 422);
  EXPECT_EQ(acct.body.value("field", ""), "accounts");
}

// Rotation without downtime: the holder (or an admin) gets a new token, the old one keeps
// working until its deadline (grace_seconds), each rotation is an event, and the rule holds
// across a restart because it is derived from the log.
TEST(operators_http, TokensRotateWithTheOldOneAcceptedUntilItsDeadline) {
  fixture f;
  auto ann = f.create_operator("ann", "user", {"chem"});
  auto bob = f.create_operator("bob", "user", json::array());

  // Who may: the operator themself or an admin; nobody else, and a body is not even read
  // before that is settled (a bad body from a stranger is 403, not 422).
  EXPECT_EQ(f.call("", "POST", "/operators/ann/token").status, 401);
  EXPECT_EQ(f.call("ann.0123456789abcdef0123456789abcdef", "POST", "/operators/ann/token").status, 401);
  auto stranger = f.call(bob, "POST", "/operators/ann/token", {{"grace_seconds", -5}});
  EXPECT_EQ(stranger.status, 403) << stranger.body.dump();
  EXPECT_EQ(stranger.body.value("error", ""), "other_operator");
  auto bad_grace = f.call(ann, "POST", "/operators/ann/token", {{"grace_seconds", 31 * 24 * 3600}});
  EXPECT_EQ(bad_grace.status, 422);
  EXPECT_EQ(bad_grace.body.value("field", ""), "grace_seconds");
  EXPECT_EQ(f.call(test::test_token, "POST", "/operators/nobody/token").status, 404);

  // Ann rotates her own token with an hour's grace: both work.
  auto rotated = f.call(ann, "POST", "/operators/ann/token", {{"grace_seconds", 3600}});
  ASSERT_EQ(rotated.status, 200) << rotated.body.dump();
  const std::string ann2 = rotated.body.value("token", "");
  ASSERT_EQ(ann2.rfind("ann.", 0), 0u);
  EXPECT_NE(ann2, ann);
  EXPECT_TRUE(rotated.body["previous_token_valid_until"].is_string());
  EXPECT_EQ(f.call(ann2, "GET", "/jobs").status, 200);
  EXPECT_EQ(f.call(ann, "GET", "/jobs").status, 200) << "the old token works until its deadline";

  // An admin rotates it again with no grace: the one before is refused at once, and so is the
  // first (it was replaced twice); the newest works.
  auto forced = f.call(test::test_token, "POST", "/operators/ann/token", {{"grace_seconds", 0}});
  ASSERT_EQ(forced.status, 200) << forced.body.dump();
  const std::string ann3 = forced.body.value("token", "");
  EXPECT_EQ(f.call(ann2, "GET", "/jobs").status, 401);
  EXPECT_EQ(f.call(ann, "GET", "/jobs").status, 401);
  EXPECT_EQ(f.call(ann3, "GET", "/jobs").status, 200);

  // Bob rotates with the default grace (an hour); after a restart both of his still work.
  auto bob_rotated = f.call(bob, "POST", "/operators/bob/token");
  ASSERT_EQ(bob_rotated.status, 200) << bob_rotated.body.dump();
  const std::string bob2 = bob_rotated.body.value("token", "");
  ASSERT_EQ(f.d.stop(), 0);
  f.d.start();
  ASSERT_GT(f.d.port(), 0) << f.d.err();
  EXPECT_EQ(f.call(bob, "GET", "/jobs").status, 200);
  EXPECT_EQ(f.call(bob2, "GET", "/jobs").status, 200);
  EXPECT_EQ(f.call(ann3, "GET", "/jobs").status, 200);
  EXPECT_EQ(f.call(ann2, "GET", "/jobs").status, 401);

  // The list says when; the log has one event per rotation and no token in it.
  auto list = f.call(test::test_token, "GET", "/operators");
  ASSERT_EQ(list.status, 200);
  for (const auto& row : list.body) EXPECT_TRUE(row["token_rotated_at"].is_string()) << row.dump();
  httplib::Client c("127.0.0.1", f.d.port());
  auto raw = c.Get("/audit/export?type=operator.token_rotated", {{"X-API-Token", test::test_token}});
  ASSERT_TRUE(raw);
  size_t events = 0;
  for (size_t at = 0; (at = raw->body.find("\"stream\":\"operator/", at)) != std::string::npos; ++at) ++events;
  EXPECT_EQ(events, 3u) << raw->body;
  for (const auto& t : {ann, ann2, ann3, bob, bob2})
    EXPECT_EQ(raw->body.find(t.substr(t.find('.') + 1)), std::string::npos) << "a token secret is in the log";

  // A revoked operator's token rotation is refused (their token no longer works at all).
  ASSERT_EQ(f.call(test::test_token, "DELETE", "/operators/bob").status / 100, 2);
  EXPECT_EQ(f.call(bob2, "POST", "/operators/bob/token").status, 401);
  EXPECT_EQ(f.call(test::test_token, "POST", "/operators/bob/token").status, 409);
}
