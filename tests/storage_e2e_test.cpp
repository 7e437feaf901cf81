// Stored bundles end to end (docs/storage.md): a real batond, the real CLI and two real
// baton-workers at two "sites" that share no filesystem with each other nor with the
// submitter. `baton submit ./dir` uploads the bundle (the directory is gone right after), site
// A's worker downloads it, checkpoints as blobs and hands the job off at its allocation's end,
// site B's worker resumes from A's last stored checkpoint, completes and stores the outputs,
// and `baton jobs fetch` brings back exactly what the payload wrote.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "http/storage/s3_backend.hpp"
#include "support/cutting_proxy.hpp"
#include "support/radosgw_process.hpp"
#include "support/s3_owner_call.hpp"
#include "support/worker_e2e.hpp"
#include "worker/transfer.hpp"

using namespace baton;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::wait_until;
using test::worker_e2e;

namespace {

// Counts steps in state.chk (one file, replaced whole, so a checkpoint never holds half a
// step): "start <n> attempt <a>" when an attempt begins at step n, "step <n> attempt <a>" for
// each step. A later attempt that finds no steps would have restarted from scratch: it fails.
// At the end: out/history.txt (the state), out/big.bin (12 MB of random bytes: three parts), out/result.txt.
std::string payload(int steps) {
  return R"(set -e
touch state.chk
n=$(grep -c '^step' state.chk || true)
if [ "$BATON_ATTEMPT" -gt 1 ] && [ "$n" -eq 0 ]; then echo "attempt $BATON_ATTEMPT found no checkpoint"; exit 3; fi
cp state.chk s.tmp && echo "start $n attempt $BATON_ATTEMPT" >> s.tmp && mv s.tmp state.chk
while [ "$n" -lt )" +
         std::to_string(steps) + R"( ]; do
  sleep 0.25
  n=$((n+1))
  cp state.chk s.tmp && echo "step $n attempt $BATON_ATTEMPT" >> s.tmp && mv s.tmp state.chk
  echo "$n" | awk '{print $1/)" +
         std::to_string(steps) + R"(}' > p.tmp && mv p.tmp progress.txt
done
mkdir -p out
cp state.chk out/history.txt
head -c 12000000 /dev/urandom > out/big.bin
echo "done $n attempt $BATON_ATTEMPT" > out/result.txt
)";
}

