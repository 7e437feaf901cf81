// The data plane over real HTTP against a real batond with the local backend
// (docs/storage.md): who may store and read which blob (another job's upload, another
// worker's download, another user's bundle, an expired transfer, a finished attempt), the
// quota's 507, and a checkpoint that outlives batond: acknowledged file sets survive kill -9
// in the middle of uploads, nothing partial is referred to, and the log verifies.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/util/sha256.hpp"
#include "events/bytes.hpp"
#include "support/batond_process.hpp"
#include "support/loopback_socket.hpp"
#include "support/process.hpp"
#include "support/replay_tool.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_until.hpp"

using namespace baton;
using nlohmann::json;

namespace {

const std::string config = R"(
log_level: warn
storage:
  backend: local
  user_quota_bytes: 3000000
  transfer_expiry_seconds: 2
  keep_checkpoints: 2
  collect_interval_seconds: 1
accounts:
  chem: {shares: 1, users: {alice: 1, bob: 1}}
)";

std::string sha_hex(const std::string& data) { return util::sha256_hex(data); }

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(g());
  return s;
}

struct reply {
  int status = 0;
  json body;
  std::string raw;
};

struct fixture {
  test::temp_dir dir;
  test::batond_process d{dir, config};

  reply call(const httplib::Headers& h, const std::string& method, const std::string& path, const json& body = nullptr) {
    httplib::Client c("127.0.0.1", d.port());
    c.set_read_timeout(30, 0);
    httplib::Result r =
        method == "GET" ? c.Get(path.c_str(), h) : c.Post(path.c_str(), h, body.is_null() ? "" : body.dump(), "application/json");
    if (!r) return {};
    return {r->status, json::parse(r->body, nullptr, false), r->body};
  }
  // A PUT of bytes to a relative transfer url (the local backend's).
  reply put(const httplib::Headers& h, const std::string& url, const std::string& bytes) {
    httplib::Client c("127.0.0.1", d.port());
    c.set_read_timeout(30, 0);
    auto r = c.Put(url.c_str(), h, bytes, "application/octet-stream");
    if (!r) return {};
    return {r->status, json::parse(r->body, nullptr, false), r->body};
  }
  reply get_bytes(const httplib::Headers& h, const std::string& url) {
    httplib::Client c("127.0.0.1", d.port());
    c.set_read_timeout(30, 0);
    auto r = c.Get(url.c_str(), h);
    if (!r) return {};
    return {r->status, nullptr, r->body};
  }
  httplib::Headers admin{{"X-API-Token", test::test_token}};
  httplib::Headers op(const std::string& token) { return {{"X-API-Token", token}}; }
  std::string create_operator(const std::string& name) {
    auto r = call(admin, "POST", "/operators", {{"name", name}, {"role", "user"}, {"accounts", {"chem"}}});
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body.value("token", "");
  }
  struct worker {
    std::string id;
    httplib::Headers h;
  };
  worker register_worker() {
    auto r = call(admin, "POST", "/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}});
    EXPECT_EQ(r.status, 200) << r.raw;
    return {r.body.value("worker_id", ""), {{"X-Worker-Token", r.body.value("worker_token", "")}}};
  }
  std::string poll(const worker& w) {
    auto r = call(w.h, "POST", "/jobs/request?worker_id=" + w.id);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body.value("job_id", "");
  }
  // An operator's bundle, uploaded whole; its {sha256, size}.
  json upload_bundle(const httplib::Headers& who, const std::string& bytes) {
    json b = {{"sha256", sha_hex(bytes)}, {"size", bytes.size()}};
    auto plan = call(who, "POST", "/blobs/uploads", {{"purpose", "bundle"}, {"sha256", b["sha256"]}, {"size", b["size"]}});
    EXPECT_EQ(plan.status, 200) << plan.raw;
    if (plan.body.value("status", "") == "upload") {
      const auto& part = plan.body["parts"].at(0);
      EXPECT_EQ(put(who, part["url"].get<std::string>() + "?offset=0", bytes).status, 200);
      auto done = call(who, "POST", "/blobs/uploads/" + plan.body["upload_id"].get<std::string>() + "/complete", json::object());
      EXPECT_EQ(done.status, 200) << done.raw;
    }
    return b;
  }
  std::string create_job(const httplib::Headers& who, const json& bundle) {
    auto r = call(who, "POST", "/jobs", {{"title", "t"}, {"input_bundle", bundle}});
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body.value("id", "");
  }
  // A checkpoint of `files` (path -> bytes) stored and committed by worker w: the commit's reply.
  reply checkpoint(const worker& w, const std::string& job, const std::map<std::string, std::string>& files,
                   const std::string& kind = "checkpoint") {
    json manifest = json::array();
    for (const auto& [path, bytes] : files)
      manifest.push_back({{"path", path}, {"sha256", sha_hex(bytes)}, {"size", bytes.size()}});
    auto set = call(w.h, "POST", "/jobs/" + job + "/files", {{"kind", kind}, {"attempt", 1}, {"files", manifest}});
    if (set.status != 200) return set;
    for (const auto& u : set.body["uploads"]) {
      const std::string& bytes = files.at(u["paths"][0].get<std::string>());
      for (const auto& part : u["parts"]) {
        auto offset = part["offset"].get<uint64_t>();
        EXPECT_EQ(put(w.h, part["url"].get<std::string>() + "?offset=" + std::to_string(offset), bytes.substr(offset)).status,
                  200);
      }
    }
    return call(w.h, "POST", "/jobs/" + job + "/files/" + set.body["set_id"].get<std::string>() + "/commit", json::object());
  }
};

TEST(storage_http, ABundleIsOnlyItsUploadersAndNamingItsDigestProvesNothing) {
  fixture f;
  auto alice = f.op(f.create_operator("alice"));
  auto bob = f.op(f.create_operator("bob"));
  const std::string bytes = random_bytes(100000, 1);
  auto bundle = f.upload_bundle(alice, bytes);
  auto again = f.call(alice, "POST", "/blobs/uploads", {{"sha256", bundle["sha256"]}, {"size", bundle["size"]}});
  EXPECT_EQ(again.body.value("status", ""), "stored") << "alice holds it: nothing to send";
  // Bob knows the digest: he may not use it, and asking to upload it means sending the bytes.
  auto use = f.call(bob, "POST", "/jobs", {{"title", "t"}, {"input_bundle", bundle}});
  EXPECT_EQ(use.status, 422) << use.raw;
  EXPECT_EQ(use.body.value("error", ""), "unknown_bundle");
  EXPECT_EQ(use.body.value("field", ""), "input_bundle");
  auto claim = f.call(bob, "POST", "/blobs/uploads", {{"sha256", bundle["sha256"]}, {"size", bundle["size"]}});
  ASSERT_EQ(claim.body.value("status", ""), "upload") << claim.raw;
  EXPECT_EQ(claim.body["offset"], 0);
  auto early = f.call(bob, "POST", "/blobs/uploads/" + claim.body["upload_id"].get<std::string>() + "/complete", json::object());
  EXPECT_EQ(early.status, 409) << early.raw;
  EXPECT_EQ(early.body.value("error", ""), "upload_incomplete");
  // Bob's upload is not alice's to complete (nor to send bytes to).
  EXPECT_EQ(
      f.call(alice, "POST", "/blobs/uploads/" + claim.body["upload_id"].get<std::string>() + "/complete", json::object()).status,
      404);
  EXPECT_EQ(f.put(alice, claim.body["parts"][0]["url"].get<std::string>() + "?offset=0", bytes).status, 403);
  // Wrong bytes under the digest are refused and nothing is stored.
  auto wrong = f.put(bob, claim.body["parts"][0]["url"].get<std::string>() + "?offset=0", random_bytes(100000, 2));
  EXPECT_EQ(wrong.status, 422) << wrong.raw;
  EXPECT_EQ(wrong.body.value("error", ""), "digest_mismatch");
  // A job of alice's is none of bob's.
  auto job = f.create_job(alice, bundle);
  EXPECT_EQ(f.call(bob, "GET", "/jobs/" + job + "/files").status, 404);
  auto listed = f.call(alice, "GET", "/jobs/" + job + "/files");
  ASSERT_EQ(listed.status, 200) << listed.raw;
  EXPECT_EQ(listed.body["input_bundle"]["sha256"], bundle["sha256"]);
  EXPECT_EQ(f.call(alice, "GET", "/jobs/" + job).body["input_bundle"], bundle);
}

TEST(storage_http, WorkersReadAndWriteOnlyTheirOwnJobsFilesAndTransfersExpire) {
  fixture f;
  auto alice = f.op(f.create_operator("alice"));
  auto bundle = f.upload_bundle(alice, random_bytes(5000, 3));
  auto job_a = f.create_job(alice, bundle);
  auto job_b = f.create_job(alice, bundle);
  auto w1 = f.register_worker(), w2 = f.register_worker();
  auto got1 = f.poll(w1), got2 = f.poll(w2);
  ASSERT_FALSE(got1.empty());
  ASSERT_FALSE(got2.empty());
  // The worker's own job: its bundle, downloadable by it alone.
  auto mine = f.call(w1.h, "GET", "/jobs/" + got1 + "/files");
  ASSERT_EQ(mine.status, 200) << mine.raw;
  const std::string url = mine.body["input_bundle"]["download"]["url"];
  auto bytes = f.get_bytes(w1.h, url);
  EXPECT_EQ(bytes.status, 200);
  EXPECT_EQ(sha_hex(bytes.raw), bundle["sha256"]);
  EXPECT_EQ(f.get_bytes(w2.h, url).status, 403) << "another worker's download";
  EXPECT_EQ(f.get_bytes({}, url).status, 401) << "no credential";
  EXPECT_EQ(f.get_bytes({{"X-Worker-Token", w1.id + ".forged"}}, url).status, 401) << "a forged one";
  EXPECT_EQ(f.call(w2.h, "GET", "/jobs/" + got1 + "/files").status, 409) << "another job's files";
  // Another job's upload: w2 may not write into w1's file set.
  const std::string state = random_bytes(20000, 4);
  auto set = f.call(w1.h, "POST", "/jobs/" + got1 + "/files",
                    {{"kind", "checkpoint"},
                     {"attempt", 1},
                     {"files", {{{"path", "s.chk"}, {"sha256", sha_hex(state)}, {"size", state.size()}}}}});
  ASSERT_EQ(set.status, 200) << set.raw;
  const std::string upload_url = set.body["uploads"][0]["parts"][0]["url"];
  EXPECT_EQ(f.put(w2.h, upload_url + "?offset=0", state).status, 403);
  EXPECT_EQ(f.call(w2.h, "POST", "/jobs/" + got2 + "/files/" + set.body["set_id"].get<std::string>() + "/commit", json::object())
                .status,
            404)
      << "another worker's set";
  EXPECT_EQ(
      f.call(w2.h, "POST", "/jobs/" + got1 + "/files", {{"kind", "checkpoint"}, {"attempt", 1}, {"files", json::array()}}).status,
      409);
  // An expired transfer (storage.transfer_expiry_seconds: 2 here) is refused.
  EXPECT_TRUE(test::wait_until([&] { return f.get_bytes(w1.h, url).status == 404; }, std::chrono::seconds(20)))
      << "an expired download grant";
  // Asked again, it is served again.
  auto fresh = f.call(w1.h, "GET", "/jobs/" + got1 + "/files");
  EXPECT_EQ(f.get_bytes(w1.h, fresh.body["input_bundle"]["download"]["url"]).status, 200);
}

TEST(storage_http, AFinishedAttemptStoresNothingAndTheQuotaAnswers507) {
  fixture f;
  auto alice = f.op(f.create_operator("alice"));
  auto bundle = f.upload_bundle(alice, random_bytes(1000, 5));
  f.create_job(alice, bundle);
  auto w = f.register_worker();
  auto job = f.poll(w);
  ASSERT_FALSE(job.empty());
  auto ok = f.checkpoint(w, job, {{"state.chk", random_bytes(1000, 6)}});
  EXPECT_EQ(ok.status, 200) << ok.raw;
  // Past the quota (3,000,000 bytes): 507 naming it, and the refusal is in the log.
  auto big = f.checkpoint(w, job, {{"huge.dcd", random_bytes(3'500'000, 7)}});
  EXPECT_EQ(big.status, 507) << big.raw;
  EXPECT_EQ(big.body.value("error", ""), "storage_quota_exceeded");
  EXPECT_EQ(big.body.value("quota", ""), "storage.user_quota_bytes");
  EXPECT_EQ(big.body.value("user", ""), "alice");
  auto audit = f.call(f.admin, "GET", "/audit/export?type=storage.quota_refused");
  EXPECT_NE(audit.raw.find("storage.quota_refused"), std::string::npos);
  // Open a set, then the attempt ends: neither the open set nor a new one is stored.
  const std::string late = random_bytes(500, 8);
  auto open = f.call(w.h, "POST", "/jobs/" + job + "/files",
                     {{"kind", "checkpoint"},
                      {"attempt", 1},
                      {"files", {{{"path", "late"}, {"sha256", sha_hex(late)}, {"size", late.size()}}}}});
  ASSERT_EQ(open.status, 200);
  ASSERT_EQ(f.call(w.h, "POST", "/jobs/" + job + "/complete").status, 204);
  f.put(w.h, open.body["uploads"][0]["parts"][0]["url"].get<std::string>() + "?offset=0", late);
  auto commit =
      f.call(w.h, "POST", "/jobs/" + job + "/files/" + open.body["set_id"].get<std::string>() + "/commit", json::object());
  EXPECT_EQ(commit.status, 409) << commit.raw;
  EXPECT_EQ(commit.body.value("error", ""), "job_not_accepting_files");
  auto after = f.checkpoint(w, job, {{"later", late}});
  EXPECT_EQ(after.status, 409) << after.raw;
  auto files = f.call(alice, "GET", "/jobs/" + job + "/files");
  EXPECT_EQ(files.body["checkpoints"].size(), 1u);
}

size_t blob_files(const test::temp_dir& dir) {
  size_t n = 0;
  if (!std::filesystem::exists(dir / "data/blobs/sha256")) return 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "data/blobs/sha256")) n += e.is_regular_file();
  return n;
}

