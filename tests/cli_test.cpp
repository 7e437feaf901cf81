// The baton CLI against a real batond on loopback: each command's output and exit code,
// including bad input (unknown job, bad flag, unreachable daemon).
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include <sstream>

#include <filesystem>
#include <fstream>

#include "support/batond_process.hpp"
#include "support/ids.hpp"

using namespace baton::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct run_result {
  int code = -1;
  std::string out, err;
};

class cli : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GT(d.port(), 0) << d.err(); }

  run_result baton(std::vector<std::string> args, std::string url = "") {
    if (url.empty()) url = "http://127.0.0.1:" + std::to_string(d.port());
    args.insert(args.begin(), BATON_CLI_PATH);
    child_process p(args, dir / ("cli-" + std::to_string(++runs)),
                    {"BATON_URL=" + url, "BATON_API_TOKEN=" + std::string(test_token), "BATON_CONFIG=/dev/null", "USER=carol"});
    return {exit_code(p.wait()), p.out(), p.err()};
  }
  std::string bundle(const std::string& name) {
    fs::create_directories(dir / name);
    std::ofstream(dir / (name + "/run.sh")) << "echo hi\n";
    return dir / name;
  }

  temp_dir dir;
  // One configured partition that never submits (hourly cycle, no such partition): enough
  // for the clusters commands.
  batond_process d{dir,
                   "provisioning: {interval_seconds: 3600}\n"
                   "clusters:\n  - {name: lab, partition: no-such-partition, worker_images: {default: {}}}\n"};
  int runs = 0;
};

}  // namespace

TEST_F(cli, SubmitValidatesFirstThenCreatesTheJob) {
  auto b = bundle("md1");
  auto r = baton({"submit", "--shared-path", b, "--command", "sh run.sh", "--checkpoint", "*.chk", "--progress-file",
                  "progress.txt", "--title", "alanine, run 1", "--comment", "first"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("submitted ", 0), 0u) << r.out;
  auto spec = json::parse(slurp(b + "/baton-job.json"));
  EXPECT_EQ(spec["command"], "sh run.sh");
  EXPECT_EQ(spec["checkpoint_globs"], json::array({"*.chk"}));
  EXPECT_EQ(spec["progress_file"], "progress.txt");

  EXPECT_EQ(baton({"submit", "--shared-path", b, "--id", "not-a-uuid"}).code, 2) << "ids are UUIDs: refused before sending";
  auto j = baton({"--json", "submit", "--shared-path", b, "--id", uid("fixed-id-1")});  // the spec file is there now
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out)["id"], uid("fixed-id-1"));
  EXPECT_EQ(json::parse(j.out)["input_bundle_path"], b);

  EXPECT_EQ(baton({"submit", "--shared-path", dir / "missing"}).code, 2);
  auto no_cmd = baton({"submit", "--shared-path", bundle("md2")});
  EXPECT_EQ(no_cmd.code, 2);
  EXPECT_NE(no_cmd.err.find("--command"), std::string::npos);
  EXPECT_EQ(baton({"submit", "--shared-path", b, "--command", "x", "--checkpoint", "/etc/*"}).code, 2);
  EXPECT_EQ(baton({"submit", "--shared-path", b, "--command", "x", "--checkpoint", "../up/*"}).code, 2);
  auto dup = baton({"submit", "--shared-path", b, "--id", uid("fixed-id-1")});
  EXPECT_EQ(dup.code, 1);
  EXPECT_NE(dup.err.find("409"), std::string::npos) << dup.err;
  EXPECT_EQ(json::parse(baton({"--json", "jobs", "list"}).out).size(), 2u) << "nothing was sent for the refused ones";
}