int64_t epoch_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Each test runs with each backend batond has (the parameter, storage.backend): s3 stores
// blobs in radosgw, every byte going to presigned URLs (uploads signed with the write-only
// upload key), 5 MiB parts above 5 MiB (batond reads its secrets from the environment it
// inherits; the workers strip them before a payload runs).
struct storage_e2e : worker_e2e, ::testing::WithParamInterface<std::string> {
  using store = test::radosgw_process;
  std::unique_ptr<store> s3;
  storage_e2e() {
    if (GetParam() == "s3") {
      s3 = std::make_unique<store>("baton-e2e", /*upload_key=*/true);
      ::setenv("BATON_S3_SECRET_ACCESS_KEY", store::owner_secret, 1);
      ::setenv("BATON_S3_UPLOAD_SECRET_ACCESS_KEY", store::upload_secret, 1);
    }
  }
  ~storage_e2e() override {
    ::unsetenv("BATON_S3_SECRET_ACCESS_KEY");
    ::unsetenv("BATON_S3_UPLOAD_SECRET_ACCESS_KEY");
  }
  std::string config() const override {
    if (!s3) return std::string(test::fast_config) + "storage: {backend: " + GetParam() + "}\n";
    return std::string(test::fast_config) + "storage: {backend: s3, s3: {endpoint: \"" + s3->endpoint() +
           "\", bucket: baton-e2e, access_key_id: " + store::owner_key_id + ", upload_access_key_id: " + store::upload_key_id +
           ", multipart_threshold_mb: 5, part_size_mb: 5}}\n";
  }
  // Where the local backend keeps a stored blob's bytes (a test damages one there).
  std::string blob_file(const std::string& sha) const { return dir / ("data/blobs/sha256/" + sha.substr(0, 2) + "/" + sha); }
  // A stored blob's first byte changed in the store, with the owner's key (as a fault or an
  // intruder would).
  void damage_in_store(const std::string& sha) {
    config::s3_config c;
    c.endpoint = s3->endpoint();
    c.bucket = "baton-e2e";
    c.access_key_id = store::owner_key_id;
    c.secret_access_key = store::owner_secret;
    storage::s3_backend b(c);
    auto got = test::s3_owner_call(b, "GET", b.blob_key(sha), {});
    ASSERT_TRUE(got && got->status == 200) << (got ? got->body : "no answer");
    std::string bytes = got->body;
    ASSERT_FALSE(bytes.empty());
    bytes[0] = static_cast<char>(bytes[0] ^ 0x5a);
    auto put = test::s3_owner_call(b, "PUT", b.blob_key(sha), {}, bytes);
    ASSERT_TRUE(put && put->status == 200) << (put ? put->body : "no answer");
  }
  // The submitter's bundle directory with the payload and its spec.
  std::string make_stored_bundle(int steps) {
    const auto bundle = dir / "submitter/md-run";
    fs::create_directories(bundle + "/inputs");
    std::ofstream(bundle + "/run.sh") << payload(steps);
    std::ofstream(bundle + "/inputs/params.txt") << "temperature 300\n";
    std::ofstream(bundle + "/baton-job.json") << json{
        {"command", "sh run.sh"},
        {"checkpoint_globs", {"*.chk"}},
        {"progress_file", "progress.txt"},
        {"output_globs", {"out/*"}}}.dump();
    return bundle;
  }
  test::tool_result baton(std::vector<std::string> args, int port = 0) {
    static int n = 0;
    args.insert(args.begin(), BATON_CLI_PATH);
    test::child_process p(args, dir / ("cli-" + std::to_string(++n)),
                          {"BATON_URL=http://127.0.0.1:" + std::to_string(port ? port : b->port()),
                           "BATON_API_TOKEN=" + std::string(test::test_token), "BATON_CONFIG=/dev/null", "USER=submitter"});
    int code = test::exit_code(p.wait(60s));
    return {code, p.out(), p.err()};
  }
};