TEST(storage_http, APrunedJobsBlobsAreCollectedAndADamagedBlobIsReported) {
  fixture f;
  auto alice = f.op(f.create_operator("alice"));
  const std::string bundle_bytes = random_bytes(3000, 11);
  auto bundle = f.upload_bundle(alice, bundle_bytes);
  f.create_job(alice, bundle);
  auto w = f.register_worker();
  auto job = f.poll(w);
  ASSERT_EQ(f.checkpoint(w, job, {{"a", random_bytes(100, 12)}}).status, 200);
  ASSERT_EQ(f.checkpoint(w, job, {{"a", random_bytes(100, 13)}}).status, 200);
  ASSERT_EQ(f.checkpoint(w, job, {{"a", random_bytes(100, 14)}}).status, 200);
  // keep_checkpoints: 2, so the first checkpoint's file goes by itself.
  EXPECT_TRUE(test::wait_until([&] { return blob_files(f.dir) == 3; }, std::chrono::seconds(20))) << blob_files(f.dir);
  // A blob damaged on disk is never handed out whole, and the log says so.
  const std::string path = f.dir / ("data/blobs/sha256/" + bundle["sha256"].get<std::string>().substr(0, 2) + "/" +
                                    bundle["sha256"].get<std::string>());
  {
    std::fstream damage(path, std::ios::in | std::ios::out | std::ios::binary);
    damage.seekp(10);
    damage.put(static_cast<char>(bundle_bytes[10] ^ 0xff));
  }
  auto files = f.call(w.h, "GET", "/jobs/" + job + "/files");
  auto got = f.get_bytes(w.h, files.body["input_bundle"]["download"]["url"]);
  EXPECT_NE(got.raw, bundle_bytes);
  EXPECT_NE(got.raw.size(), bundle_bytes.size()) << "the last bytes are held back";
  EXPECT_TRUE(test::wait_until(
      [&] {
        return f.call(f.admin, "GET", "/audit/export?type=storage.blob_corrupt").raw.find(bundle["sha256"].get<std::string>()) !=
               std::string::npos;
      },
      std::chrono::seconds(20)));
  // (The collector removes a file, then records it: the count follows once that is recorded.)
  std::string metrics;
  EXPECT_TRUE(test::wait_until(
      [&] {
        metrics = f.call(f.admin, "GET", "/metrics").raw;
        return metrics.find("baton_storage_blobs 3") != std::string::npos;
      },
      std::chrono::seconds(20)))
      << metrics.substr(0, 2000);
  EXPECT_NE(metrics.find("baton_storage_user_bytes{user=\"alice\"} 3200"), std::string::npos);
  EXPECT_NE(metrics.find("baton_storage_received_bytes_total"), std::string::npos);
  // Once the job is pruned, nothing holds its blobs: the collector removes them.
  ASSERT_EQ(f.call(w.h, "POST", "/jobs/" + job + "/complete").status, 204);
  httplib::Client c("127.0.0.1", f.d.port());
  auto del = c.Delete("/jobs?status=completed&older_than_minutes=0", f.admin);
  ASSERT_TRUE(del);
  ASSERT_EQ(del->status, 200) << del->body;
  EXPECT_TRUE(test::wait_until([&] { return blob_files(f.dir) == 0; }, std::chrono::seconds(20))) << blob_files(f.dir);
  EXPECT_TRUE(test::wait_until(
      [&] {
        return f.call(f.admin, "GET", "/audit/export?type=storage.blob_removed").raw.find(bundle["sha256"].get<std::string>()) !=
               std::string::npos;
      },
      std::chrono::seconds(20)));
}

