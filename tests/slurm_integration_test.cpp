// Provisioning against a real single-node Slurm (slurmctld + slurmd + munge, started by
// scripts/slurm-local.sh): batond renders and submits real sbatch scripts, the batch job
// starts a pilot worker (scripts/shell-worker.sh, curl) that registers with its
// SLURM_JOB_ID, adopts the placeholder and runs the job.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "slurm/cluster_client.hpp"
#include "slurm/sbatch_script.hpp"
#include "support/free_ports.hpp"
#include "support/access_table.hpp"
#include "support/batond_process.hpp"
#include "support/metrics_text.hpp"
#include "support/replay_tool.hpp"
#include "support/sshd_process.hpp"
#include "support/wait_until.hpp"

using namespace baton::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds slurm_deadline{60};  // a real sbatch, a pilot starting and registering

std::string slurm_dir;
std::string slurm_conf;

int sh(const std::string& command) { return std::system(("bash -c '" + command + "'").c_str()); }

class SlurmIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    slurm_dir = "/tmp/baton-slurm-test-" + std::to_string(getpid());
    std::string out = slurm_dir + ".env", err = slurm_dir + ".log";
    // Through files, not pipes: the daemons it starts would hold a pipe open.
    auto ports = baton::test::free_ports(2);
    std::string port_env = ports.size() == 2 ? " SLURM_LOCAL_CTLD_PORT=" + std::to_string(ports[0]) +
                                                   " SLURM_LOCAL_SLURMD_PORT=" + std::to_string(ports[1])
                                             : "";
    std::string cmd = "SLURM_LOCAL_DIR=" + slurm_dir + " SLURM_LOCAL_CPUS=4" + port_env +
                      " bash " BATON_SOURCE_DIR "/scripts/slurm-local.sh start >" + out + " 2>" + err;
    int rc = std::system(cmd.c_str());
    std::string env = slurp(out);
    auto at = env.find("SLURM_CONF=");
    if (rc != 0 || at == std::string::npos) {
      std::fprintf(stderr, "slurm-local.sh start failed (rc %d):\n%s\n", rc, slurp(err).c_str());
      return;
    }
    slurm_conf = env.substr(at + 11);
    while (!slurm_conf.empty() && (slurm_conf.back() == '\n' || slurm_conf.back() == ' ')) slurm_conf.pop_back();
    setenv("SLURM_CONF", slurm_conf.c_str(), 1);
  }
  static void TearDownTestSuite() {
    std::string cmd = "SLURM_LOCAL_DIR=" + slurm_dir + " bash " BATON_SOURCE_DIR "/scripts/slurm-local.sh stop >/dev/null 2>&1";
    (void)std::system(cmd.c_str());
    std::error_code ec;
    fs::remove_all(slurm_dir, ec);
    fs::remove(slurm_dir + ".env", ec);
    fs::remove(slurm_dir + ".log", ec);
  }
  void SetUp() override { ASSERT_FALSE(slurm_conf.empty()) << "the local Slurm did not start"; }

  // Slurm writes each job's output under log_directory (created by batond).
  static std::string config(const temp_dir& dir, const std::string& clusters) {
    // Pilots get ten minutes: jobs without a time limit may start with a minute left. The
    // tests poll every 20 ms for up to a minute: no request budget for the operator.
    return "log_level: info\nprovisioning: {interval_seconds: 1}\nscheduling: {min_useful_seconds: 60}\n"
           "limits: {operator_requests_per_second: 0}\nclusters:\n"
           "  - name: base\n    is_template: true\n    partition: debug\n    wall_time: \"0:10:00\"\n"
           "    log_directory: " +
           (dir / "slurm-logs") +
           "\n"
           "    worker_images: {default: {}}\n"
           "    worker_command: \"BATON_IDLE_POLLS=2 sh " BATON_SOURCE_DIR "/scripts/shell-worker.sh\"\n" +
           clusters;
  }

  static std::string bundle(const temp_dir& dir, const std::string& name) {
    fs::create_directories(dir / name);
    std::ofstream(dir / (name + "/run.sh")) << "echo \"ran in $SLURM_JOB_PARTITION\" > out.txt\n";
    return dir / name;
  }

  static json get(const batond_process& d, const std::string& path) {
    auto r = d.client()->Get(path.c_str());
    if (!r || r->status != 200) return nullptr;
    return json::parse(r->body);
  }

  static std::string create_job(const batond_process& d, const std::string& bundle_path) {
    auto r = d.client()->Post("/jobs", json{{"title", "t"}, {"input_bundle_path", bundle_path}}.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200);
    return r ? json::parse(r->body)["id"].get<std::string>() : "";
  }

  // Waits until the cluster actor has run `cycles` more cycles that asked squeue, counted by
  // batond's own /metrics (a call is counted when it returns, before its cycle reports what
  // it saw), whatever the calls' results.
  static bool await_squeue_cycles(const batond_process& d, int cycles) {
    auto squeue_calls = [&]() -> long long {
      auto m = d.client()->Get("/metrics");
      return m && m->status == 200 ? metric_total(m->body, "baton_slurm_calls_total", "command=\"squeue\"") : -1;
    };
    return wait_for_cycles(squeue_calls, cycles, slurm_deadline);
  }

  // The job once it has this status (or as last seen, after a minute).
  static json wait_for_status(const batond_process& d, const std::string& job_id, const std::string& status) {
    json job;
    wait_until(
        [&] {
          job = get(d, "/jobs/" + job_id);
          return job.is_object() && job["status"] == status;
        },
        slurm_deadline);
    return job;
  }

  static json worker_by_id(const batond_process& d, const std::string& id) {
    auto list = get(d, "/workers?state=idle&state=busy&state=stale&state=gone&state=provisioning");
    if (list.is_array())
      for (const auto& w : list)
        if (w["id"] == id) return w;
    return nullptr;
  }

  static json worker_with_provider_prefix(const batond_process& d, const std::string& prefix, const std::string& states) {
    auto list = get(d, "/workers?" + states);
    if (list.is_array())
      for (const auto& w : list)
        if (w["provider_id"].is_string() && w["provider_id"].get<std::string>().rfind(prefix, 0) == 0) return w;
    return nullptr;
  }
};

}  // namespace

