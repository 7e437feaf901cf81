// The transfer library (worker/transfer.hpp) over real HTTP on loopback: a small httplib
// server plays batond's /blobs routes and a presigned store, and a cutting proxy between it
// and the client drops connections midway. The server is a stand-in for the client's retry
// and resume logic only (docs/storage.md's protocol); batond's own routes are tested against
// batond.
#include <gtest/gtest.h>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "core/util/sha256.hpp"
#include "support/cutting_proxy.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_until.hpp"
#include "worker/transfer.hpp"

using namespace baton;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string sha_of(const std::string& bytes) {
  baton::util::sha256_stream h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

// The stand-in server: blobs to download, local-style uploads (resumable, offset in the
// query, status on GET) and store-style parts (all or nothing, ETag), with faults to inject.
struct fake_server {
  httplib::Server svr;
  int store_port = 0;  // where store URLs point (the proxy in front of this server)
  std::thread thread;
  int port = 0;

  std::mutex m;
  std::map<std::string, std::string> blobs;     // name -> bytes served at /blob/<name>
  int fail_next_with_503 = 0;                   // answer this many requests 503 first
  int busy_next = 0;                            // answer this many local PUTs 409 upload_busy first
  std::set<std::string> damaged;                // blobs answered 500 blob_damaged
  int refuse_store_with_403 = 0;                // answer this many store PUTs 403 (expired)
  std::vector<std::string> ranges;              // Range headers of blob GETs
  std::vector<httplib::Headers> store_headers;  // headers of every store PUT
  std::vector<httplib::Headers> batond_headers;
  struct upload_state {
    std::string held;
    uint64_t size = 0;
    std::string sha256;
    bool complete = false;
  };
  std::map<std::string, upload_state> uploads;
  std::vector<uint64_t> put_offsets;  // ?offset= of every local PUT
  uint64_t bytes_received = 0;        // over all local PUTs
  std::map<int, std::string> parts;   // store part number -> bytes of its last whole PUT
  std::map<int, int> part_attempts;
  // The protocol steps' routes: what they were sent, and faults.
  std::vector<json> bundle_posts, completes, set_posts, commits;
  int commit_conflicts = 0;          // answer this many commits 409 upload_incomplete
  bool bundle_in_two_parts = false;  // POST /blobs/uploads: one multipart upload in two parts
  int complete_404 = 0;              // answer this many completes 404 (batond restarted, lost it)

  bool take_503(httplib::Response& res) {
    std::lock_guard<std::mutex> lock(m);
    if (fail_next_with_503 <= 0) return false;
    --fail_next_with_503;
    res.status = 503;
    res.set_content(R"({"error":"unavailable"})", "application/json");
    return true;
  }

  fake_server() {
    svr.Get(R"(/blob/(\w+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (take_503(res)) return;
      std::lock_guard<std::mutex> lock(m);
      batond_headers.push_back(req.headers);
      ranges.push_back(req.get_header_value("Range"));
      if (damaged.count(req.matches[1])) {
        res.status = 500;
        res.set_content(R"({"error":"blob_damaged","message":"damaged on disk"})", "application/json");
        return;
      }
      auto it = blobs.find(req.matches[1]);
      if (it == blobs.end()) {
        res.status = 404;
        res.set_content(R"({"error":"grant_unknown"})", "application/json");
        return;
      }
      res.set_content(it->second, "application/octet-stream");  // httplib answers a Range with 206
    });
    svr.Get(R"(/blobs/uploads/(\w+))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(m);
      auto it = uploads.find(req.matches[1]);
      if (it == uploads.end()) {
        res.status = 404;
        res.set_content(R"({"error":"upload_unknown"})", "application/json");
        return;
      }
      res.set_content(json{{"offset", it->second.held.size()}, {"size", it->second.size}}.dump(),
                      "application/json");  // as batond
    });
    svr.Put(R"(/blobs/uploads/(\w+))", [this](const httplib::Request& req, httplib::Response& res,
                                              const httplib::ContentReader& reader) {
      if (take_503(res)) {
        reader([](const char*, size_t) { return true; });
        return;
      }
      std::string id = req.matches[1];
      uint64_t offset = std::stoull(req.get_param_value("offset"));
      {
        std::lock_guard<std::mutex> lock(m);
        batond_headers.push_back(req.headers);
        put_offsets.push_back(offset);
        if (busy_next > 0) {
          --busy_next;
          res.status = 409;
          res.set_content(R"({"error":"upload_busy"})", "application/json");
          return;
        }
        auto it = uploads.find(id);
        if (it == uploads.end()) {
          res.status = 404;
          res.set_content(R"({"error":"upload_unknown"})", "application/json");
          return;
        }
        if (offset != it->second.held.size()) {
          res.status = 409;
          res.set_content(json{{"error", "upload_offset"}, {"offset", it->second.held.size()}}.dump(), "application/json");
          return;
        }
      }
      reader([&](const char* d, size_t n) {  // kept as it arrives: a cut keeps what came
        std::lock_guard<std::mutex> lock(m);
        uploads[id].held.append(d, n);
        bytes_received += n;
        return true;
      });
      std::lock_guard<std::mutex> lock(m);
      auto& u = uploads[id];
      if (u.held.size() == u.size) {
        if (sha_of(u.held) != u.sha256) {
          u.held.clear();
          res.status = 422;
          res.set_content(R"({"error":"digest_mismatch"})", "application/json");
          return;
        }
        u.complete = true;
        res.set_content(json{{"offset", u.size}, {"complete", true}}.dump(), "application/json");
      } else {
        res.set_content(json{{"offset", u.held.size()}}.dump(), "application/json");
      }
    });
    svr.Put(R"(/store/bucket/key)", [this](const httplib::Request& req, httplib::Response& res,
                                           const httplib::ContentReader& reader) {
      int part = std::stoi(req.get_param_value("partNumber"));
      std::string body;
      bool whole = reader([&](const char* d, size_t n) {
        body.append(d, n);
        return true;
      });
      std::lock_guard<std::mutex> lock(m);
      store_headers.push_back(req.headers);
      ++part_attempts[part];
      if (refuse_store_with_403 > 0) {
        --refuse_store_with_403;
        res.status = 403;
        res.set_content("<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>", "application/xml");
        return;
      }
      if (!whole || body.size() != std::stoull(req.get_header_value("Content-Length"))) return;
      parts[part] = body;
      res.set_header("ETag", "\"etag-" + std::to_string(part) + "\"");
    });
    // POST /blobs/uploads: a one-part store upload (its URL through the same port).
    svr.Post("/blobs/uploads", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(m);
      auto b = json::parse(req.body);
      bundle_posts.push_back(b);
      const std::string store = "http://127.0.0.1:" + std::to_string(store_port) + "/store/bucket/key?partNumber=";
      json parts = json::array();
      if (!bundle_in_two_parts) {
        parts.push_back({{"url", store + "1"}, {"method", "PUT"}, {"offset", 0}, {"size", b["size"]}, {"part_number", 1}});
      } else {  // the same multipart upload each time, signed anew
        const uint64_t size = b["size"], half = size / 2;
        const std::string sig = "&X-Amz-Signature=sig" + std::to_string(bundle_posts.size());
        parts.push_back(
            {{"url", store + "1&uploadId=mp1" + sig}, {"method", "PUT"}, {"offset", 0}, {"size", half}, {"part_number", 1}});
        parts.push_back({{"url", store + "2&uploadId=mp1" + sig},
                         {"method", "PUT"},
                         {"offset", half},
                         {"size", size - half},
                         {"part_number", 2}});
      }
      res.set_content(json{{"status", "upload"},
                           {"upload_id", "up" + std::to_string(bundle_posts.size())},
                           {"sha256", b["sha256"]},
                           {"size", b["size"]},
                           {"parts", parts}}
                          .dump(),
                      "application/json");
    });
    svr.Post(R"(/blobs/uploads/(\w+)/complete)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(m);
      completes.push_back({{"id", req.matches[1]}, {"body", json::parse(req.body)}});
      if (complete_404 > 0) {
        --complete_404;
        res.status = 404;
        res.set_content(R"({"error":"upload_unknown"})", "application/json");
        return;
      }
      res.set_content(R"({"status":"stored"})", "application/json");
    });
    // POST /jobs/j/files: uploads (local style) for the files whose digest is not in `uploads` yet.
    svr.Post("/jobs/j/files", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(m);
      auto b = json::parse(req.body);
      set_posts.push_back(b);
      json ups = json::array();
      for (const auto& f : b["files"]) {
        std::string sha = f["sha256"];
        auto id = sha.substr(0, 12);
        if (uploads.count(id) && uploads[id].complete) continue;  // held: not asked again
        uploads[id] = {"", f["size"].get<uint64_t>(), sha};
        ups.push_back({{"upload_id", id},
                       {"sha256", sha},
                       {"size", f["size"]},
                       {"parts", {{{"url", "/blobs/uploads/" + id}, {"method", "PUT"}, {"offset", 0}, {"size", f["size"]}}}}});
      }
      res.set_content(json{{"set_id", "set" + std::to_string(set_posts.size())}, {"uploads", ups}}.dump(), "application/json");
    });
    svr.Post(R"(/jobs/j/files/(\w+)/commit)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(m);
      commits.push_back(json::parse(req.body));
      if (commit_conflicts > 0) {
        --commit_conflicts;
        res.status = 409;
        res.set_content(R"({"error":"upload_incomplete"})", "application/json");
        return;
      }
      res.set_content(json{{"set_id", req.matches[1]}, {"status", "stored"}}.dump(), "application/json");
    });
    port = svr.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { svr.listen_after_bind(); });
    // Until its loop runs: a stop() before that would be lost and join() would wait forever.
    EXPECT_TRUE(test::wait_until([this] { return svr.is_running(); }, std::chrono::seconds(10), std::chrono::milliseconds(1)));
  }
  ~fake_server() {
    svr.stop();
    thread.join();
  }
};