// A body sent by hand: the head, then the first `n` bytes of `bytes`, and the connection cut
// (batond killed meanwhile, or the client gone).
void send_part(int port, const std::string& url, const std::string& token, const std::string& bytes, size_t n) {
  int fd = test::connect_loopback(port, 10);
  if (fd < 0) return;
  std::string head = "PUT " + url + "?offset=0 HTTP/1.1\r\nHost: x\r\nX-Worker-Token: " + token +
                     "\r\nContent-Type: application/octet-stream\r\nContent-Length: " + std::to_string(bytes.size()) + "\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  for (size_t sent = 0; sent < n;) {
    ssize_t k = ::send(fd, bytes.data() + sent, std::min<size_t>(n - sent, 65536), MSG_NOSIGNAL);
    if (k <= 0) break;
    sent += static_cast<size_t>(k);
  }
  ::close(fd);
}

TEST(storage_http, AcknowledgedCheckpointsSurviveKill9MidUploadAndNothingPartialIsReferred) {
  fixture f;
  auto alice = f.op(f.create_operator("alice"));
  auto bundle = f.upload_bundle(alice, random_bytes(2000, 9));
  f.create_job(alice, bundle);
  auto w = f.register_worker();
  auto job = f.poll(w);
  ASSERT_FALSE(job.empty());
  std::vector<std::pair<std::string, std::string>> acknowledged;  // set id, its file's bytes
  for (int round = 0; round < 3; ++round) {
    const std::string bytes = random_bytes(400000, 100 + round);
    auto done = f.checkpoint(w, job, {{"state.chk", bytes}});
    ASSERT_EQ(done.status, 200) << done.raw;
    acknowledged.emplace_back(done.body["set_id"], bytes);
    // The next checkpoint's upload is cut in the middle by kill -9.
    const std::string next = random_bytes(600000, 200 + round);
    auto set = f.call(w.h, "POST", "/jobs/" + job + "/files",
                      {{"kind", "checkpoint"},
                       {"attempt", 1},
                       {"files", {{{"path", "state.chk"}, {"sha256", sha_hex(next)}, {"size", next.size()}}}}});
    ASSERT_EQ(set.status, 200) << set.raw;
    const std::string url = set.body["uploads"][0]["parts"][0]["url"];
    const std::string upload_id = set.body["uploads"][0]["upload_id"];
    std::thread sender([&] { send_part(f.d.port(), url, w.h.begin()->second, next, next.size() / 2); });
    // Killed once the incoming file has grown (some bytes are on disk, the rest never come).
    const std::string incoming = f.dir / "data/blobs/incoming/" + upload_id;
    EXPECT_TRUE(test::wait_until([&] { return std::filesystem::exists(incoming) && std::filesystem::file_size(incoming) > 0; },
                                 std::chrono::seconds(20)));
    f.d.kill();
    sender.join();
    f.d.start();
    // Every acknowledged checkpoint is there (the newest two kept) and each verifies.
    auto files = f.call(alice, "GET", "/jobs/" + job + "/files");
    ASSERT_EQ(files.status, 200) << files.raw;
    std::set<std::string> listed;
    for (const auto& s : files.body["checkpoints"]) {
      listed.insert(s["set_id"]);
      for (const auto& file : s["files"]) {
        auto got = f.get_bytes(alice, file["download"]["url"]);
        ASSERT_EQ(got.status, 200);
        EXPECT_EQ(sha_hex(got.raw), file["sha256"]);
      }
    }
    for (size_t i = acknowledged.size() >= 2 ? acknowledged.size() - 2 : 0; i < acknowledged.size(); ++i)
      EXPECT_TRUE(listed.count(acknowledged[i].first)) << "acknowledged checkpoint " << i << " kept";
    // Nothing partial is referred to: every blob file on disk hashes to its name.
    for (const auto& e : std::filesystem::recursive_directory_iterator(f.dir / "data/blobs/sha256"))
      if (e.is_regular_file()) {
        std::ifstream in(e.path(), std::ios::binary);
        std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_EQ(sha_hex(data), e.path().filename().string());
      }
    // The interrupted upload resumes from what batond holds (the worker's own token is still good).
    auto again = f.call(w.h, "POST", "/jobs/" + job + "/files",
                        {{"kind", "checkpoint"},
                         {"attempt", 1},
                         {"files", {{{"path", "state.chk"}, {"sha256", sha_hex(next)}, {"size", next.size()}}}}});
    ASSERT_EQ(again.status, 200) << again.raw;
    const auto& part = again.body["uploads"][0]["parts"][0];
    auto offset = part["offset"].get<uint64_t>();
    EXPECT_EQ(again.body["uploads"][0]["upload_id"], upload_id) << "the same upload, after a restart";
    EXPECT_EQ(f.put(w.h, part["url"].get<std::string>() + "?offset=" + std::to_string(offset), next.substr(offset)).status, 200);
    auto committed =
        f.call(w.h, "POST", "/jobs/" + job + "/files/" + again.body["set_id"].get<std::string>() + "/commit", json::object());
    ASSERT_EQ(committed.status, 200) << committed.raw;
    acknowledged.emplace_back(committed.body["set_id"], next);
  }
  f.d.stop();
  test::child_process verify({BATOND_PATH, "--data-dir", f.dir / "data", "--verify"}, f.dir / "verify",
                             {"BATON_CONFIG=/dev/null", "BATON_DATA_DIR="});
  EXPECT_EQ(test::exit_code(verify.wait()), 0) << verify.err();
  // What was kept and released re-derives from the log (baton-replay rederive).
  auto report = test::rederive_report(f.dir / "data", f.dir / "rederive");
  EXPECT_EQ(report.value("mismatches", -1), 0) << report.dump(1);
  EXPECT_GE(report.value("storage_decisions", 0), 6) << report.dump(1);
}

}  // namespace