TEST_F(SlurmIntegration, QueuedJobSubmitsAPilotThatAdoptsItsPlaceholderAndRunsTheJob) {
  temp_dir dir;
  // The real worker agent this time (the other tests use the small shell worker).
  batond_process d(dir,
                   config(dir,
                          "  - name: local-debug\n    extends: base\n"
                          "    worker_command: \"BATON_LOG_LEVEL=info BATON_GPU_MODEL=A100 BATON_GPU_COUNT=1 BATON_WORK_DIR=" +
                              (dir / "work") + " " BATON_WORKER_PATH "\"\n"),
                   {"SLURM_CONF=" + slurm_conf});
  ASSERT_GT(d.port(), 0) << d.err();
  auto b1 = bundle(dir, "b1");
  std::ofstream(b1 + "/baton-job.json") << R"({"command": "sh run.sh"})";
  // baton-worker runs a working copy (removed afterwards): report to a place outside it.
  std::ofstream(b1 + "/run.sh") << "echo \"ran in $SLURM_JOB_PARTITION as attempt $BATON_ATTEMPT\" > " << dir / "b1-out.txt"
                                << "\n";
  auto job_id = create_job(d, b1);

  json placeholder;
  ASSERT_TRUE(wait_until(
      [&] {
        placeholder = worker_with_provider_prefix(d, "local-debug:", "state=provisioning");
        return !placeholder.is_null();
      },
      slurm_deadline))
      << d.err();
  EXPECT_EQ(placeholder["status"], "queued");
  std::string placeholder_id = placeholder["id"];
  // The script Slurm keeps (readable by the cluster's admins) carries no token: it names the
  // file (mode 0600, in a 0700 directory of its own) that holds this pilot's one-time
  // registration credential, which the worker removes once read.
  auto slurm_id = placeholder["provider_id"].get<std::string>().substr(std::string("local-debug:").size());
  auto script = baton::slurm::run_here({"scontrol", "write", "batch_script", slurm_id, "-"}, "", std::chrono::seconds(10));
  ASSERT_EQ(script.exit_code, 0) << script.err;
  std::string pilot_token;
  std::getline(std::ifstream(dir / "data/pilot_token"), pilot_token);
  ASSERT_FALSE(pilot_token.empty());
  EXPECT_EQ(script.out.find(pilot_token), std::string::npos) << "the pilot token is in the batch script";
  EXPECT_EQ(script.out.find(test_token), std::string::npos) << "the operator token is in the batch script";
  const auto credential = fs::absolute(dir / ("data/pilot-credentials/" + placeholder_id));
  EXPECT_NE(script.out.find("BATON_API_TOKEN_FILE='" + credential.string() + "'"), std::string::npos) << script.out;
  EXPECT_NE(script.out.find("BATON_API_TOKEN_FILE_REMOVE=1"), std::string::npos) << script.out;
  EXPECT_EQ(fs::status(credential.parent_path()).permissions() & fs::perms::all, fs::perms::owner_all);

  json job = wait_for_status(d, job_id, "completed");
  ASSERT_EQ(job["status"], "completed") << job.dump() << "\n" << d.err();
  EXPECT_EQ(job["assigned_worker_id"], placeholder_id) << "the real worker took over the placeholder's row";
  EXPECT_FALSE(fs::exists(credential)) << "the worker removed its spent credential before any payload ran";
  EXPECT_EQ(slurp(dir / "b1-out.txt"), "ran in debug as attempt 1\n");

  // The worker deregisters after two idle polls; its row is the placeholder's, adopted.
  json gone;
  ASSERT_TRUE(wait_until(
      [&] {
        gone = worker_with_provider_prefix(d, "local-debug:", "state=gone");
        return !gone.is_null();
      },
      slurm_deadline));
  EXPECT_EQ(gone["id"], placeholder_id);
  EXPECT_EQ(gone["gone_reason"], "deregistered");
  EXPECT_EQ(gone["provider_id"], placeholder["provider_id"]);

  // The saved script is the submitted one: no token either.
  size_t scripts = 0;
  for (const auto& f : fs::directory_iterator(dir / "data/slurm-scripts")) {
    ++scripts;
    auto text = slurp(f.path().string());
    EXPECT_EQ(text.find(test_token), std::string::npos);
    EXPECT_EQ(text.find(pilot_token), std::string::npos);
    EXPECT_NE(text.find("#SBATCH --partition=debug"), std::string::npos);
  }
  EXPECT_EQ(scripts, 1u) << "one queued job, one submission";
  auto log = dir / ("slurm-logs/baton-" + gone["provider_id"].get<std::string>().substr(12));
  auto worker_log = slurp(log + ".out") + slurp(log + ".err");
  EXPECT_NE(worker_log.find("registered as worker"), std::string::npos) << worker_log;

  // The submission plan behind the placeholder, and the assignment, re-derive from the log.
  ASSERT_EQ(d.stop(), 0);
  auto report = rederive_report(dir / "data", dir / "rederive");
  EXPECT_EQ(report["ok"], true) << report.dump(2);
  EXPECT_EQ(report["provisioning_plans"], 1) << report.dump(2);
  EXPECT_EQ(report["assignments"], 1) << report.dump(2);
}