struct transfer_test : ::testing::Test {
  test::temp_dir dir;
  fake_server server;
  test::cutting_proxy proxy{server.port};
  xfer::link l;

  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // as baton-worker and baton do (worker/transfer.hpp)
    server.store_port = proxy.port();
    l.base_url = "http://127.0.0.1:" + std::to_string(proxy.port());
    l.credential = {{"X-Worker-Token", "worker-secret"}};
    l.attempts = 6;
    l.base_seconds = 0.01;
    l.max_seconds = 0.05;
  }
  std::string write_file(const std::string& name, const std::string& bytes) {
    auto p = dir / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  xfer::transfer get_transfer(const std::string& url, uint64_t size) {
    return xfer::transfer_from_json({{"url", url}, {"method", "GET"}, {"headers", json::object()}, {"offset", 0}, {"size", size}},
                                    "test");
  }
};

TEST_F(transfer_test, ADownloadCutMidwayResumesWithARangeAndIsVerified) {
  const auto blob = random_bytes(3 << 20, 1);
  server.blobs["b1"] = blob;
  // The first connection dies after 1.5 MiB from the server: the worker has written 1 MiB and
  // holds the rest (it writes 1 MiB at a time), which must be on disk before it resumes.
  proxy.push({0, (3 << 20) / 2});
  auto out = dir / "b1.out";
  uint64_t last_progress = 0;
  xfer::download(l, get_transfer("/blob/b1", blob.size()), sha_of(blob), blob.size(), out,
                 [&](uint64_t done, uint64_t) { last_progress = done; });
  EXPECT_EQ(test::slurp(out), blob);
  EXPECT_EQ(last_progress, blob.size());
  EXPECT_EQ(proxy.cuts(), 1);
  ASSERT_EQ(server.ranges.size(), 2u);
  EXPECT_EQ(server.ranges[0], "");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(server.ranges[1], m, std::regex(R"(bytes=(\d+)-(\d+))"))) << server.ranges[1];
  EXPECT_GT(std::stoull(m[1]), 0u) << "resumed, not restarted";
  EXPECT_LT(std::stoull(m[1]), blob.size());
  EXPECT_EQ(std::stoull(m[2]), blob.size() - 1);
  for (const auto& h : server.batond_headers)
    EXPECT_EQ(h.find("X-Worker-Token")->second, "worker-secret") << "batond gets the credential";
}