TEST_P(storage_e2e, ASubmittedBundleRunsAtSiteAHandsOffAndSiteBFinishesFromItsCheckpointAndTheOutputsComeBack) {
  const auto bundle = make_stored_bundle(40);
  const std::string id = test::uid("stored");
  auto sub = baton({"submit", bundle, "--id", id, "--title", "stored-bundle"});
  ASSERT_EQ(sub.code, 0) << sub.out << sub.err;
  EXPECT_EQ(sub.out, "submitted " + id + " (queued)\n");
  EXPECT_NE(sub.err.find("uploaded"), std::string::npos) << sub.err;
  fs::remove_all(dir / "submitter");  // no site can read the submitter's files from now on
  auto j = job("stored");
  ASSERT_TRUE(j["input_bundle"].is_object()) << j;
  EXPECT_EQ(j.value("input_bundle_path", "").rfind("blob:", 0), 0u) << "no path to the submitter's files: " << j;

  // Site A: its allocation ends 10 s from now; the worker hands off 2 s before.
  const auto deadline = epoch_now() + 10;
  auto a = start_worker(
      {"BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS=" + std::to_string(deadline), "BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS=2"});
  ASSERT_TRUE(wait_status("stored", "running", 15s)) << a->err();
  ASSERT_EQ(test::exit_code(a->wait(30s)), 0) << a->err();
  EXPECT_EQ(status("stored"), "queued") << job("stored");
  auto types = event_types("stored");
  auto handoff = std::find(types.begin(), types.end(), "job.handoff_started");
  ASSERT_NE(handoff, types.end()) << json(types);
  auto stored_before_handoff = std::count(types.begin(), handoff, "job.checkpointed");  // recorded by the commits only
  EXPECT_GE(stored_before_handoff, 2) << "site A committed at least two checkpoints before it handed off: " << json(types);
  EXPECT_NE(a->err().find("checkpoint stored as set"), std::string::npos) << a->err();
  // The final checkpoint at the handoff is stored, or had nothing new since the last cycle
  // (the payload stopped right after one); either way the handoff names a stored set.
  EXPECT_TRUE(a->err().find("checkpoint (final) stored as set") != std::string::npos ||
              a->err().find("checkpoint cycle: nothing changed") != std::string::npos)
      << a->err();
  EXPECT_NE(a->err().find("handed off (allocation_ending; checkpoint set "), std::string::npos) << a->err();
  fs::remove_all(dir / "work-1");  // site A is gone, with everything it had on disk

  // Site B: its own work dir, nothing else; it keeps the working dir so the test can compare.
  auto bw = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"}, {"/bin/sh", "-c", "exec \"$0\" --keep-work-dirs"});
  ASSERT_EQ(test::exit_code(bw->wait(60s)), 0) << bw->err();
  ASSERT_EQ(status("stored"), "completed") << job("stored") << "\n" << bw->err();
  EXPECT_NE(bw->err().find("restored"), std::string::npos) << bw->err();
  EXPECT_NE(bw->err().find("outputs stored: 3 file(s)"), std::string::npos) << bw->err();

  // What the payload wrote at site B, fetched by the submitter.
  auto fetched = baton({"jobs", "fetch", id, dir / "fetched"});
  ASSERT_EQ(fetched.code, 0) << fetched.out << fetched.err;
  const auto wrote = dir / ("work-2/" + id + "-attempt-2/out");
  for (auto name : {"history.txt", "big.bin", "result.txt"}) {
    auto got = test::slurp(dir / ("fetched/out/" + std::string(name)));
    EXPECT_FALSE(got.empty()) << name;
    EXPECT_TRUE(got == test::slurp(wrote + "/" + name)) << name << " differs from what the payload wrote";
    EXPECT_NE(fetched.out.find("wrote " + dir / ("fetched/out/" + std::string(name))), std::string::npos) << fetched.out;
  }
  EXPECT_EQ(fs::file_size(dir / "fetched/out/big.bin"), 12000000u);
  EXPECT_EQ(test::slurp(dir / "fetched/out/result.txt"), "done 40 attempt 2\n");

  // The history proves the continuation: attempt 1 from 0, attempt 2 from where the last
  // stored checkpoint of attempt 1 left off, every step once and in order.
  auto history = test::slurp(dir / "fetched/out/history.txt");
  std::vector<std::pair<int, int>> starts, steps;
  std::regex line_re(R"((start|step) (\d+) attempt (\d+))");
  for (std::sregex_iterator it(history.begin(), history.end(), line_re), end; it != end; ++it)
    ((*it)[1] == "start" ? starts : steps).emplace_back(std::stoi((*it)[2]), std::stoi((*it)[3]));
  ASSERT_EQ(starts.size(), 2u) << history;
  EXPECT_EQ(starts[0], std::make_pair(0, 1));
  EXPECT_GT(starts[1].first, 0) << "site B resumed from site A's checkpoint, not from scratch";
  EXPECT_EQ(starts[1].second, 2);
  ASSERT_EQ(steps.size(), 40u) << history;
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(steps[i].first, i + 1) << history;
    EXPECT_EQ(steps[i].second, i < starts[1].first ? 1 : 2) << history;
  }
}