TEST_F(SlurmIntegration, PendingAllocationCancelledInSlurmLosesItsPlaceholderWithinACycle) {
  temp_dir dir;
  // The operator's own template: the built-in one, held so the allocation stays pending.
  std::string held = baton::slurm::default_template;
  held.insert(held.find('\n') + 1, "#SBATCH --hold\n");
  std::ofstream(dir / "held.mustache") << held;
  batond_process d(dir,
                   config(dir, "  - name: held\n    extends: base\n    template: " + (dir / "held.mustache") + "\n") +
                       "jobs: {worker_images: [other]}\n",
                   {"SLURM_CONF=" + slurm_conf});
  ASSERT_GT(d.port(), 0) << d.err();
  create_job(d, bundle(dir, "b2"));
  json placeholder;
  ASSERT_TRUE(wait_until(
      [&] {
        placeholder = worker_with_provider_prefix(d, "held:", "state=provisioning");
        return !placeholder.is_null();
      },
      slurm_deadline))
      << d.err();
  std::string slurm_id = placeholder["provider_id"].get<std::string>().substr(5);
  // The pilot's one-time credential (mode 0600) registers this allocation's worker and no other.
  auto credential_of = [&](const json& p) {
    const auto path = dir / ("data/pilot-credentials/" + p["id"].get<std::string>());
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
    std::string line;
    std::getline(std::ifstream(path), line);
    return line;
  };
  const std::string credential = credential_of(placeholder);
  ASSERT_FALSE(credential.empty());
  auto register_as = [&](const std::string& token, const std::string& provider) {
    httplib::Client c("127.0.0.1", d.port());
    auto r = c.Post("/workers/register", {{"X-API-Token", token}},
                    json{{"platform", "hpc"}, {"gpu_model", "A100"}, {"slurm_job_id", provider}}.dump(), "application/json");
    return r ? std::make_pair(r->status, json::parse(r->body, nullptr, false)) : std::make_pair(-1, json());
  };
  auto elsewhere = register_as(credential, "held:999999");
  EXPECT_EQ(elsewhere.first, 403) << elsewhere.second;
  EXPECT_EQ(elsewhere.second["error"], "pilot_credential_scope");
  // A registration naming this allocation must bring the placeholder's image.
  auto reg = d.client()->Post(
      "/workers/register", json{{"platform", "hpc"}, {"worker_image_key", "other"}, {"slurm_job_id", "held:" + slurm_id}}.dump(),
      "application/json");
  ASSERT_TRUE(reg);
  EXPECT_EQ(reg->status, 409);
  EXPECT_EQ(json::parse(reg->body)["error"], "worker_image_mismatch");
  // Still pending after two more cycles: squeue lists it, so it stays.
  ASSERT_TRUE(await_squeue_cycles(d, 2)) << d.err();
  EXPECT_FALSE(worker_with_provider_prefix(d, "held:", "state=provisioning").is_null());

  ASSERT_EQ(sh("scancel " + slurm_id), 0);
  auto cancelled_at = std::chrono::steady_clock::now();
  json gone;
  ASSERT_TRUE(wait_until(
      [&] {
        gone = worker_with_provider_prefix(d, "held:", "state=gone");
        return !gone.is_null();
      },
      std::chrono::seconds(20)))
      << d.err();
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, std::chrono::seconds(4)) << "one 1 s cycle, plus squeue";
  EXPECT_EQ(gone["id"], placeholder["id"]);
  EXPECT_EQ(gone["gone_reason"], "allocation_gone");
  EXPECT_EQ(register_as(credential, "held:" + slurm_id).first, 401) << "its allocation ended: so did its credential";
  // The job is still queued, so the next cycle submits a new (held) allocation; cancel it too.
  json next;
  ASSERT_TRUE(wait_until(
      [&] {
        next = worker_with_provider_prefix(d, "held:", "state=provisioning");
        return !next.is_null();
      },
      std::chrono::seconds(20)));
  EXPECT_NE(next["id"], placeholder["id"]);
  // Its credential registers its worker once (the pilot itself would, on release); used again, 401.
  const std::string next_credential = credential_of(next);
  auto first = register_as(next_credential, next["provider_id"]);
  ASSERT_EQ(first.first, 200) << first.second;
  EXPECT_EQ(first.second["worker_id"], next["id"]) << "it adopted its own placeholder";
  auto again = register_as(next_credential, next["provider_id"]);
  EXPECT_EQ(again.first, 401) << again.second;
  EXPECT_EQ(register_as(next_credential, "").first, 401);
  // Spent, it is no credential on any route of the access table: answered as a forged one.
  for (const auto& r : access_table::rows()) {
    auto spent = access_table::send(d.port(), r.method, access_table::expand(r.path, next["id"], next["id"]), r.body,
                                    {{"X-API-Token", next_credential}});
    EXPECT_EQ(spent.status, r.valid[access_table::forged_secret]) << r.method << " " << r.path << "\n" << spent.body;
  }
  sh("scancel " + next["provider_id"].get<std::string>().substr(5));
}

