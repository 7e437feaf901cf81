// The CLI's side of stored bundles and outputs without a batond: what `baton submit` packs (and
// that the worker unpacks it as it was), and what `baton jobs fetch` refuses to write, against
// a stand-in for GET /jobs/{id}/files on loopback.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/bundles.hpp"
#include "core/util/sha256.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_until.hpp"
#include "worker/bundle_archive.hpp"

using namespace baton;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string sha_of(const std::string& bytes) {
  baton::util::sha256_stream h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

TEST(cli_bundles, APackedDirectoryUnpacksToTheSameTreeWithoutTheWorkersDirsOrLinks) {
  test::temp_dir dir;
  auto src = dir / "bundle";
  fs::create_directories(src + "/sub/deeper");
  fs::create_directories(src + "/.baton-checkpoints/job");
  fs::create_directories(src + "/.baton-failures/job");
  std::ofstream(src + "/baton-job.json") << R"({"command":"sh run.sh"})";
  std::ofstream(src + "/run.sh") << "echo hi\n";
  std::ofstream(src + "/sub/deeper/data.bin", std::ios::binary) << std::string(300000, 'x') << "end";
  std::ofstream(src + "/.baton-checkpoints/job/manifest.json") << "{}";
  std::ofstream(src + "/.baton-failures/job/failure.json") << "{}";
  fs::create_symlink("/etc/passwd", src + "/escape");
  auto out = dir / "b.tar.gz";
  auto skipped = cli::pack_directory(src, out);
  EXPECT_EQ(skipped, std::vector<std::string>{"escape"});

  auto unpacked = dir / "unpacked";
  worker::extract_bundle_archive(out, unpacked, {});  // the worker's checks accept every member
  EXPECT_EQ(test::slurp(unpacked + "/run.sh"), "echo hi\n");
  EXPECT_EQ(test::slurp(unpacked + "/sub/deeper/data.bin"), std::string(300000, 'x') + "end");
  EXPECT_TRUE(fs::exists(unpacked + "/baton-job.json"));
  EXPECT_FALSE(fs::exists(unpacked + "/.baton-checkpoints"));
  EXPECT_FALSE(fs::exists(unpacked + "/.baton-failures"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(unpacked + "/escape")));
  // The same tree packs to the same bytes again (sorted, same metadata): a resubmit is deduplicated.
  auto again = dir / "again.tar.gz";
  cli::pack_directory(src, again);
  EXPECT_EQ(xfer::hash_file(out).first, xfer::hash_file(again).first);
}

// GET /jobs/<id>/files answered with the outputs the test sets, and /dl/<name> serving bytes.
struct fake_batond {
  httplib::Server svr;
  std::thread thread;
  int port = 0;
  json outputs;
  std::map<std::string, std::string> blobs;
  fake_batond() {
    svr.Get(R"(/jobs/([\w-]+)/files)", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("X-API-Token") != "op-token") {
        res.status = 401;
        return;
      }
      res.set_content(json{{"input_bundle", nullptr}, {"checkpoints", json::array()}, {"outputs", outputs}}.dump(),
                      "application/json");
    });
    svr.Get(R"(/dl/(\w+))", [this](const httplib::Request& req, httplib::Response& res) {
      res.set_content(blobs[req.matches[1]], "application/octet-stream");
    });
    port = svr.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { svr.listen_after_bind(); });
    // Until its loop runs: a stop() before that would be lost and join() would wait forever.
    EXPECT_TRUE(test::wait_until([this] { return svr.is_running(); }, std::chrono::seconds(10), std::chrono::milliseconds(1)));
  }
  ~fake_batond() {
    svr.stop();
    thread.join();
  }
  json file(const std::string& path, const std::string& name, const std::string& bytes, const std::string& claimed_sha = "") {
    blobs[name] = bytes;
    return {{"path", path},
            {"sha256", claimed_sha.empty() ? sha_of(bytes) : claimed_sha},
            {"size", bytes.size()},
            {"download",
             {{"url", "/dl/" + name}, {"method", "GET"}, {"headers", json::object()}, {"offset", 0}, {"size", bytes.size()}}}};
  }
};

struct fetch : ::testing::Test {
  fetch() { ::signal(SIGPIPE, SIG_IGN); }  // as baton does
  test::temp_dir dir;
  fake_batond b;
  std::ostringstream out, err;
  cli::context c{cli::endpoint{"127.0.0.1", b.port, false, "", "op-token", "carol", ""}, false, out, err};
};

TEST_F(fetch, OutputsLandUnderTheirRelativePathsEachDigestChecked) {
  b.outputs = {{"set_id", "s1"},
               {"files", {b.file("result.txt", "r", "42\n"), b.file("traj/frames.dcd", "t", std::string(200000, 'f'))}}};
  ASSERT_EQ(cli::jobs_fetch(c, "job-1", dir / "got"), 0) << err.str();
  EXPECT_EQ(test::slurp(dir / "got/result.txt"), "42\n");
  EXPECT_EQ(test::slurp(dir / "got/traj/frames.dcd"), std::string(200000, 'f'));
  EXPECT_NE(out.str().find("wrote " + dir / "got/traj/frames.dcd (200000 bytes"), std::string::npos) << out.str();
  EXPECT_FALSE(fs::exists(dir / "got/result.txt.part"));
}

TEST_F(fetch, APathOutsideTheDirectoryIsRefusedBeforeAnythingIsWritten) {
  for (std::string bad : {"../escape.txt", "/etc/evil", "a/../../b", ""}) {
    b.outputs = {{"files", {b.file("fine.txt", "f", "ok"), b.file(bad, "e", "evil")}}};
    err.str("");
    EXPECT_EQ(cli::jobs_fetch(c, "job-2", dir / "refused"), cli::api_error) << bad;
    EXPECT_NE(err.str().find("refusing output path '" + bad + "'"), std::string::npos) << err.str();
    EXPECT_FALSE(fs::exists(dir / "refused")) << "nothing written for " << bad;
  }
  EXPECT_FALSE(fs::exists(dir / "escape.txt"));
}

TEST_F(fetch, ADigestMismatchNamesTheFileAndExitsNonZero) {
  b.outputs = {{"files", {b.file("good.txt", "g", "good"), b.file("bad.txt", "x", "tampered", sha_of("original!"))}}};
  EXPECT_EQ(cli::jobs_fetch(c, "job-3", dir / "mm"), cli::api_error);
  EXPECT_NE(err.str().find(dir / "mm/bad.txt"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("digest mismatch"), std::string::npos) << err.str();
  EXPECT_FALSE(fs::exists(dir / "mm/bad.txt"));
  EXPECT_FALSE(fs::exists(dir / "mm/bad.txt.part"));
}

TEST_F(fetch, AJobWithoutOutputsSaysSo) {
  b.outputs = nullptr;
  EXPECT_EQ(cli::jobs_fetch(c, "job-4", dir / "none"), cli::api_error);
  EXPECT_NE(err.str().find("job job-4 has no stored outputs"), std::string::npos) << err.str();
}

}  // namespace
