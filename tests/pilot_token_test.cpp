// The pilot token rotates without a restart, against a real batond: an admin asks for a new
// one (POST /pilot-token, `baton pilot-token rotate`), batond writes it where pilots read it,
// the old one keeps registering workers until its grace ends, each rotation is an event with
// no secret in it, and a restart keeps all of that. A rotation a stop interrupted is settled
// at the next start; a token from BATON_PILOT_TOKEN is the operator's and is not rotated.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "support/batond_process.hpp"

using namespace baton;
using nlohmann::json;

namespace {

struct reply {
  int status = 0;
  json body;
};

reply call(int port, const std::string& token, const std::string& method, const std::string& path, const json& body = nullptr) {
  httplib::Client c("127.0.0.1", port);
  httplib::Headers h;
  if (!token.empty()) h.emplace("X-API-Token", token);
  auto r =
      method == "GET" ? c.Get(path.c_str(), h) : c.Post(path.c_str(), h, body.is_null() ? "" : body.dump(), "application/json");
  if (!r) return {};
  return {r->status, r->body.empty() ? json(nullptr) : json::parse(r->body, nullptr, false)};
}

// Whether batond takes token for the pilot token. It registers Salad workers only (Salad is not
// configured here), so an HPC registration with it is 403 pilot_token_scope; anything else is 401.
bool recognised(int port, const std::string& token) {
  auto r = call(port, token, "POST", "/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}});
  EXPECT_TRUE(r.status == 401 || (r.status == 403 && r.body.value("error", "") == "pilot_token_scope")) << r.body.dump();
  return r.status == 403;
}

std::string first_line(const std::filesystem::path& p) {
  std::string line;
  std::getline(std::ifstream(p), line);
  return line;
}

}  // namespace

TEST(pilot_token, RotatesWithTheOldOneAcceptedUntilItsDeadline) {
  test::temp_dir dir;
  test::batond_process d{dir, "", {"BATON_PILOT_TOKEN="}};
  ASSERT_GT(d.port(), 0) << d.err();
  const auto file = dir / "data/pilot_token";
  const std::string p0 = first_line(file);
  ASSERT_GE(p0.size(), 16u);
  EXPECT_TRUE(recognised(d.port(), p0));

  // Only an admin rotates it: not a user, not the pilot token itself, not a worker.
  auto made = call(d.port(), test::test_token, "POST", "/operators", {{"name", "bob"}, {"role", "user"}});
  ASSERT_EQ(made.status, 200) << made.body.dump();
  const std::string bob = made.body.value("token", "");
  EXPECT_EQ(call(d.port(), bob, "POST", "/pilot-token").status, 403);
  EXPECT_EQ(call(d.port(), p0, "POST", "/pilot-token").status, 403);
  EXPECT_EQ(call(d.port(), "", "POST", "/pilot-token").status, 401);
  EXPECT_EQ(call(d.port(), test::test_token, "POST", "/pilot-token", {{"grace_seconds", -1}}).status, 422);
  EXPECT_EQ(first_line(file), p0) << "a refused rotation changes nothing";
  EXPECT_TRUE(recognised(d.port(), p0));

  // An hour's grace: both register workers; the file pilots read holds the new one.
  auto first = call(d.port(), test::test_token, "POST", "/pilot-token", {{"grace_seconds", 3600}});
  ASSERT_EQ(first.status, 200) << first.body.dump();
  const std::string p1 = first.body.value("token", "");
  ASSERT_GE(p1.size(), 16u);
  EXPECT_NE(p1, p0);
  EXPECT_TRUE(first.body["previous_token_valid_until"].is_string());
  EXPECT_EQ(first_line(file), p1);
  EXPECT_FALSE(std::filesystem::exists(dir / "data/pilot_token.next"));
  EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_TRUE(recognised(d.port(), p1));
  EXPECT_TRUE(recognised(d.port(), p0)) << "the old one works until its deadline";

  // No grace: the one before is refused at once, and so is the first (replaced twice).
  auto second = call(d.port(), test::test_token, "POST", "/pilot-token", {{"grace_seconds", 0}});
  ASSERT_EQ(second.status, 200) << second.body.dump();
  const std::string p2 = second.body.value("token", "");
  EXPECT_TRUE(recognised(d.port(), p2));
  EXPECT_FALSE(recognised(d.port(), p1));
  EXPECT_FALSE(recognised(d.port(), p0));

  // A restart keeps it: the log, not the process, says which token is in force.
  ASSERT_EQ(d.stop(), 0);
  d.start();
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_TRUE(recognised(d.port(), p2));
  EXPECT_FALSE(recognised(d.port(), p1));
  EXPECT_EQ(first_line(file), p2);

  // One event per rotation, and no token in the log.
  httplib::Client c("127.0.0.1", d.port());
  auto raw = c.Get("/audit/export?type=pilot.token_rotated", {{"X-API-Token", test::test_token}});
  ASSERT_TRUE(raw);
  size_t events = 0;
  for (size_t at = 0; (at = raw->body.find("\"stream\":\"pilot\"", at)) != std::string::npos; ++at) ++events;
  EXPECT_EQ(events, 2u) << raw->body;
  for (const auto& t : {p0, p1, p2}) EXPECT_EQ(raw->body.find(t), std::string::npos) << "a pilot token is in the log";
}

// The two states a stop can leave a rotation in: written aside but never recorded (dropped at
// the next start), and recorded but not yet put in place (put in place at the next start).
TEST(pilot_token, ARotationAStopInterruptedIsSettledAtTheNextStart) {
  test::temp_dir dir;
  test::batond_process d{dir, "", {"BATON_PILOT_TOKEN="}};
  ASSERT_GT(d.port(), 0) << d.err();
  const auto file = dir / "data/pilot_token", next = dir / "data/pilot_token.next";
  const std::string p0 = first_line(file);
  auto rotated = call(d.port(), test::test_token, "POST", "/pilot-token", {{"grace_seconds", 0}});
  ASSERT_EQ(rotated.status, 200) << rotated.body.dump();
  const std::string p1 = rotated.body.value("token", "");
  ASSERT_EQ(d.stop(), 0);

  // Recorded, not in place: the old token back in the file, the new one aside.
  std::ofstream(file) << p0 << "\n";
  std::ofstream(next) << p1 << "\n";
  d.start();
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_EQ(first_line(file), p1);
  EXPECT_FALSE(std::filesystem::exists(next));
  EXPECT_TRUE(recognised(d.port(), p1));
  EXPECT_FALSE(recognised(d.port(), p0));
  ASSERT_EQ(d.stop(), 0);

  // Aside, never recorded: dropped; the token in force stays.
  const std::string orphan = "orphan-token-0123456789abcdef";
  std::ofstream(next) << orphan << "\n";
  d.start();
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_FALSE(std::filesystem::exists(next));
  EXPECT_EQ(first_line(file), p1);
  EXPECT_FALSE(recognised(d.port(), orphan));
  EXPECT_TRUE(recognised(d.port(), p1));
}

// `baton pilot-token rotate`: the new token printed once, the same one batond keeps in
// <data_dir>/pilot_token, and a user is refused. No copy of it is left for batch scripts: Slurm
// pilots register with one-time credentials of their own.
TEST(pilot_token, TheCliRotatesItAndItsFileFollows) {
  test::temp_dir dir;
  std::filesystem::create_directories(dir / "data");
  std::ofstream(dir / "data/pilot_credential") << "left by an earlier version\n";
  test::batond_process d{dir,
                         "provisioning: {interval_seconds: 3600}\n"
                         "clusters:\n  - {name: lab, partition: no-such-partition, worker_images: {default: {}}}\n",
                         {"BATON_PILOT_TOKEN="}};
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_FALSE(std::filesystem::exists(dir / "data/pilot_credential")) << "the old copy for batch scripts is removed";
  const auto file = dir / "data/pilot_token";
  const std::string p0 = first_line(file);
  auto baton = [&](const std::string& token, std::vector<std::string> args) {
    args.insert(args.begin(), BATON_CLI_PATH);
    test::child_process p(
        args, dir / ("cli-" + std::to_string(args.size()) + token.substr(0, 4)),
        {"BATON_URL=http://127.0.0.1:" + std::to_string(d.port()), "BATON_API_TOKEN=" + token, "BATON_CONFIG=/dev/null"});
    const int code = test::exit_code(p.wait());
    return std::make_pair(code, p.out());
  };
  auto [code, out] = baton(test::test_token, {"--json", "pilot-token", "rotate", "--grace-seconds", "0"});
  ASSERT_EQ(code, 0) << out;
  const std::string p1 = json::parse(out).value("token", "");
  ASSERT_GE(p1.size(), 16u) << out;
  EXPECT_EQ(first_line(file), p1) << "the file holds the new token";
  EXPECT_TRUE(recognised(d.port(), p1));
  EXPECT_FALSE(recognised(d.port(), p0));

  auto made = call(d.port(), test::test_token, "POST", "/operators", {{"name", "eve"}, {"role", "user"}});
  ASSERT_EQ(made.status, 200) << made.body.dump();
  auto refused = baton(made.body.value("token", ""), {"pilot-token", "rotate"});
  EXPECT_NE(refused.first, 0);
  EXPECT_EQ(first_line(file), p1);
}

TEST(pilot_token, ATokenFromTheEnvironmentIsNotRotatedByBatond) {
  test::temp_dir dir;
  const std::string env_token = "pilot-from-env-0123456789abcdef";
  test::batond_process d{dir, "", {"BATON_PILOT_TOKEN=" + env_token}};
  ASSERT_GT(d.port(), 0) << d.err();
  auto r = call(d.port(), test::test_token, "POST", "/pilot-token");
  EXPECT_EQ(r.status, 409) << r.body.dump();
  EXPECT_EQ(r.body.value("error", ""), "pilot_token_from_environment");
  EXPECT_TRUE(recognised(d.port(), env_token));
  EXPECT_FALSE(std::filesystem::exists(dir / "data/pilot_token.next"));
}