TEST_F(SlurmIntegration, SbatchAndSqueueCallsStayWithinTheSlurmCallBudget) {
  temp_dir dir;
  std::string held = baton::slurm::default_template;  // allocations stay pending
  held.insert(held.find('\n') + 1, "#SBATCH --hold\n");
  std::ofstream(dir / "held.mustache") << held;
  // A budget of two calls that (practically) never refills: demand for five pilots gets two
  // sbatch calls, and nothing after them, not even the squeue that would check on them.
  std::string cfg =
      config(dir, "  - name: held\n    extends: base\n    max_pending_jobs: 5\n    template: " + (dir / "held.mustache") + "\n");
  cfg.replace(cfg.find("provisioning: {interval_seconds: 1}"), 35,
              "provisioning: {interval_seconds: 1, slurm_calls_burst: 2, slurm_calls_per_second: 0.001}");
  // The five jobs are in the log before the cluster's first cycle: otherwise that cycle may
  // see one job, submit one pilot and spend the second call on checking it.
  {
    batond_process first(dir, "");
    ASSERT_GT(first.port(), 0) << first.err();
    for (int i = 0; i < 5; ++i) create_job(first, bundle(dir, "b" + std::to_string(i)));
    ASSERT_EQ(first.stop(), 0) << first.err();
  }
  batond_process d(dir, cfg, {"SLURM_CONF=" + slurm_conf});
  ASSERT_GT(d.port(), 0) << d.err();
  auto spent_reports = [&] {
    std::string err = d.err();
    size_t n = 0;
    for (auto at = err.find("Slurm call budget spent"); at != std::string::npos; at = err.find("Slurm call budget spent", at + 1))
      ++n;
    return n;
  };
  ASSERT_TRUE(wait_until([&] { return spent_reports() >= 3; }, std::chrono::seconds(30))) << d.err();
  auto list = get(d, "/workers?state=provisioning");
  ASSERT_TRUE(list.is_array());
  std::vector<std::string> slurm_ids;
  for (const auto& w : list)
    if (w["provider_id"].get<std::string>().rfind("held:", 0) == 0)
      slurm_ids.push_back(w["provider_id"].get<std::string>().substr(5));
  EXPECT_EQ(slurm_ids.size(), 2u) << "two sbatch calls, then the budget was spent";
  size_t scripts = 0;
  for (const auto& f : fs::directory_iterator(dir / "data/slurm-scripts")) scripts += f.path().extension() == ".sbatch";
  EXPECT_EQ(scripts, 2u);
  EXPECT_NE(d.err().find("squeue waits for the next cycle"), std::string::npos) << "the check on them waits too";
  for (const auto& id : slurm_ids) sh("scancel " + id);
}