TEST_F(transfer_test, ADownloadWhoseBytesDoNotHashToTheDigestFailsAndLeavesNoFile) {
  server.blobs["b2"] = random_bytes(100000, 2);
  auto out = dir / "b2.out";
  try {
    xfer::download(l, get_transfer("/blob/b2", 100000), sha_of("something else"), 100000, out);
    FAIL() << "a wrong digest was accepted";
  } catch (const xfer::transfer_error& e) {
    EXPECT_EQ(e.kind, xfer::failure::mismatch) << e.what();
    EXPECT_NE(std::string(e.what()).find(sha_of("something else")), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
  // The wrong size is refused too, before the digest.
  EXPECT_THROW(xfer::download(l, get_transfer("/blob/b2", 99999), sha_of(server.blobs["b2"]), 99999, out), xfer::transfer_error);
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(transfer_test, FiveHundredsAreRetriedUntilTheAnswerIsWholeAndGiveUpAfterTheAttempts) {
  const auto blob = random_bytes(5000, 3);
  server.blobs["b3"] = blob;
  server.fail_next_with_503 = 2;
  auto out = dir / "b3.out";
  xfer::download(l, get_transfer("/blob/b3", blob.size()), sha_of(blob), blob.size(), out);
  EXPECT_EQ(test::slurp(out), blob);
  EXPECT_EQ(server.fail_next_with_503, 0);

  server.fail_next_with_503 = 100;
  try {
    xfer::download(l, get_transfer("/blob/b3", blob.size()), sha_of(blob), blob.size(), out);
    FAIL();
  } catch (const xfer::transfer_error& e) {
    EXPECT_EQ(e.kind, xfer::failure::unavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find("503"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.fail_next_with_503, 100 - l.attempts);
}

TEST_F(transfer_test, AnUnknownGrantOrUploadIsAnExpiredTransfer) {
  try {
    xfer::download(l, get_transfer("/blob/gone", 10), sha_of("x"), 10, dir / "gone");
    FAIL();
  } catch (const xfer::transfer_error& e) {
    EXPECT_EQ(e.kind, xfer::failure::expired) << e.what();
    EXPECT_EQ(e.status, 404);
  }
  auto file = write_file("u0", "0123456789");
  xfer::upload_grant g{
      "nosuch",
      sha_of("0123456789"),
      10,
      {xfer::transfer_from_json({{"url", "/blobs/uploads/nosuch"}, {"method", "PUT"}, {"offset", 0}, {"size", 10}}, "t")}};
  try {
    xfer::upload(l, g, file);
    FAIL();
  } catch (const xfer::transfer_error& e) {
    EXPECT_EQ(e.kind, xfer::failure::expired) << e.what();
    EXPECT_EQ(e.error_code(), "upload_unknown");
  }
}

TEST_F(transfer_test, AnUploadCutAfterSomeBytesResumesFromTheOffsetBatondHolds) {
  const auto blob = random_bytes(4 << 20, 4);
  auto file = write_file("u1", blob);
  server.uploads["u1"] = {"", blob.size(), sha_of(blob)};
  proxy.push({(1 << 20) + 300, 0});  // the first PUT dies after about 1 MiB of its body
  auto g = xfer::upload_from_json(
      {{"upload_id", "u1"},
       {"sha256", sha_of(blob)},
       {"size", blob.size()},
       {"parts",
        {{{"url", "/blobs/uploads/u1"}, {"method", "PUT"}, {"headers", json::object()}, {"offset", 0}, {"size", blob.size()}}}}},
      "test");
  auto etags = xfer::upload(l, g, file);
  EXPECT_TRUE(etags.empty()) << "a local upload has no parts to name";
  EXPECT_EQ(proxy.cuts(), 1);
  std::lock_guard<std::mutex> lock(server.m);
  EXPECT_TRUE(server.uploads["u1"].complete);
  EXPECT_EQ(server.uploads["u1"].held, blob);
  ASSERT_GE(server.put_offsets.size(), 2u);
  EXPECT_EQ(server.put_offsets.front(), 0u);
  EXPECT_GT(server.put_offsets.back(), 0u) << "the second PUT starts where batond's bytes end";
  EXPECT_LT(server.bytes_received, blob.size() + blob.size() / 2) << "not sent again from the start";
}

TEST_F(transfer_test, AnEmptyFileGoesUpAndComesDown) {
  auto file = write_file("empty", "");
  server.uploads["e0"] = {"", 0, sha_of("")};
  auto g = xfer::upload_from_json({{"upload_id", "e0"},
                                   {"sha256", sha_of("")},
                                   {"size", 0},
                                   {"parts", {{{"url", "/blobs/uploads/e0"}, {"method", "PUT"}, {"offset", 0}, {"size", 0}}}}},
                                  "test");
  xfer::upload(l, g, file);
  {
    std::lock_guard<std::mutex> lock(server.m);
    EXPECT_TRUE(server.uploads["e0"].complete);
  }
  server.blobs["e0"] = "";
  xfer::download(l, get_transfer("/blob/e0", 0), sha_of(""), 0, dir / "e0.out");
  EXPECT_TRUE(fs::exists(dir / "e0.out"));
  EXPECT_EQ(fs::file_size(dir / "e0.out"), 0u);
}

TEST_F(transfer_test, BytesHeldButNotVerifiedAreFinishedWithAnEmptyPutAtTheEnd) {
  // batond stopped between the last byte and its check: it holds them all, unverified.
  const auto blob = random_bytes(20000, 13);
  auto file = write_file("held", blob);
  server.uploads["held"] = {blob, blob.size(), sha_of(blob), false};
  auto g = xfer::upload_from_json(
      {{"upload_id", "held"},
       {"sha256", sha_of(blob)},
       {"size", blob.size()},
       {"parts", {{{"url", "/blobs/uploads/held"}, {"method", "PUT"}, {"offset", 0}, {"size", blob.size()}}}}},
      "test");
  xfer::upload(l, g, file);
  std::lock_guard<std::mutex> lock(server.m);
  EXPECT_EQ(server.put_offsets, (std::vector<uint64_t>{0, blob.size()}));
  EXPECT_TRUE(server.uploads["held"].complete);
  EXPECT_EQ(server.bytes_received, 0u) << "nothing sent again";
}

TEST_F(transfer_test, AConflictingOffsetIsCorrectedFromTheConflictAnswer) {
  const auto blob = random_bytes(300000, 5);
  auto file = write_file("u2", blob);
  server.uploads["u2"] = {blob.substr(0, 1234), blob.size(), sha_of(blob)};  // an earlier attempt's bytes
  auto g = xfer::upload_from_json(
      {{"upload_id", "u2"},
       {"sha256", sha_of(blob)},
       {"size", blob.size()},
       {"parts", {{{"url", "/blobs/uploads/u2?offset=0"}, {"method", "PUT"}, {"offset", 0}, {"size", blob.size()}}}}},
      "test");
  xfer::upload(l, g, file);
  std::lock_guard<std::mutex> lock(server.m);
  EXPECT_EQ(server.put_offsets, (std::vector<uint64_t>{0, 1234}));
  EXPECT_EQ(server.uploads["u2"].held, blob);
  EXPECT_TRUE(server.uploads["u2"].complete);
}

TEST_F(transfer_test, ABusyUploadIsTriedAgainAndADamagedBlobIsAMismatchAtOnce) {
  const auto blob = random_bytes(5000, 12);
  auto file = write_file("busy", blob);
  server.uploads["busy"] = {"", blob.size(), sha_of(blob)};
  server.busy_next = 2;  // the previous, cut connection still holds it
  auto g = xfer::upload_from_json(
      {{"upload_id", "busy"},
       {"sha256", sha_of(blob)},
       {"size", blob.size()},
       {"parts", {{{"url", "/blobs/uploads/busy"}, {"method", "PUT"}, {"offset", 0}, {"size", blob.size()}}}}},
      "test");
  xfer::upload(l, g, file);
  {
    std::lock_guard<std::mutex> lock(server.m);
    EXPECT_TRUE(server.uploads["busy"].complete);
    EXPECT_EQ(server.busy_next, 0);
  }
  server.blobs["dmg"] = blob;
  server.damaged.insert("dmg");
  try {
    xfer::download(l, get_transfer("/blob/dmg", blob.size()), sha_of(blob), blob.size(), dir / "dmg");
    FAIL();
  } catch (const xfer::transfer_error& e) {
    EXPECT_EQ(e.kind, xfer::failure::mismatch) << e.what();
  }
  EXPECT_EQ(server.ranges.size(), 1u) << "the damaged blob was not asked for again";
}

TEST_F(transfer_test, ALocalUploadAnswered503IsResumedAfterAskingTheOffset) {
  const auto blob = random_bytes(70000, 6);
  auto file = write_file("u3", blob);
  server.uploads["u3"] = {"", blob.size(), sha_of(blob)};
  server.fail_next_with_503 = 1;
  auto g = xfer::upload_from_json(
      {{"upload_id", "u3"},
       {"sha256", sha_of(blob)},
       {"size", blob.size()},
       {"parts", {{{"url", "/blobs/uploads/u3"}, {"method", "PUT"}, {"offset", 0}, {"size", blob.size()}}}}},
      "test");
  xfer::upload(l, g, file);
  std::lock_guard<std::mutex> lock(server.m);
  EXPECT_TRUE(server.uploads["u3"].complete);
}

TEST_F(transfer_test, StorePartsGoWithoutCredentialsWithTheirHeadersAndACutPartStartsAgain) {
  const auto blob = random_bytes(2 << 20, 7);
  auto file = write_file("s1", blob);
  const std::string store = "http://127.0.0.1:" + std::to_string(proxy.port()) + "/store/bucket/key";
  const uint64_t half = blob.size() / 2;
  auto part = [&](int n, uint64_t offset, uint64_t size) {
    return json{{"url", store + "?partNumber=" + std::to_string(n) + "&uploadId=x&X-Amz-Signature=ab%2Fcd"},
                {"method", "PUT"},
                {"headers", {{"x-amz-meta-test", "yes"}}},
                {"offset", offset},
                {"size", size},
                {"part_number", n}};
  };
  auto g = xfer::upload_from_json({{"upload_id", "s1"},
                                   {"sha256", sha_of(blob)},
                                   {"size", blob.size()},
                                   {"parts", {part(1, 0, half), part(2, half, blob.size() - half)}}},
                                  "test");
  proxy.push({0, 0});         // part 1 whole
  proxy.push({half / 2, 0});  // part 2 cut midway: sent again from its first byte
  auto etags = xfer::upload(l, g, file);
  ASSERT_EQ(etags.size(), 2u);
  EXPECT_EQ(etags[0].part_number, 1);
  EXPECT_EQ(etags[0].etag, "\"etag-1\"");
  EXPECT_EQ(etags[1].part_number, 2);
  EXPECT_EQ(etags[1].etag, "\"etag-2\"");
  std::lock_guard<std::mutex> lock(server.m);
  EXPECT_EQ(server.parts[1], blob.substr(0, half));
  EXPECT_EQ(server.parts[2], blob.substr(half));
  EXPECT_EQ(proxy.cuts(), 1);
  for (const auto& h : server.store_headers) {
    EXPECT_EQ(h.count("X-Worker-Token"), 0u) << "no baton credential to a store";
    EXPECT_EQ(h.count("X-API-Token"), 0u);
    EXPECT_EQ(h.count("Content-Type"), 0u) << "only the transfer's headers";
    ASSERT_EQ(h.count("x-amz-meta-test"), 1u);
    EXPECT_EQ(h.find("x-amz-meta-test")->second, "yes");
  }
}

TEST_F(transfer_test, AStoreThatSaysForbiddenMeansTheTransferExpired) {
  auto file = write_file("s2", "abc");
  server.refuse_store_with_403 = 1;
  auto g =
      xfer::upload_from_json({{"upload_id", "s2"},
                              {"sha256", sha_of("abc")},
                              {"size", 3},
                              {"parts",
                               {{{"url", "http://127.0.0.1:" + std::to_string(proxy.port()) + "/store/bucket/key?partNumber=1"},
                                 {"method", "PUT"},
                                 {"offset", 0},
                                 {"size", 3},
                                 {"part_number", 1}}}}},
                             "test");
  try {
    xfer::upload(l, g, file);
    FAIL();
  } catch (const xfer::transfer_error& e) {
    EXPECT_EQ(e.kind, xfer::failure::expired) << e.what();
    EXPECT_EQ(e.status, 403);
  }
  EXPECT_EQ(xfer::upload(l, g, file).size(), 1u) << "a fresh try goes through";
}

TEST_F(transfer_test, TransfersWithoutAUrlOrWithAForeignSchemeAreRefusedNamingTheField) {
  try {
    xfer::transfer_from_json({{"method", "GET"}}, "checkpoints[0].files[1].download");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoints[0].files[1].download: 'url'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(xfer::transfer_from_json({{"url", "file:///etc/passwd"}}, "x"), std::runtime_error);
  EXPECT_THROW(xfer::transfer_from_json({{"url", "/x"}, {"offset", -1}}, "x"), std::runtime_error);
  EXPECT_THROW(xfer::transfer_from_json({{"url", "/x"}, {"headers", {{"a", 1}}}}, "x"), std::runtime_error);
}

TEST_F(transfer_test, ABundleWhoseStoreTransferExpiredIsAskedForAgainAndCompletedWithItsETags) {
  const auto blob = random_bytes(50000, 8);
  auto file = write_file("bundle.tar.gz", blob);
  server.refuse_store_with_403 = 1;
  EXPECT_FALSE(xfer::store_bundle(l, file, sha_of(blob), blob.size()));
  std::lock_guard<std::mutex> lock(server.m);
  ASSERT_EQ(server.bundle_posts.size(), 2u) << "asked again after the store's 403";
  EXPECT_EQ(server.bundle_posts[0], (json{{"purpose", "bundle"}, {"sha256", sha_of(blob)}, {"size", blob.size()}}));
  ASSERT_EQ(server.completes.size(), 1u);
  EXPECT_EQ(server.completes[0]["id"], "up2");
  EXPECT_EQ(server.completes[0]["body"], (json{{"parts", {{{"part_number", 1}, {"etag", "\"etag-1\""}}}}}));
  EXPECT_EQ(server.parts[1], blob);
  for (const auto& h : server.store_headers) EXPECT_EQ(h.count("X-Worker-Token"), 0u);
}

// batond restarted between the parts and the complete (404): asked again, it hands out the same
// multipart upload (signed anew), and the parts the store answered with an ETag are not sent again.
TEST_F(transfer_test, AMultipartBundleAskedForAgainSendsNoPartTheStoreHolds) {
  const auto blob = random_bytes(300000, 11);
  auto file = write_file("bundle2.tar.gz", blob);
  server.bundle_in_two_parts = true;
  server.complete_404 = 1;
  EXPECT_FALSE(xfer::store_bundle(l, file, sha_of(blob), blob.size()));
  std::lock_guard<std::mutex> lock(server.m);
  EXPECT_EQ(server.bundle_posts.size(), 2u) << "asked again after the 404";
  EXPECT_EQ(server.part_attempts[1], 1) << "part 1 was sent again";
  EXPECT_EQ(server.part_attempts[2], 1) << "part 2 was sent again";
  ASSERT_EQ(server.completes.size(), 2u);
  EXPECT_EQ(server.completes[1]["body"],
            (json{{"parts", {{{"part_number", 1}, {"etag", "\"etag-1\""}}, {{"part_number", 2}, {"etag", "\"etag-2\""}}}}}));
  EXPECT_EQ(server.parts[1] + server.parts[2], blob);
}

TEST_F(transfer_test, AFileSetSendsWhatBatondLacksAndCommitsAgainAfterAnIncompleteAnswer) {
  const auto a = random_bytes(80000, 9), b = random_bytes(1000, 10);
  std::vector<xfer::set_file> files = {{"state.chk", sha_of(a), a.size(), write_file("copy-a", a)},
                                       {"sub/progress.txt", sha_of(b), b.size(), write_file("copy-b", b)}};
  server.uploads[sha_of(b).substr(0, 12)] = {b, b.size(), sha_of(b), true};  // already held
  server.commit_conflicts = 1;
  auto set = xfer::store_file_set(l, "j", "checkpoint", 2, files, {{"progress", 0.5}, {"checkpoint_seconds", 0.1}});
  EXPECT_EQ(set, "set1");
  std::lock_guard<std::mutex> lock(server.m);
  ASSERT_EQ(server.set_posts.size(), 1u);
  const auto& post = server.set_posts[0];
  EXPECT_EQ(post["kind"], "checkpoint");
  EXPECT_EQ(post["attempt"], 2);
  EXPECT_EQ(post["progress"], 0.5) << "the report fields ride along";
  EXPECT_EQ(post["files"], (json{{{"path", "state.chk"}, {"sha256", sha_of(a)}, {"size", a.size()}},
                                 {{"path", "sub/progress.txt"}, {"sha256", sha_of(b)}, {"size", b.size()}}}));
  EXPECT_EQ(server.uploads[sha_of(a).substr(0, 12)].held, a);
  ASSERT_EQ(server.commits.size(), 2u) << "committed again after 409 upload_incomplete";
  EXPECT_EQ(server.commits[1], (json{{"uploads", {{{"upload_id", sha_of(a).substr(0, 12)}, {"parts", json::array()}}}}}));
}

TEST_F(transfer_test, AFileSetThatCannotBeCommittedIsAnErrorNotASilentSuccess) {
  const auto a = random_bytes(1000, 11);
  server.commit_conflicts = 100;
  EXPECT_THROW(xfer::store_file_set(l, "j", "output", 1, {{"r.txt", sha_of(a), a.size(), write_file("r", a)}}),
               xfer::transfer_error);
  // And a batond that is not there is "unavailable", after the link's attempts.
  xfer::link gone = l;
  gone.base_url = "http://127.0.0.1:1";
  gone.attempts = 2;
  try {
    xfer::store_file_set(gone, "j", "checkpoint", 1, {{"r.txt", sha_of(a), a.size(), dir / "r"}});
    FAIL();
  } catch (const xfer::transfer_error& e) {
    EXPECT_EQ(e.kind, xfer::failure::unavailable) << e.what();
  }
}

TEST(transfer_hash, IncrementalHashingMatchesTheKnownDigest) {
  baton::util::sha256_stream h;
  h.update("3", 1);
  h.update("\n", 1);
  EXPECT_EQ(h.hex(), "1121cfccd5913f0a63fec40a6ffd44ea64f9dc135c66634ba001d10bcf4302a2");
}

}  // namespace