TEST_F(cli, SubmitWithDependencies) {
  auto b = bundle("dag");
  const std::string P = uid("dag-parent");
  ASSERT_EQ(baton({"submit", "--shared-path", b, "--command", "true", "--id", P}).code, 0);
  auto child = baton({"--json", "submit", "--shared-path", b, "--after-ok", P, "--after-any", P, "--after-not-ok", P});
  ASSERT_EQ(child.code, 0) << child.err;
  auto j = json::parse(child.out);
  EXPECT_EQ(j["depends_on"], json::array({{{"job_id", P}, {"condition", "afterok"}},
                                          {{"job_id", P}, {"condition", "afterany"}},
                                          {{"job_id", P}, {"condition", "afternotok"}}}));
  EXPECT_EQ(j["pending_reason"], "Dependency");
  auto bad = baton({"submit", "--shared-path", b, "--after-ok", "not-a-uuid"});
  EXPECT_EQ(bad.code, 2) << "refused before sending";
  EXPECT_NE(bad.err.find("--after-ok"), std::string::npos) << bad.err;
  auto unknown = baton({"submit", "--shared-path", b, "--after-any", uid("nobody")});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("422"), std::string::npos) << unknown.err;
}

TEST_F(cli, JobsCommands) {
  const std::string A = uid("job-a"), B = uid("job-b");
  auto b = bundle("md");
  ASSERT_EQ(baton({"submit", "--shared-path", b, "--command", "sh run.sh", "--id", A, "--title", "has, comma \"quoted\""}).code,
            0);
  ASSERT_EQ(baton({"submit", "--shared-path", b, "--id", B}).code, 0);

  auto list = baton({"jobs", "list"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(list.out.rfind("ID", 0), 0u);
  EXPECT_NE(list.out.find(A), std::string::npos);
  EXPECT_NE(list.out.find("queued"), std::string::npos);
  EXPECT_EQ(json::parse(baton({"--json", "jobs", "list", "--status", "running"}).out).size(), 0u);

  auto show = baton({"jobs", "show", A});
  EXPECT_EQ(show.code, 0);
  EXPECT_NE(show.out.find("status: queued"), std::string::npos) << show.out;
  auto unknown = baton({"jobs", "show", uid("nope")});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("404"), std::string::npos);
  EXPECT_NE(unknown.err.find("not found"), std::string::npos) << unknown.err;

  auto history = baton({"jobs", "history", A});
  EXPECT_EQ(history.code, 0);
  EXPECT_NE(history.out.find("job.created"), std::string::npos) << history.out;

  EXPECT_EQ(baton({"jobs", "cancel", A}).out, "cancel requested for " + A + "\n");
  auto again = baton({"jobs", "cancel", A});
  EXPECT_EQ(again.code, 1) << "already cancelled";
  auto requeued = baton({"jobs", "requeue", A});
  EXPECT_EQ(requeued.code, 0) << requeued.err;
  EXPECT_EQ(requeued.out.rfind("requeued " + A + " as ", 0), 0u);
  EXPECT_EQ(baton({"jobs", "requeue", B}).code, 1) << "a queued job cannot be requeued";

  auto pruned = baton({"jobs", "prune", "--older-than-days", "1"});
  EXPECT_EQ(pruned.code, 0);
  EXPECT_EQ(pruned.out, "pruned 0 jobs (their history stays in the log)\n");
  EXPECT_EQ(baton({"jobs", "prune", "--status", "running"}).code, 1) << "422: only terminal statuses";
  EXPECT_NE(baton({"jobs", "prune", "--older-than-days", "1", "--older-than-minutes", "0"}).code, 0) << "one retention";
  auto all_ended = baton({"jobs", "prune", "--older-than-minutes", "0"});
  EXPECT_EQ(all_ended.out, "pruned 1 jobs (their history stays in the log)\n") << all_ended.err;  // A, cancelled
  auto shown = baton({"jobs", "show", A});
  EXPECT_EQ(shown.code, 0) << "a pruned job is read back from the log: " << shown.err;
  EXPECT_NE(shown.out.find("cancelled"), std::string::npos) << shown.out;

  auto csv = baton({"jobs", "export-csv", "-o", dir / "jobs.csv"});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out, "wrote 3 jobs to " + dir / "jobs.csv" + "\n");
  auto text = slurp(dir / "jobs.csv");
  EXPECT_EQ(text.rfind("id,title,status,", 0), 0u);
  EXPECT_NE(text.find(A + ",\"has, comma \"\"quoted\"\"\",cancelled,"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
}

TEST_F(cli, WorkersClustersAndMonitor) {
  auto reg = d.client()->Post("/workers/register", R"({"platform":"hpc","gpu_model":"A100","gpu_count":2})", "application/json");
  ASSERT_TRUE(reg && reg->status == 200);
  auto workers = baton({"workers", "list"});
  EXPECT_EQ(workers.code, 0);
  EXPECT_NE(workers.out.find("A100"), std::string::npos);
  EXPECT_NE(workers.out.find("idle"), std::string::npos);
  EXPECT_EQ(json::parse(baton({"--json", "workers", "list", "--state", "gone"}).out).size(), 0u);

  auto clusters = baton({"clusters", "list"});
  EXPECT_EQ(clusters.code, 0);
  EXPECT_EQ(clusters.out.rfind("NAME", 0), 0u);
  EXPECT_NE(clusters.out.find("lab"), std::string::npos) << clusters.out;
  auto unknown = baton({"clusters", "disable", "nosuch", "--reason", "x"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("404"), std::string::npos);
  auto disable = baton({"clusters", "disable", "lab", "--reason", "maintenance"});
  EXPECT_EQ(disable.code, 0) << disable.err;
  auto listed = json::parse(baton({"--json", "clusters", "list"}).out);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["enabled"], false);
  EXPECT_EQ(baton({"clusters", "enable", "lab"}).code, 0);
  EXPECT_EQ(json::parse(baton({"--json", "clusters", "list"}).out)[0]["enabled"], true);

  ASSERT_EQ(baton({"submit", "--shared-path", bundle("m"), "--command", "true"}).code, 0);
  // monitor follows the live stream: it redraws when events come (and says it is live).
  child_process mon({BATON_CLI_PATH, "--json", "monitor", "--interval", "0.1"}, dir / "monitor",
                    {"BATON_URL=http://127.0.0.1:" + std::to_string(d.port()), "BATON_API_TOKEN=" + std::string(test_token),
                     "BATON_CONFIG=/dev/null", "USER=carol"});
  auto line_with = [&](const std::string& needle) {
    for (int i = 0; i < 1000; ++i) {
      std::istringstream lines(mon.out());
      for (std::string l; std::getline(lines, l);)
        if (l.find(needle) != std::string::npos) return json::parse(l);
      if (mon.wait(std::chrono::milliseconds(10)) != -1) break;
    }
    return json(nullptr);
  };
  auto first = line_with(R"("queued":1)");
  ASSERT_TRUE(first.is_object()) << mon.out() << mon.err();
  EXPECT_EQ(first["workers"]["idle"], 1);
  EXPECT_EQ(first["live"], true);
  ASSERT_EQ(baton({"submit", "--shared-path", bundle("m2"), "--command", "true"}).code, 0);
  auto second = line_with(R"("queued":2)");
  EXPECT_TRUE(second.is_object()) << mon.out();
  mon.signal(SIGTERM);
  mon.wait();
  auto human = baton({"monitor", "--iterations", "1"});
  EXPECT_NE(human.out.find("queued 2"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("(live)"), std::string::npos) << human.out;
}

TEST_F(cli, JobsWaitReturnsOnceTheCampaignHasEnded) {
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    auto r = baton({"--json", "submit", "--shared-path", bundle("w" + std::to_string(i)), "--command", "true"});
    ASSERT_EQ(r.code, 0) << r.err;
    ids.push_back(json::parse(r.out)["id"]);
  }
  auto timed_out = baton({"jobs", "wait", "--timeout", "0.5"});
  EXPECT_EQ(timed_out.code, 4);
  EXPECT_NE(timed_out.err.find("2 jobs still active"), std::string::npos) << timed_out.err;
  EXPECT_EQ(timed_out.err.find("jobs ended ["), std::string::npos) << "no progress bar when stderr is not a terminal";
  // On a terminal (script gives it one): the bar.
  child_process tty({"/usr/bin/script", "-qefc", std::string(BATON_CLI_PATH) + " jobs wait --timeout 0.5", "/dev/null"},
                    dir / "tty",
                    {"BATON_URL=http://127.0.0.1:" + std::to_string(d.port()), "BATON_API_TOKEN=" + std::string(test_token),
                     "BATON_CONFIG=/dev/null"});
  EXPECT_EQ(exit_code(tty.wait()), 4);
  EXPECT_NE(tty.out().find("jobs ended [------------------------------] 0 of 2 jobs (0 %)"), std::string::npos) << tty.out();

  child_process w({BATON_CLI_PATH, "--json", "jobs", "wait", "--timeout", "60"}, dir / "wait",
                  {"BATON_URL=http://127.0.0.1:" + std::to_string(d.port()), "BATON_API_TOKEN=" + std::string(test_token),
                   "BATON_CONFIG=/dev/null"});
  // Until it follows the live stream (GET /metrics counts the clients), then the campaign ends.
  bool following = false;
  for (int i = 0; i < 1000 && !following; ++i) {
    auto m = d.client()->Get("/metrics");
    following = m && m->body.find("\nbaton_live_stream_clients 1\n") != std::string::npos;
    if (!following) {
      ASSERT_EQ(w.wait(std::chrono::milliseconds(10)), -1) << "jobs wait ended early: " << w.err();
    }
  }
  ASSERT_TRUE(following);
  for (const auto& id : ids) ASSERT_EQ(baton({"jobs", "cancel", id}).code, 0);
  ASSERT_EQ(exit_code(w.wait()), 0) << w.err();
  auto tally = json::parse(w.out());
  EXPECT_EQ(tally["ended"]["cancelled"], 2) << w.out() << w.err();
  EXPECT_EQ(tally["ended"]["completed"], 0);
}

TEST_F(cli, BadInputGetsClearErrorsAndExitCodes) {
  auto flag = baton({"jobs", "list", "--bogus"});
  EXPECT_EQ(flag.code, 2);
  EXPECT_NE(flag.err.find("--bogus"), std::string::npos);
  EXPECT_EQ(baton({}).code, 2) << "a subcommand is required";
  EXPECT_EQ(baton({"jobs", "list", "--limit", "0"}).code, 2);
  auto down = baton({"jobs", "list"}, "http://127.0.0.1:1");
  EXPECT_EQ(down.code, 3);
  EXPECT_NE(down.err.find("cannot reach batond"), std::string::npos) << down.err;
  auto bad_url = baton({"jobs", "list"}, "ftp://x");
  EXPECT_EQ(bad_url.code, 2);
  auto wrong_token = [&] {
    child_process p(
        {BATON_CLI_PATH, "jobs", "list"}, dir / "wrong",
        {"BATON_URL=http://127.0.0.1:" + std::to_string(d.port()), "BATON_API_TOKEN=wrong", "BATON_CONFIG=/dev/null"});
    return run_result{exit_code(p.wait()), p.out(), p.err()};
  }();
  EXPECT_EQ(wrong_token.code, 1);
  EXPECT_NE(wrong_token.err.find("401"), std::string::npos);
}

// A config file named by --config or BATON_CONFIG that is not there stops the CLI with exit
// code 2 naming it (it once fell back to the built-in defaults: another address, no token);
// the default path absent is fine.
TEST_F(cli, AMissingConfigFileThatWasNamedIsAnErrorNamingIt) {
  const std::string typo = dir / "bton.yaml";
  auto flagged = baton({"--config", typo, "jobs", "list"});
  EXPECT_EQ(flagged.code, 2) << flagged.err;
  EXPECT_NE(flagged.err.find(typo), std::string::npos) << flagged.err;
  EXPECT_NE(flagged.err.find("--config"), std::string::npos) << flagged.err;
  auto from_env = [&](const std::string& config) {
    child_process p({BATON_CLI_PATH, "jobs", "list"}, dir / ("env-" + std::to_string(++runs)),
                    {"BATON_URL=http://127.0.0.1:" + std::to_string(d.port()), "BATON_API_TOKEN=" + std::string(test_token),
                     "BATON_CONFIG=" + config, "HOME=" + (dir / "home")});
    return run_result{exit_code(p.wait()), p.out(), p.err()};
  };
  auto named = from_env(typo);
  EXPECT_EQ(named.code, 2) << named.err;
  EXPECT_NE(named.err.find(typo), std::string::npos) << named.err;
  EXPECT_NE(named.err.find("BATON_CONFIG"), std::string::npos) << named.err;
  auto by_default = from_env("");  // $HOME/.config/baton/config.yaml, not there
  EXPECT_EQ(by_default.code, 0) << by_default.err;
}

// The CLI's words for what batond refuses: a running job is cancelled with --force (the
// flag; batond's message names RelayMD's query parameter), and an unknown partition, QOS or
// account comes with the names batond knows.
TEST_F(cli, CancellingARunningJobAsksForForceAndUnknownNamesComeWithTheKnownOnes) {
  const std::string A = uid("running");
  ASSERT_EQ(baton({"submit", "--shared-path", bundle("run"), "--command", "sh run.sh", "--id", A}).code, 0);
  httplib::Client c("127.0.0.1", d.port());
  const httplib::Headers admin = {{"X-API-Token", test_token}};
  auto reg = c.Post("/workers/register", admin, R"({"platform":"hpc","gpu_model":"A100","gpu_count":1})", "application/json");
  ASSERT_TRUE(reg && reg->status == 200) << (reg ? reg->body : "no answer");
  const auto w = json::parse(reg->body);
  const httplib::Headers as_worker = {{"X-Worker-Token", w["worker_token"].get<std::string>()}};
  auto poll = c.Post(("/jobs/request?worker_id=" + w["worker_id"].get<std::string>()).c_str(), as_worker, "", "application/json");
  ASSERT_TRUE(poll && json::parse(poll->body).value("job_id", "") == A) << (poll ? poll->body : "no answer");
  ASSERT_TRUE(c.Post(("/jobs/" + A + "/start").c_str(), as_worker, "", "application/json"));

  auto refused = baton({"jobs", "cancel", A});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("add --force"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("force=true"), std::string::npos) << refused.err;
  auto forced = baton({"jobs", "cancel", "--force", A});
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(forced.out, "cancel requested for " + A + "\n");

  for (const std::string field : {"partition", "qos", "account"}) {
    // What batond answers: the names it knows, in "known".
    auto api =
        c.Post("/jobs", admin, json{{"title", "t"}, {"input_bundle_path", "/b"}, {field, "nope"}}.dump(), "application/json");
    ASSERT_TRUE(api && api->status == 422) << (api ? api->body : "no answer");
    const auto known = json::parse(api->body)["known"];
    ASSERT_TRUE(known.is_array() && !known.empty()) << api->body;
    std::string listed;
    for (const auto& n : known) listed += (listed.empty() ? "" : ", ") + n.get<std::string>();
    auto r = baton({"submit", "--shared-path", bundle("run"), "--" + field, "nope"});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("unknown " + field + " 'nope'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("known " + field + " names: " + listed), std::string::npos) << r.err;
  }
}

// Something answers on batond's port with shapes this baton does not know (another version,
// another program): each command says so and exits 1; none dies with "terminate called".
TEST_F(cli, RepliesOfAnotherShapeEndWithAMessageNotACrash) {
  httplib::Server other;
  other.Get(".*", [](const httplib::Request&, httplib::Response& res) { res.set_content("[1,2,3]", "application/json"); });
  int port = other.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { other.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  for (std::vector<std::string> args : {std::vector<std::string>{"jobs", "history", uid("x")}, {"operators", "list"}}) {
    auto r = baton(args, url);
    EXPECT_EQ(r.code, 1) << args[0] << "\n" << r.err;
    EXPECT_NE(r.err.find("batond's reply is not what this baton expects"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  }
  other.stop();
  serving.join();
}

TEST_F(cli, PriorityFairshareHoldWhyAndOperators) {
  const std::string A = uid("prio-a");
  auto b = bundle("prio");
  auto submitted = baton({"submit", "--shared-path", b, "--command", "sh run.sh", "--id", A, "--nice", "10", "--gpus", "2",
                          "--time-limit", "3600", "--hold"});
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  auto why = baton({"jobs", "why", A});
  ASSERT_EQ(why.code, 0) << why.err;
  EXPECT_NE(why.out.find("waiting: JobHeld"), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("policy multifactor"), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("fairshare"), std::string::npos) << "the factor table: " << why.out;
  EXPECT_EQ(baton({"jobs", "release", A}).out, "released " + A + "\n");
  auto prio = baton({"priority"});
  ASSERT_EQ(prio.code, 0) << prio.err;
  EXPECT_NE(prio.out.find("FAIRSHARE"), std::string::npos) << prio.out;
  EXPECT_NE(prio.out.find(A), std::string::npos) << prio.out;
  auto prio_json = json::parse(baton({"--json", "priority", A}).out);
  EXPECT_EQ(prio_json["jobs"][0]["nice"], 10);
  EXPECT_EQ(prio_json["jobs"][0]["gpu_count"], 2);
  auto fs = baton({"fairshare"});
  ASSERT_EQ(fs.code, 0) << fs.err;
  EXPECT_NE(fs.out.find("LEVELFS"), std::string::npos) << fs.out;
  EXPECT_NE(fs.out.find("carol"), std::string::npos) << "the job's user is the operator named by $USER: " << fs.out;

  auto added = baton({"operators", "add", "dana", "--role", "user"});
  ASSERT_EQ(added.code, 0) << added.err;
  EXPECT_NE(added.out.find("dana."), std::string::npos) << "the token, once: " << added.out;
  EXPECT_NE(baton({"operators", "list"}).out.find("dana"), std::string::npos);
  EXPECT_EQ(baton({"operators", "revoke", "dana"}).out, "revoked dana\n");
  EXPECT_EQ(json::parse(baton({"--json", "operators", "list"}).out)[0]["revoked"], true);
}

TEST_F(cli, AuditExportWritesAVerifiableFileAndNamesABadField) {
  ASSERT_EQ(baton({"submit", "--shared-path", bundle("audit"), "--command", "true"}).code, 0);
  auto r = baton({"audit", "export", "-o", dir / "audit.jsonl"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("verify-export"), std::string::npos) << r.err;
  // Checked on its own and against the log, beside the running daemon (read-only).
  child_process check({BATON_REPLAY_PATH, "verify-export", dir / "audit.jsonl", "--data-dir", dir / "data"}, dir / "verify");
  EXPECT_EQ(exit_code(check.wait()), 0) << check.out() << check.err();
  EXPECT_NE(check.out().find("every one matches the log"), std::string::npos) << check.out();

  auto csv = baton({"audit", "export", "--format", "csv", "--type", "job.created"});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("seq,", 0), 0u) << csv.out.substr(0, 200);
  EXPECT_NE(csv.out.find("job.created"), std::string::npos);
  EXPECT_EQ(csv.out.find("daemon.started"), std::string::npos) << "filtered by type";

  auto bad = baton({"audit", "export", "--from", "yesterday", "-o", dir / "bad.jsonl"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("field: from"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir / "bad.jsonl")) << "no half file left behind";
}

TEST_F(cli, JobsImportSubmitsACampaignOnceAndNamesBadLines) {
  const auto file = dir / "campaign.jsonl";
  std::ofstream(file) << "# three ligands, two of them alike\n"
                      << R"({"title": "lig-1", "input_bundle_path": "/campaign/lig-1", "nice": 3})"
                      << "\n\n"
                      << R"({"title": "lig-2", "input_bundle_path": "/campaign/lig-2"})"
                      << "\n"
                      << R"({"title": "lig-2", "input_bundle_path": "/campaign/lig-2"})"
                      << "\n";
  auto first = baton({"--json", "jobs", "import", "--shared-path", file});
  ASSERT_EQ(first.code, 0) << first.err;
  auto tally = json::parse(first.out);
  ASSERT_EQ(tally["submitted"].size(), 3u) << first.out;
  EXPECT_NE(tally["submitted"][1], tally["submitted"][2]) << "a repeated line is another job";
  EXPECT_EQ(json::parse(baton({"--json", "jobs", "show", tally["submitted"][0]}).out)["nice"], 3);
  // Again (an interrupted import run a second time): nothing new, everything already there.
  auto again = baton({"jobs", "import", "--shared-path", file});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, "submitted 0, already there 3, refused 0\n");
  EXPECT_EQ(json::parse(baton({"--json", "jobs", "list"}).out).size(), 3u);
  EXPECT_EQ(again.err.find("jobs imported ["), std::string::npos) << "no progress bar when stderr is not a terminal";
  // On a terminal (script gives it one): the bar, ending full.
  child_process tty({"/usr/bin/script", "-qefc", std::string(BATON_CLI_PATH) + " jobs import --shared-path " + file, "/dev/null"},
                    dir / "tty",
                    {"BATON_URL=http://127.0.0.1:" + std::to_string(d.port()), "BATON_API_TOKEN=" + std::string(test_token),
                     "BATON_CONFIG=/dev/null"});
  EXPECT_EQ(exit_code(tty.wait()), 0);
  EXPECT_NE(tty.out().find("jobs imported [##############################] 3 of 3 jobs (100 %)"), std::string::npos) << tty.out();

  // A line that is not a job: nothing is sent, and the line is named.
  const auto broken = dir / "broken.jsonl";
  std::ofstream(broken) << R"({"title": "lig-9", "input_bundle_path": "/campaign/lig-9"})"
                        << "\n"
                        << R"({"title": "lig-10"})"
                        << "\n";
  auto bad = baton({"jobs", "import", "--shared-path", broken});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("line 2: \"input_bundle_path\" (a string) or \"input_bundle\""), std::string::npos) << bad.err;
  EXPECT_EQ(json::parse(baton({"--json", "jobs", "list"}).out).size(), 3u) << "nothing sent";

  // Lines batond refuses (a bad field the shell reads, a name the policy does not know):
  // each reported with its line and field, the others still go in.
  const auto mixed = dir / "mixed.jsonl";
  std::ofstream(mixed) << R"({"title": "lig-11", "input_bundle_path": "/campaign/lig-11", "nice": -4})"
                       << "\n"
                       << R"({"title": "lig-12", "input_bundle_path": "/campaign/lig-12"})"
                       << "\n"
                       << R"({"title": "lig-13", "input_bundle_path": "/campaign/lig-13", "partition": "nope"})"
                       << "\n"
                       << R"({"title": "lig-14", "input_bundle_path": "/campaign/lig-14"})"
                       << "\n";
  auto partly = baton({"jobs", "import", "--shared-path", mixed});
  EXPECT_EQ(partly.code, 1);
  EXPECT_EQ(partly.out, "submitted 2, already there 0, refused 2\n");
  EXPECT_NE(partly.err.find("line 1: batond answered 422: nice"), std::string::npos) << partly.err;
  EXPECT_NE(partly.err.find("line 3: batond answered 422: partition: unknown partition 'nope'"), std::string::npos) << partly.err;
  EXPECT_EQ(json::parse(baton({"--json", "jobs", "list"}).out).size(), 5u);
}

TEST_F(cli, ImportSendsACampaignInAHandfulOfRequests) {
  const auto file = dir / "campaign.jsonl";
  {
    std::ofstream f(file);
    for (int i = 0; i < 2500; ++i)
      f << json{{"title", "lig-" + std::to_string(i)}, {"input_bundle_path", "/c/" + std::to_string(i)}} << "\n";
  }
  auto requests = [&] {  // POST /jobs/batch answered so far, as /metrics counts them
    auto m = d.client()->Get("/metrics");
    size_t n = 0;
    for (size_t at = m->body.find("route=\"POST /jobs/batch\""); at != std::string::npos;
         at = m->body.find("route=\"POST /jobs/batch\"", at + 1)) {
      auto line_end = m->body.find('\n', at);
      auto space = m->body.rfind(' ', line_end);
      if (m->body.compare(m->body.rfind('\n', at) + 1, 25, "baton_http_requests_total") == 0)
        n += std::stoul(m->body.substr(space + 1, line_end - space - 1));
    }
    return n;
  };
  auto r = baton({"jobs", "import", "--shared-path", file});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "submitted 2500, already there 0, refused 0\n");
  EXPECT_EQ(requests(), 1u) << "one batch";
  auto again = baton({"jobs", "import", "--shared-path", file});
  EXPECT_EQ(again.out, "submitted 0, already there 2500, refused 0\n");
  EXPECT_EQ(requests(), 2u) << "a rerun learns every existing id from one answer";
}

TEST_F(cli, JobArraysAreSubmittedListedAndCancelledAsOne) {
  auto b = bundle("sweep");
  auto r = baton({"--json", "submit", "--shared-path", b, "--command", "sh run.sh", "--array", "0-9:3", "--hold"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto made = json::parse(r.out);
  std::string array_id = made["array_id"];
  EXPECT_EQ(made["created"], 4) << "0, 3, 6, 9";
  auto listed = json::parse(baton({"--json", "jobs", "list", "--array", array_id}).out);
  ASSERT_EQ(listed.size(), 4u);
  EXPECT_EQ(listed[3]["array_index"], 9);
  EXPECT_EQ(listed[3]["held"], true);
  EXPECT_EQ(baton({"submit", "--shared-path", b, "--array", "0-3", "--id", uid("x")}).code, 2)
      << "an array's tasks get their own ids";
  auto bad = baton({"submit", "--shared-path", b, "--array", "3-1"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("array"), std::string::npos) << bad.err;

  auto released = baton({"jobs", "release", array_id});
  EXPECT_EQ(released.out, "array " + array_id + ": released 4 tasks\n") << released.err;
  auto cancelled = baton({"jobs", "cancel", array_id});
  EXPECT_EQ(cancelled.out, "array " + array_id + ": cancelled 4 tasks\n") << cancelled.err;
  auto again = baton({"jobs", "cancel", array_id});
  EXPECT_EQ(again.out, "array " + array_id + ": cancelled 0 tasks; left as they were: 4 cancelled\n") << again.err;
}

TEST_F(cli, JobsImportWaitsOutTheRequestBudget) {
  // A daemon that lets an operator send 2 requests at once, refilled one every 5 s: with
  // the budget spent first, the import's batch is answered 429 and must wait Retry-After out.
  temp_dir slow_dir;
  batond_process slow{slow_dir,
                      "limits: {operator_requests_burst: 2, operator_requests_per_second: 0.2}\n",
                      {"BATON_METRICS_TOKEN=scrape-0123456789abcdef"}};
  ASSERT_GT(slow.port(), 0) << slow.err();
  const auto file = dir / "ten.jsonl";
  {
    std::ofstream f(file);
    for (int i = 0; i < 10; ++i)
      f << json{{"title", "lig-" + std::to_string(i)}, {"input_bundle_path", "/c/" + std::to_string(i)}} << "\n";
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(slow.port());
  auto op = slow.client();
  for (int i = 0; i < 3; ++i) op->Get("/jobs");  // the budget spent (the third is refused)
  auto r = baton({"jobs", "import", "--shared-path", file}, url);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "submitted 10, already there 0, refused 0\n");
  auto m = slow.client("scrape-0123456789abcdef")->Get("/metrics");  // the scraper's own budget
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("status=\"429\""), std::string::npos) << "the budget was hit on the way";
}