TEST_F(SlurmIntegration, SbatchFailureOnOnePartitionDoesNotStopAnother) {
  temp_dir dir;
  batond_process d(dir,
                   config(dir,
                          "  - name: broken\n    extends: base\n    partition: nosuch\n"
                          "  - name: local-gpu\n    extends: base\n    partition: gpu\n"),
                   {"SLURM_CONF=" + slurm_conf});
  ASSERT_GT(d.port(), 0) << d.err();
  auto job_id = create_job(d, bundle(dir, "b3"));
  json job = wait_for_status(d, job_id, "completed");
  ASSERT_EQ(job["status"], "completed") << d.err();
  EXPECT_EQ(slurp(dir / "b3/out.txt"), "ran in gpu\n");  // the second partition of the one node
  auto clusters = get(d, "/clusters");
  ASSERT_TRUE(clusters.is_array()) << clusters.dump();
  ASSERT_EQ(clusters.size(), 2u);
  EXPECT_EQ(clusters[0]["name"], "broken");
  const auto& failure = clusters[0]["last_submission_failure"];
  ASSERT_TRUE(failure.is_object()) << clusters.dump();
  EXPECT_EQ(failure["stage"], "nonzero_exit");
  EXPECT_EQ(failure["exit_code"], 1);
  EXPECT_NE(failure["stderr"].get<std::string>().find("Invalid partition"), std::string::npos);
  EXPECT_TRUE(clusters[1]["last_submission_failure"].is_null());
  // GET /metrics counts each call by cluster entry and result.
  httplib::Client c("127.0.0.1", d.port());
  auto m = c.Get("/metrics", {{"X-API-Token", test_token}});
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("baton_slurm_calls_total{cluster=\"broken\",command=\"sbatch\",result=\"failed\"} "), std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find("baton_slurm_calls_total{cluster=\"local-gpu\",command=\"sbatch\",result=\"ok\"} "), std::string::npos);
  EXPECT_EQ(m->body.find("baton_slurm_calls_total{cluster=\"local-gpu\",command=\"sbatch\",result=\"failed\"}"),
            std::string::npos);
}