// Checkpoints wait in the worker's copies while batond is away, are never reported as stored
// meanwhile, and go in once it is back; the job completes without a restart.
TEST_P(storage_e2e, CheckpointsWaitLocallyWhileBatondIsAwayAndAreStoredWhenItIsBack) {
  const auto bundle = make_stored_bundle(60);
  const std::string id = test::uid("away");
  auto sub = baton({"submit", bundle, "--id", id, "--title", "away"});
  ASSERT_EQ(sub.code, 0) << sub.out << sub.err;
  fs::remove_all(dir / "submitter");
  auto w = start_worker();
  auto checkpoints = [&] {
    auto t = event_types("away");
    return std::count(t.begin(), t.end(), "job.checkpointed");
  };
  ASSERT_TRUE(wait_until([&] { return checkpoints() >= 2; }, 30s)) << w->err();
  const int port = b->port();
  ASSERT_EQ(b->stop(), 0) << b->err();
  ASSERT_TRUE(wait_until([&] { return w->err().find("checkpoint not stored") != std::string::npos; }, 20s)) << w->err();
  EXPECT_EQ(w->wait(0ms), -1) << "the worker gave up while batond was away\n" << w->err();
  b->start({}, port);
  ASSERT_EQ(b->port(), port) << b->err();
  op = b->client();
  ASSERT_TRUE(wait_until(
      [&] {
        auto log = w->err();
        auto away = log.find("checkpoint not stored");
        return away != std::string::npos && log.find("checkpoint stored as set", away) != std::string::npos;
      },
      30s))
      << w->err();
  ASSERT_TRUE(wait_status("away", "completed", 40s)) << job("away") << "\n" << w->err();
  EXPECT_EQ(job("away")["attempts"], 1);
  auto fetched = baton({"jobs", "fetch", id, dir / "fetched"});
  ASSERT_EQ(fetched.code, 0) << fetched.err;
  EXPECT_EQ(test::slurp(dir / "fetched/out/result.txt"), "done 60 attempt 1\n");
  auto history = test::slurp(dir / "fetched/out/history.txt");
  EXPECT_EQ(history.find("start 0 attempt 1"), 0u) << history;
  EXPECT_EQ(history.find("start", 1), std::string::npos) << "the payload was never started again: " << history;
}

// `baton jobs import` packs and uploads each bundle directory once however many lines name
// it, takes a .tar.gz as it is, and a rerun finds every job already there.
TEST_P(storage_e2e, ImportUploadsEachBundleOnceAndARerunSubmitsNothing) {
  for (auto name : {"lig-1", "lig-2"}) {
    fs::create_directories(dir / ("campaign/" + std::string(name)));
    std::ofstream(dir / ("campaign/" + std::string(name) + "/baton-job.json")) << R"({"command": "true"})";
    std::ofstream(dir / ("campaign/" + std::string(name) + "/input.txt")) << name;
  }
  // An archive made by the CLI's own packing of lig-2 (the same bytes: the same blob).
  auto sub = baton({"submit", dir / "campaign/lig-2", "--hold", "--title", "packed"});
  ASSERT_EQ(sub.code, 0) << sub.err;
  const auto file = dir / "campaign.jsonl";
  std::ofstream(file) << json{{"title", "a"}, {"input_bundle_path", dir / "campaign/lig-1"}} << "\n"
                      << json{{"title", "b"}, {"input_bundle_path", dir / "campaign/lig-1"}, {"nice", 1}} << "\n"
                      << json{{"title", "c"}, {"input_bundle_path", dir / "campaign/lig-2"}} << "\n";
  auto first = baton({"jobs", "import", file});
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(first.out, "submitted 3, already there 0, refused 0\n");
  std::regex line_re(R"(line (\d+): bundle \S+: ([0-9a-f]{64}) \((uploaded|already stored)\))");
  std::vector<std::string> said;
  for (std::sregex_iterator it(first.err.begin(), first.err.end(), line_re), end; it != end; ++it)
    said.push_back((*it)[1].str() + " " + (*it)[3].str());
  EXPECT_EQ(said, (std::vector<std::string>{"1 uploaded", "3 already stored"})) << first.err;
  auto jobs = test::get(*op, "/jobs?limit=10");
  std::map<std::string, std::string> bundle_of;
  for (const auto& j : jobs) bundle_of[j["title"]] = j["input_bundle"].value("sha256", "");
  EXPECT_EQ(bundle_of["a"], bundle_of["b"]) << jobs;
  EXPECT_NE(bundle_of["a"], bundle_of["c"]) << jobs;
  EXPECT_EQ(bundle_of["c"], bundle_of["packed"]) << "the same directory packs to the same blob";
  // An archive is uploaded as it is: its own bytes are the blob.
  ASSERT_EQ(std::system(("tar -czf " + dir / "lig-1.tar.gz" + " -C " + dir / "campaign/lig-1 .").c_str()), 0);
  auto tgz = baton({"--json", "submit", dir / "lig-1.tar.gz", "--hold"});
  ASSERT_EQ(tgz.code, 0) << tgz.err;
  EXPECT_EQ(json::parse(tgz.out)["input_bundle"]["sha256"], xfer::hash_file(dir / "lig-1.tar.gz").first) << tgz.out;
  EXPECT_EQ(baton({"submit", dir / "lig-1.tar.gz", "--command", "true"}).code, 2) << "--command cannot write into an archive";
  auto again = baton({"jobs", "import", file});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, "submitted 0, already there 3, refused 0\n") << again.err;
  // A line naming a directory that is not there stops the import before anything is sent.
  std::ofstream(dir / "missing.jsonl") << json{{"title", "d"}, {"input_bundle_path", dir / "campaign/nope"}} << "\n";
  auto missing = baton({"jobs", "import", dir / "missing.jsonl"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("line 1: input_bundle_path " + dir / "campaign/nope"), std::string::npos) << missing.err;
}