TEST_F(SlurmIntegration, SubmitsAndQueriesOverSshWithKeyAuth) {
  temp_dir dir;
  // The remote login gets Slurm's config the way a real login node has it: from its own environment.
  sshd_process sshd(dir, "SetEnv SLURM_CONF=" + slurm_conf + "\n");
  ASSERT_TRUE(sshd.ready()) << sshd.log();
  std::string remote = "    ssh_host: 127.0.0.1\n    ssh_user: root\n    ssh_port: " + std::to_string(sshd.port()) +
                       "\n    ssh_key_file: " + sshd.key() +
                       "\n    ssh_options: [StrictHostKeyChecking=no, UserKnownHostsFile=/dev/null]\n";
  // batond itself has no SLURM_CONF: sbatch and squeue can only work on the ssh side.
  batond_process d(dir, config(dir, "  - name: remote\n    extends: base\n" + remote), {"SLURM_CONF="});
  ASSERT_GT(d.port(), 0) << d.err();
  auto job_id = create_job(d, bundle(dir, "b4"));
  json job = wait_for_status(d, job_id, "completed");
  ASSERT_EQ(job["status"], "completed") << d.err() << sshd.log();
  EXPECT_EQ(slurp(dir / "b4/out.txt"), "ran in debug\n");
  // Reaping over ssh too: a held allocation, cancelled, disappears within a cycle.
  std::string held = baton::slurm::default_template;
  held.insert(held.find('\n') + 1, "#SBATCH --hold\n");
  std::ofstream(dir / "held.mustache") << held;
  d.stop();
  temp_dir dir2;
  batond_process d2(
      dir2, config(dir2, "  - name: remote-held\n    extends: base\n    template: " + (dir / "held.mustache") + "\n" + remote),
      {"SLURM_CONF="});
  create_job(d2, bundle(dir2, "b5"));
  json placeholder;
  ASSERT_TRUE(wait_until(
      [&] {
        placeholder = worker_with_provider_prefix(d2, "remote-held:", "state=provisioning");
        return !placeholder.is_null();
      },
      slurm_deadline))
      << d2.err();
  ASSERT_TRUE(await_squeue_cycles(d2, 2)) << d2.err();
  EXPECT_FALSE(worker_with_provider_prefix(d2, "remote-held:", "state=provisioning").is_null())
      << "squeue over ssh saw it pending";
  std::string slurm_id = placeholder["provider_id"].get<std::string>().substr(12);
  ASSERT_EQ(sh("scancel " + slurm_id), 0);
  ASSERT_TRUE(wait_until([&] { return !worker_with_provider_prefix(d2, "remote-held:", "state=gone").is_null(); },
                         std::chrono::seconds(20)));
  d2.stop();
  sh("scancel --partition=debug --state=PENDING");
}

TEST_F(SlurmIntegration, SilentWorkerWithALiveAllocationKeepsItsJobUntilSqueueSaysItIsGone) {
  temp_dir dir;
  // Heartbeats due every second, stale after 2 s; the shell worker starts the job and then
  // hangs without heartbeats while its Slurm allocation keeps running.
  std::string yaml = "workers: {heartbeat_interval_seconds: 1, heartbeat_timeout_multiplier: 2, reaper_interval_seconds: 1}\n" +
                     config(dir,
                            "  - name: silent\n    extends: base\n    max_pending_jobs: 1\n"
                            "    worker_command: \"BATON_TEST_GO_SILENT=1 sh " BATON_SOURCE_DIR "/scripts/shell-worker.sh\"\n");
  batond_process d(dir, yaml, {"SLURM_CONF=" + slurm_conf});
  ASSERT_GT(d.port(), 0) << d.err();
  auto job_id = create_job(d, bundle(dir, "b6"));
  json job = wait_for_status(d, job_id, "running");
  ASSERT_EQ(job["status"], "running") << d.err();
  std::string worker_id = job["assigned_worker_id"];
  auto worker = worker_by_id(d, worker_id);
  std::string slurm_id = worker["provider_id"].get<std::string>().substr(7);

  // Stale, and then two more cycles in which squeue still lists its allocation.
  ASSERT_TRUE(wait_until([&] { return worker_by_id(d, worker_id)["state"] == "stale"; }, slurm_deadline)) << d.err();
  ASSERT_TRUE(await_squeue_cycles(d, 2)) << d.err();
  job = get(d, "/jobs/" + job_id);
  EXPECT_EQ(job["status"], "running") << "squeue lists the allocation: the job must not go to a second worker";
  EXPECT_EQ(worker_by_id(d, worker_id)["state"], "stale");

  ASSERT_EQ(sh("scancel " + slurm_id), 0);
  ASSERT_TRUE(wait_until([&] { return worker_by_id(d, worker_id)["state"] == "gone"; }, std::chrono::seconds(10))) << d.err();
  // (The history is a projection, a few milliseconds behind the world that already shows the
  // worker gone: waited for, not read once.)
  json history;
  auto requeued = [&] {
    history = get(d, "/jobs/" + job_id + "/history");
    for (const auto& e : history["events"])
      if (e["event_type"] == "job.requeued_after_reap") return true;
    return false;
  };
  EXPECT_TRUE(wait_until(requeued, std::chrono::seconds(10))) << history.dump();
  // The next allocation is the same kind of hung worker; clean up.
  d.stop();
  sh("scancel --partition=debug");
  // The reap on squeue's word re-derives from the lease facts it recorded, the requeue with it.
  auto report = rederive_report(dir / "data", dir / "rederive");
  EXPECT_EQ(report["ok"], true) << report.dump(2);
  EXPECT_GE(report.value("reaps", 0), 1) << report.dump(2);
}

TEST_F(SlurmIntegration, DisabledClusterSubmitsNothingAndJobsSayWhy) {
  temp_dir dir;
  batond_process d(dir, config(dir, "  - name: toggled\n    extends: base\n"), {"SLURM_CONF=" + slurm_conf});
  ASSERT_GT(d.port(), 0) << d.err();
  auto op = d.client();
  op->set_default_headers({{"X-API-Token", test_token}, {"X-Baton-Operator", "alice"}});
  auto r = op->Post("/clusters/toggled/disable", R"({"reason":"maintenance"})", "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  EXPECT_EQ(op->Post("/clusters/nosuch/disable", "", "application/json")->status, 404);
  auto job_id = create_job(d, bundle(dir, "b7"));
  EXPECT_EQ(get(d, "/jobs/" + job_id)["queue_blocked_reason"], "no_enabled_worker_image_clusters");
  auto cycles = [&]() -> long long {  // (a disabled cluster calls no squeue: its cycles are counted apart)
    auto m = d.client()->Get("/metrics");
    return m && m->status == 200 ? metric_total(m->body, "baton_cluster_cycles_total", "cluster=\"toggled\"") : -1;
  };
  ASSERT_TRUE(wait_for_cycles(cycles, 2, slurm_deadline)) << "the disabled cluster's cycles pass";
  EXPECT_FALSE(fs::exists(dir / "data/slurm-scripts")) << "a disabled cluster submits nothing";
  EXPECT_EQ(get(d, "/clusters")[0]["enabled"], false);

  ASSERT_EQ(op->Post("/clusters/toggled/enable", "", "application/json")->status, 200);
  EXPECT_TRUE(get(d, "/jobs/" + job_id)["queue_blocked_reason"].is_null());
  json job = wait_for_status(d, job_id, "completed");
  ASSERT_EQ(job["status"], "completed") << d.err();
  EXPECT_EQ(d.stop(), 0);

  // The log says who did it.
  child_process dump({BATOND_PATH, "--dump", "--data-dir", dir / "data"}, dir / "dump");
  ASSERT_EQ(dump.wait(), 0);
  auto text = dump.out();
  auto disabled = text.find("\"cluster.disabled\"");
  ASSERT_NE(disabled, std::string::npos);
  auto line = text.substr(text.rfind('\n', disabled) + 1, text.find('\n', disabled) - text.rfind('\n', disabled) - 1);
  auto e = json::parse(line);
  EXPECT_EQ(e["actor"], "operator:alice");
  EXPECT_EQ(e["stream_id"], "cluster/toggled");
  EXPECT_EQ(e["payload"]["reason"], "maintenance");
  EXPECT_NE(text.find("\"cluster.enabled\""), std::string::npos);
}