// A stored blob damaged in the store: the worker notices before anything runs. A damaged
// bundle fails the job with bundle_digest_mismatch; a damaged checkpoint file with
// checkpoint_hydration_failed (never a silent restart from scratch).
TEST_P(storage_e2e, DamagedBlobsFailTheJobWithTheirReasonsBeforeThePayloadRuns) {
  // In the store a byte is flipped (the worker's digest check finds it). batond's local backend
  // never serves a blob whose size is wrong (500 blob_damaged, which the worker takes as a
  // mismatch at once), so there the file loses its last byte. (A same-size change is found by
  // batond as it sends the blob, which it then cuts short every time: the worker sees an
  // unavailable bundle.)
  auto damage = [&](const std::string& sha) {
    if (s3) return damage_in_store(sha);
    auto f = blob_file(sha);
    ASSERT_TRUE(fs::exists(f)) << f;
    fs::permissions(f, fs::perms::owner_write, fs::perm_options::add);
    fs::resize_file(f, fs::file_size(f) - 1);
  };
  auto failed_with = [&](const std::string& name) {
    auto history = test::get(*op, "/jobs/" + name + "/history");
    for (auto& e : history["events"])
      if (e["event_type"] == "job.failed") return e["payload"];
    return json();
  };

  // The bundle.
  const auto bundle = make_stored_bundle(40);
  auto sub = baton({"--json", "submit", bundle, "--id", test::uid("bad-bundle"), "--title", "bad-bundle"});
  ASSERT_EQ(sub.code, 0) << sub.err;
  damage(json::parse(sub.out)["input_bundle"]["sha256"]);
  auto w = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(w->wait(30s)), 0) << w->err();
  auto failed = failed_with("bad-bundle");
  EXPECT_EQ(failed.value("reason", ""), "bundle_digest_mismatch") << failed << "\n" << w->err();
  EXPECT_EQ(w->err().find("payload started"), std::string::npos) << w->err();

  // A checkpoint: site A runs and hands off, the state file's blob is damaged, site B refuses.
  std::ofstream(bundle + "/inputs/params.txt") << "temperature 310\n";  // another bundle: the first one is damaged
  auto sub2 = baton({"submit", bundle, "--id", test::uid("bad-checkpoint"), "--title", "bad-checkpoint"});
  ASSERT_EQ(sub2.code, 0) << sub2.err;
  auto a = start_worker(
      {"BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS=" + std::to_string(epoch_now() + 6), "BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS=2"});
  ASSERT_EQ(test::exit_code(a->wait(30s)), 0) << a->err();
  ASSERT_EQ(status("bad-checkpoint"), "queued") << job("bad-checkpoint") << a->err();
  auto files = test::get(*op, "/jobs/bad-checkpoint/files");
  ASSERT_FALSE(files["checkpoints"].empty()) << files;
  std::string state_sha;
  for (const auto& f : files["checkpoints"].back()["files"])
    if (f["path"] == "state.chk") state_sha = f["sha256"];
  ASSERT_FALSE(state_sha.empty()) << files;
  damage(state_sha);
  auto bw = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"});
  ASSERT_EQ(test::exit_code(bw->wait(30s)), 0) << bw->err();
  auto failed2 = failed_with("bad-checkpoint");
  EXPECT_EQ(failed2.value("reason", ""), "checkpoint_hydration_failed") << failed2 << "\n" << bw->err();
  EXPECT_NE(failed2.value("detail", "").find("state.chk"), std::string::npos) << failed2;
  EXPECT_EQ(bw->err().find("payload started"), std::string::npos) << bw->err();
}

// The CLI's bytes to and from batond (the local backend) cut midway by a proxy: the bundle
// upload resumes from what batond holds, the output download with a Range, and both arrive whole.
TEST_P(storage_e2e, CutTransfersToBatondResumeAndArriveWhole) {
  if (s3) GTEST_SKIP() << "with s3 the bytes go to the store, not through batond";
  const auto bundle = dir / "submitter/big";
  fs::create_directories(bundle);
  {
    std::ofstream data(bundle + "/input.bin", std::ios::binary);
    std::mt19937 rng(7);
    for (int i = 0; i < (3 << 20) / 4; ++i) {
      uint32_t v = rng();
      data.write(reinterpret_cast<const char*>(&v), 4);
    }
  }
  std::ofstream(bundle + "/baton-job.json") << json{
      {"command", "mkdir -p out && head -c 4000000 /dev/urandom > out/big.bin && cmp -s input.bin input.bin"},
      {"output_globs", {"out/*"}}}.dump();
  test::cutting_proxy proxy(b->port());
  proxy.push({0, 0});        // POST /blobs/uploads
  proxy.push({1 << 20, 0});  // the PUT dies after 1 MiB of about 3
  const std::string id = test::uid("cut");
  auto sub = baton({"submit", bundle, "--id", id, "--title", "cut"}, proxy.port());
  ASSERT_EQ(sub.code, 0) << sub.out << sub.err;
  EXPECT_EQ(proxy.cuts(), 1) << "the upload was cut";
  fs::remove_all(dir / "submitter");
  auto w = start_worker({"BATON_IDLE_STRATEGY=immediate_exit"}, {"/bin/sh", "-c", "exec \"$0\" --keep-work-dirs"});
  ASSERT_EQ(test::exit_code(w->wait(60s)), 0) << w->err();
  ASSERT_EQ(status("cut"), "completed") << job("cut") << w->err();
  proxy.push({0, 0});                // GET /jobs/{id}/files
  proxy.push({0, (1 << 20) + 500});  // the download dies after about 1 MiB of 4
  auto fetched = baton({"jobs", "fetch", id, dir / "fetched"}, proxy.port());
  ASSERT_EQ(fetched.code, 0) << fetched.out << fetched.err;
  EXPECT_EQ(proxy.cuts(), 2) << "the download was cut";
  auto got = test::slurp(dir / "fetched/out/big.bin");
  EXPECT_EQ(got.size(), 4000000u);
  EXPECT_TRUE(got == test::slurp(dir / ("work-1/" + id + "-attempt-1/out/big.bin")))
      << "the output differs from what the payload wrote";
}

INSTANTIATE_TEST_SUITE_P(backends, storage_e2e, ::testing::Values("local", "s3"), [](const auto& info) { return info.param; });

}  // namespace
