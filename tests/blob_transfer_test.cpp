// The local backend's transfers over real HTTP on loopback (http/blob_routes, the Beast
// session's streamed bodies, http/storage/local_backend): the server runs in this process with
// batond's credential check, and the test makes grants on the backend object itself, as the
// JSON routes do. Uploads whole, cut and resumed, refused (offset, size, digest, credential,
// expiry) before a byte is written; Range downloads; a blob damaged on disk never arriving
// whole; and the memory a 64 MiB upload takes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "core/world/world.hpp"
#include "http/api_routes.hpp"
#include "http/beast_server.hpp"
#include "http/blob_routes.hpp"
#include "http/caller.hpp"
#include "http/health_routes.hpp"
#include "http/storage/local_backend.hpp"
#include "actors/caches/worker_credentials.hpp"
#include "support/raw_client.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_until.hpp"

namespace {

using baton::storage::local_backend;
using baton::test::raw_client;
using baton::test::wait_until;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::chrono::milliseconds within_10s{10000};
const std::string w1_token = "w1.secret-one", w2_token = "w2.secret-two";
constexpr int64_t minute = 60;

std::string hex_sha256(const std::string& data) {
  unsigned char md[32];
  unsigned len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static const char d[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += {d[md[i] >> 4], d[md[i] & 15]};
  return out;
}

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen());
  return s;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// batond's HTTP layer with the local backend: two registered workers (w1, w2) and the admin
// token; the clock is the test's.
struct blob_server {
  explicit blob_server(size_t chunk = size_t{1} << 20, uint64_t min_free_bytes = 0, std::string tls_dir = "") {
    baton::core::world w;
    w.workers["w1"].credential.sha256 = baton::http::hash_of("secret-one");
    w.workers["w2"].credential.sha256 = baton::http::hash_of("secret-two");
    auto creds = std::make_shared<baton::caches::worker_credentials>();
    creds->rebuild(w);
    ctx.api_token = "admin-token";
    ctx.credentials = creds;
    ctx.clock = [this] { return now.load(); };
    baton::storage::local_options o;
    o.data_dir = dir.path();
    o.min_free_bytes = min_free_bytes;
    o.on_corrupt = [this](const std::string& sha, const std::string& found) {
      std::lock_guard<std::mutex> g(mu);
      corrupt.emplace_back(sha, found);
    };
    blobs = local_backend::open(o);
    ctx.storage = blobs;
    baton::http::beast_server_options so;
    so.transfer_chunk_bytes = chunk;
    if (!tls_dir.empty()) {
      so.tls_cert_file = tls_dir + "/cert.pem";
      so.tls_key_file = tls_dir + "/key.pem";
    }
    so.authenticates = [c = ctx](const baton::http::request& head) {
      baton::http::response ignored;
      return baton::http::identify(c, head, ignored).has_value();
    };
    server = std::make_unique<baton::http::beast_server>(so);
    baton::http::add_error_handlers(server->routes());
    baton::http::add_blob_routes(server->routes(), ctx, blobs);
    port = server->start();
  }
  ~blob_server() { server->stop(); }

  std::vector<std::pair<std::string, std::string>> corrupt_reports() {
    std::lock_guard<std::mutex> g(mu);
    return corrupt;
  }

  baton::test::temp_dir dir;
  std::atomic<int64_t> now{1'800'000'000'000'000};
  baton::http::api_context ctx;
  std::shared_ptr<local_backend> blobs;
  std::unique_ptr<baton::http::beast_server> server;
  int port = 0;
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> corrupt;
};

std::string put_head(const std::string& id, uint64_t offset, uint64_t length, const std::string& credential) {
  return "PUT /blobs/uploads/" + id + "?offset=" + std::to_string(offset) + " HTTP/1.1\r\nHost: x\r\n" + credential +
         "Content-Length: " + std::to_string(length) + "\r\n\r\n";
}
std::string worker(const std::string& token) { return "X-Worker-Token: " + token + "\r\n"; }

raw_client::response call(int port, const std::string& bytes) {
  raw_client c(port, 30);
  c.send(bytes);
  return c.next();
}

raw_client::response get(int port, const std::string& path, const std::string& credential, const std::string& extra = "") {
  return call(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + credential + extra + "\r\n");
}

// An upload granted to worker w1; its id and the data.
struct granted {
  std::string id, data, sha;
};
granted grant(blob_server& s, const std::string& id, std::string data, const std::string& who = "worker:w1") {
  std::string sha = hex_sha256(data);
  auto g = s.blobs->grant_upload(who, id, sha, data.size(), s.now, 15 * minute);
  EXPECT_EQ(g.parts.size(), 1u);
  return {id, std::move(data), sha};
}

// Stores data as a blob through the PUT route; its digest.
std::string store(blob_server& s, const std::string& id, const std::string& data) {
  auto g = grant(s, id, data);
  auto r = call(s.port, put_head(id, 0, data.size(), worker(w1_token)) + data);
  EXPECT_EQ(r.status, 200) << r.body;
  return g.sha;
}

TEST(BlobTransfer, WholeUploadIsStoredUnderItsDigest) {
  blob_server s;
  auto g = grant(s, "up-whole", random_bytes(3 * 1024 * 1024 + 17, 1));
  auto r = call(s.port, put_head(g.id, 0, g.data.size(), worker(w1_token)) + g.data);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), (json{{"offset", g.data.size()}, {"complete", true}}));
  const auto path = s.blobs->blob_path(g.sha);
  EXPECT_EQ(path, s.dir.path() + "/blobs/sha256/" + g.sha.substr(0, 2) + "/" + g.sha);
  EXPECT_TRUE(slurp(path) == g.data);
  EXPECT_FALSE(fs::exists(s.blobs->incoming_path(g.id)));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((s.dir.path() + "/blobs/sha256/" + g.sha.substr(0, 2)).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Sent again once stored: complete at once, nothing read or written.
  r = call(s.port, put_head(g.id, 0, g.data.size(), worker(w1_token)) + g.data);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body), (json{{"offset", g.data.size()}, {"complete", true}}));
  EXPECT_FALSE(fs::exists(s.blobs->incoming_path(g.id)));
  EXPECT_EQ(s.blobs->counters().bytes_received.load(), g.data.size());
  EXPECT_EQ(s.blobs->finish_upload(g.id, g.sha, g.data.size(), {}).status, baton::storage::finish_status::stored);
  EXPECT_TRUE(s.blobs->contains(g.sha, g.data.size()));
  // The upload is over: its grant is gone.
  EXPECT_EQ(call(s.port, put_head(g.id, 0, g.data.size(), worker(w1_token)) + g.data).status, 404);
  EXPECT_EQ(s.blobs->counters().bytes_received.load(), g.data.size());
  EXPECT_EQ(s.blobs->counters().uploads_in_flight.load(), 0);
  // Another upload of a blob stored already must still send its bytes: naming a digest proves
  // nothing (else anyone who learnt a digest could read the blob), and it is not stored for it
  // until they arrived.
  auto again = s.blobs->grant_upload("worker:w2", "up-whole-2", g.sha, g.data.size(), s.now, minute);
  EXPECT_EQ(again.have, 0u);
  ASSERT_EQ(again.parts.size(), 1u);
  EXPECT_EQ(s.blobs->finish_upload("up-whole-2", g.sha, g.data.size(), {}).status, baton::storage::finish_status::incomplete);
  auto sent = call(s.port, put_head("up-whole-2", 0, g.data.size(), worker(w2_token)) + g.data);
  ASSERT_EQ(sent.status, 200) << sent.body;
  EXPECT_EQ(s.blobs->finish_upload("up-whole-2", g.sha, g.data.size(), {}).status, baton::storage::finish_status::stored);
  EXPECT_TRUE(slurp(path) == g.data);
}

TEST(BlobTransfer, UploadsKeepTheConnectionForTheNextRequest) {
  blob_server s(64 * 1024);
  auto a = grant(s, "up-keep-a", random_bytes(200001, 21));
  auto b = grant(s, "up-keep-b", random_bytes(3000, 22));
  raw_client c(s.port);
  // An upload, then a pipelined request in the same write: the body ends where
  // Content-Length says, and what follows is the next request.
  c.send(put_head(a.id, 0, a.data.size(), worker(w1_token)) + a.data + "GET /blobs/uploads/" + b.id + " HTTP/1.1\r\nHost: x\r\n" +
         worker(w1_token) + "\r\n");
  auto r = c.next();
  EXPECT_EQ(r.status, 200) << r.body;
  r = c.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body), (json{{"offset", 0}, {"size", b.data.size()}}));
  // Expect: 100-continue: the body goes once batond has accepted the head.
  c.send("PUT /blobs/uploads/" + b.id + "?offset=0 HTTP/1.1\r\nHost: x\r\n" + worker(w1_token) +
         "Expect: 100-continue\r\nContent-Length: " + std::to_string(b.data.size()) + "\r\n\r\n");
  ASSERT_TRUE(c.read_until("HTTP/1.1 100 Continue\r\n\r\n"));
  EXPECT_EQ(c.next().status, 100);
  c.send(b.data);
  r = c.next();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(s.blobs->contains(a.sha, a.data.size()));
  EXPECT_TRUE(s.blobs->contains(b.sha, b.data.size()));
  // Refused on its head with 100-continue: no body is asked for, and the answer comes.
  auto d = grant(s, "up-keep-d", random_bytes(3000, 23));
  raw_client e(s.port);
  e.send("PUT /blobs/uploads/" + d.id + "?offset=5 HTTP/1.1\r\nHost: x\r\n" + worker(w1_token) +
         "Expect: 100-continue\r\nContent-Length: " + std::to_string(d.data.size() - 5) + "\r\n\r\n");
  r = e.next();
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(json::parse(r.body)["offset"], 0);
}

TEST(BlobTransfer, UploadCutMidwayResumesFromWhatBatondHolds) {
  blob_server s;
  auto g = grant(s, "up-cut", random_bytes(5 * 1024 * 1024 + 3, 2));
  const size_t half = g.data.size() / 2;
  {
    raw_client c(s.port);
    c.send(put_head(g.id, 0, g.data.size(), worker(w1_token)) + g.data.substr(0, half));
  }  // the client closes with half the body sent
  // What batond holds, as the client asks for it: every byte sent, once it is written.
  json held;
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = get(s.port, "/blobs/uploads/" + g.id, worker(w1_token));
        held = r.status == 200 ? json::parse(r.body) : json();
        return held.value("offset", uint64_t{0}) == half && s.blobs->counters().uploads_in_flight == 0;
      },
      within_10s))
      << held.dump();
  EXPECT_EQ(held["size"], g.data.size());
  EXPECT_FALSE(s.blobs->contains(g.sha, g.data.size()));
  EXPECT_EQ(s.blobs->finish_upload(g.id, g.sha, g.data.size(), {}).status, baton::storage::finish_status::incomplete);
  auto r = call(s.port, put_head(g.id, half, g.data.size() - half, worker(w1_token)) + g.data.substr(half));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["complete"], true);
  EXPECT_TRUE(slurp(s.blobs->blob_path(g.sha)) == g.data);
  EXPECT_FALSE(fs::exists(s.blobs->incoming_path(g.id)));
}

TEST(BlobTransfer, ResumeAfterARestartRehashesWhatIsHeld) {
  blob_server s;
  auto g = grant(s, "up-restart", random_bytes(2 * 1024 * 1024 + 5, 3));
  const size_t part = 1024 * 1024 + 100;
  // What an earlier run of batond left: a prefix in the incoming file, no hash in memory.
  { std::ofstream(s.blobs->incoming_path(g.id), std::ios::binary) << g.data.substr(0, part); }
  auto again = s.blobs->grant_upload("worker:w1", g.id, g.sha, g.data.size(), s.now, minute);
  ASSERT_EQ(again.have, part);
  EXPECT_EQ(again.parts.at(0).offset, part);
  EXPECT_EQ(again.parts.at(0).size, g.data.size() - part);
  auto r = call(s.port, put_head(g.id, part, g.data.size() - part, worker(w1_token)) + g.data.substr(part));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(slurp(s.blobs->blob_path(g.sha)) == g.data);
}

TEST(BlobTransfer, WrongOffsetOrSizeIsRefusedWithWhatIsHeld) {
  blob_server s;
  auto g = grant(s, "up-offset", random_bytes(100000, 4));
  auto r = call(s.port, put_head(g.id, 10, g.data.size() - 10, worker(w1_token)) + g.data.substr(10));
  EXPECT_EQ(r.status, 409);
  auto body = json::parse(r.body);
  EXPECT_EQ(body["error"], "upload_offset");
  EXPECT_EQ(body["offset"], 0);
  r = call(s.port, put_head(g.id, 0, 10, worker(w1_token)) + g.data.substr(0, 10));
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(json::parse(r.body)["field"], "Content-Length");
  r = call(s.port, "PUT /blobs/uploads/" + g.id + " HTTP/1.1\r\nHost: x\r\n" + worker(w1_token) + "Content-Length: 3\r\n\r\nabc");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["field"], "offset");
  r = call(s.port, "PUT /blobs/uploads/" + g.id + "?offset=0 HTTP/1.1\r\nHost: x\r\n" + worker(w1_token) +
                       "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 411);
  EXPECT_EQ(s.blobs->counters().bytes_received.load(), 0u);
}

TEST(BlobTransfer, DigestMismatchIsRefusedAndNothingIsStored) {
  blob_server s;
  auto g = grant(s, "up-bad", random_bytes(1500000, 5));
  std::string other = g.data;
  other[777777] ^= 1;
  auto r = call(s.port, put_head(g.id, 0, other.size(), worker(w1_token)) + other);
  EXPECT_EQ(r.status, 422);
  auto body = json::parse(r.body);
  EXPECT_EQ(body["error"], "digest_mismatch");
  EXPECT_EQ(body["complete"], false);
  EXPECT_FALSE(s.blobs->contains(g.sha, g.data.size()));
  EXPECT_FALSE(fs::exists(s.blobs->blob_path(g.sha)));
  EXPECT_FALSE(fs::exists(s.blobs->blob_path(hex_sha256(other))));
  EXPECT_FALSE(fs::exists(s.blobs->incoming_path(g.id)));
  // The upload starts again from 0, and goes through.
  r = call(s.port, put_head(g.id, 0, g.data.size(), worker(w1_token)) + g.data);
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST(BlobTransfer, OnlyTheGrantsHolderMaySendAndNoByteIsWrittenBeforeThat) {
  blob_server s;
  auto g = grant(s, "up-who", random_bytes(200000, 6));
  struct attempt {
    std::string credential;
    int status;
  };
  for (const auto& a : {attempt{worker(w2_token), 403},                                         // another worker
                        attempt{"X-API-Token: admin-token\r\nX-Baton-Operator: ops\r\n", 403},  // an operator
                        attempt{"", 401},                                                       // no credential
                        attempt{worker("w1.forged"), 401},                                      // a forged one
                        attempt{worker("w9.secret-one"), 401}}) {
    auto r = call(s.port, put_head(g.id, 0, g.data.size(), a.credential) + g.data);
    EXPECT_EQ(r.status, a.status) << a.credential << r.body;
    EXPECT_FALSE(fs::exists(s.blobs->incoming_path(g.id))) << a.credential;
  }
  EXPECT_EQ(get(s.port, "/blobs/uploads/" + g.id, worker(w2_token)).status, 403);
  EXPECT_EQ(get(s.port, "/blobs/uploads/" + g.id, "").status, 401);
  EXPECT_EQ(s.blobs->counters().bytes_received.load(), 0u);
  // An operator's grant is the operator's.
  auto op = grant(s, "up-op", random_bytes(1000, 7), "operator:ops");
  auto r = call(s.port, put_head(op.id, 0, op.data.size(), "X-API-Token: admin-token\r\nX-Baton-Operator: ops\r\n") + op.data);
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST(BlobTransfer, ExpiredGrantsAreUnknown) {
  blob_server s;
  auto g = grant(s, "up-old", random_bytes(5000, 8));
  const std::string sha = store(s, "up-stored", random_bytes(4000, 9));
  auto d = s.blobs->grant_download("worker:w1", sha, 4000, s.now, minute);
  s.now += 16 * minute * 1'000'000;  // past both grants' expiry
  auto r = call(s.port, put_head(g.id, 0, g.data.size(), worker(w1_token)) + g.data);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"], "upload_unknown");
  EXPECT_EQ(get(s.port, "/blobs/uploads/" + g.id, worker(w1_token)).status, 404);
  r = get(s.port, d.url, worker(w1_token));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"], "download_unknown");
  EXPECT_FALSE(fs::exists(s.blobs->incoming_path(g.id)));
}

TEST(BlobTransfer, RangeDownloads) {
  blob_server s(64 * 1024);
  const std::string data = random_bytes(300000, 10);
  const std::string sha = store(s, "up-range", data);
  auto d = s.blobs->grant_download("worker:w1", sha, data.size(), s.now, minute);
  EXPECT_EQ(d.url.size(), std::string("/blobs/downloads/").size() + 32);
  const std::string size = std::to_string(data.size());

  auto r = get(s.port, d.url, worker(w1_token));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == data);
  EXPECT_EQ(r.header("ETag"), "\"" + sha + "\"");

  r = get(s.port, d.url, worker(w1_token), "Range: bytes=0-99\r\n");
  EXPECT_EQ(r.status, 206);
  EXPECT_TRUE(r.body == data.substr(0, 100));
  EXPECT_EQ(r.header("Content-Range"), "bytes 0-99/" + size);

  r = get(s.port, d.url, worker(w1_token), "Range: bytes=100000-200000\r\n");
  EXPECT_EQ(r.status, 206);
  EXPECT_TRUE(r.body == data.substr(100000, 100001));

  r = get(s.port, d.url, worker(w1_token), "Range: bytes=-500\r\n");
  EXPECT_EQ(r.status, 206);
  EXPECT_TRUE(r.body == data.substr(data.size() - 500));
  EXPECT_EQ(r.header("Content-Range"),
            "bytes " + std::to_string(data.size() - 500) + "-" + std::to_string(data.size() - 1) + "/" + size);

  r = get(s.port, d.url, worker(w1_token), "Range: bytes=299990-\r\n");
  EXPECT_TRUE(r.body == data.substr(299990));

  for (std::string bad :
       std::vector<std::string>{"bytes=" + size + "-", "bytes=10-5", "bytes=-0", "bytes=0-1,5-6", "items=0-1"}) {
    r = get(s.port, d.url, worker(w1_token), "Range: " + bad + "\r\n");
    EXPECT_EQ(r.status, 416) << bad;
    EXPECT_EQ(r.header("Content-Range"), "bytes */" + size) << bad;
  }
  // Several downloads on one keep-alive connection, each one whole.
  raw_client c(s.port);
  for (int i = 0; i < 3; ++i) {
    c.send("GET " + d.url + " HTTP/1.1\r\nHost: x\r\n" + worker(w1_token) + "Range: bytes=" + std::to_string(i) + "-" +
           std::to_string(i + 70000) + "\r\n\r\n");
    auto k = c.next();
    EXPECT_EQ(k.status, 206);
    EXPECT_TRUE(k.body == data.substr(i, 70001));
  }
  EXPECT_EQ(get(s.port, d.url, worker(w2_token)).status, 403);
  EXPECT_EQ(get(s.port, d.url, "").status, 401);
  EXPECT_EQ(get(s.port, "/blobs/downloads/0123456789abcdef0123456789abcdef", worker(w1_token)).status, 404);
  EXPECT_TRUE(s.corrupt_reports().empty());
}

TEST(BlobTransfer, ABlobDamagedOnDiskNeverArrivesWholeAndIsReported) {
  blob_server s(64 * 1024);
  const std::string data = random_bytes(1024 * 1024 + 1000, 11);
  const std::string sha = store(s, "up-damaged", data);
  {  // one byte changes on disk, the size stays
    int fd = ::open(s.blobs->blob_path(sha).c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    char flipped = static_cast<char>(data[1024 * 1024 + 10] ^ 0x40);
    ASSERT_EQ(::pwrite(fd, &flipped, 1, 1024 * 1024 + 10), 1);
    ::close(fd);
  }
  auto d = s.blobs->grant_download("worker:w1", sha, data.size(), s.now, minute);
  raw_client c(s.port, 30);
  c.send("GET " + d.url + " HTTP/1.1\r\nHost: x\r\n" + worker(w1_token) + "\r\n");
  auto r = c.next();  // status 0: the connection closed before Content-Length bytes came
  EXPECT_EQ(r.status, 0);
  ASSERT_TRUE(c.received().find("Content-Length: " + std::to_string(data.size())) != std::string::npos);
  const size_t body_at = c.received().find("\r\n\r\n") + 4;
  EXPECT_LT(c.received().size() - body_at, data.size());
  auto reports = s.corrupt_reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].first, sha);
  std::string damaged = data;
  damaged[1024 * 1024 + 10] ^= 0x40;
  EXPECT_EQ(reports[0].second, hex_sha256(damaged));
  // A blob whose size changed is refused at once.
  ASSERT_EQ(::truncate(s.blobs->blob_path(sha).c_str(), 1000), 0);
  auto t = get(s.port, d.url, worker(w1_token));
  EXPECT_EQ(t.status, 500);
  EXPECT_EQ(json::parse(t.body)["error"], "blob_damaged");
  EXPECT_EQ(s.corrupt_reports().size(), 2u);
}

TEST(BlobTransfer, NoRoomBelowTheReserveKeepsWhatIsHeld) {
  // A reserve no disk has: every upload is short of space.
  blob_server s(size_t{1} << 20, uint64_t{1} << 62);
  auto g = grant(s, "up-full", random_bytes(300000, 14));
  std::ofstream(s.blobs->incoming_path(g.id), std::ios::binary) << g.data.substr(0, 1000);  // held from before
  auto r = call(s.port, put_head(g.id, 1000, g.data.size() - 1000, worker(w1_token)) + g.data.substr(1000));
  EXPECT_EQ(r.status, 507);
  auto body = json::parse(r.body);
  EXPECT_EQ(body["error"], "storage_full");
  EXPECT_EQ(body["offset"], 1000);
  EXPECT_EQ(body["limit"], "event_log.min_free_mb");
  EXPECT_EQ(fs::file_size(s.blobs->incoming_path(g.id)), 1000u);
  EXPECT_EQ(s.blobs->counters().bytes_received.load(), 0u);
}

// One request over TLS (no certificate check: the test's own server); everything the server
// sent until it closed.
std::string over_tls(int port, const std::string& request) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  int fd = baton::test::connect_loopback(port, 30);
  SSL_set_fd(ssl, fd);
  std::string got;
  if (SSL_connect(ssl) == 1) {
    for (size_t at = 0; at < request.size();) {
      int n = SSL_write(ssl, request.data() + at, static_cast<int>(std::min<size_t>(request.size() - at, 1 << 20)));
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    char buf[65536];
    for (int n; (n = SSL_read(ssl, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ::close(fd);
  return got;
}

TEST(BlobTransfer, UploadAndDownloadOverTls) {
  baton::test::temp_dir pki;
  const std::string line = "cd " + pki.path() +
                           " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
                           " -subj /CN=batond -addext subjectAltName=IP:127.0.0.1 -keyout key.pem -out cert.pem"
                           " >openssl.log 2>&1 && chmod 600 key.pem";
  ASSERT_EQ(std::system(line.c_str()), 0) << slurp(pki / "openssl.log");
  blob_server s(64 * 1024, 0, pki.path());
  auto g = grant(s, "up-tls", random_bytes(2 * 1024 * 1024 + 9, 15));
  std::string answer = over_tls(s.port, put_head(g.id, 0, g.data.size(), worker(w1_token) + "Connection: close\r\n") + g.data);
  ASSERT_EQ(answer.substr(0, 12), "HTTP/1.1 200") << answer.substr(0, 300);
  EXPECT_TRUE(s.blobs->contains(g.sha, g.data.size()));
  auto d = s.blobs->grant_download("worker:w1", g.sha, g.data.size(), s.now, minute);
  answer = over_tls(s.port, "GET " + d.url + " HTTP/1.1\r\nHost: x\r\n" + worker(w1_token) + "Connection: close\r\n\r\n");
  ASSERT_EQ(answer.substr(0, 12), "HTTP/1.1 200") << answer.substr(0, 300);
  const size_t body = answer.find("\r\n\r\n") + 4;
  EXPECT_EQ(answer.size() - body, g.data.size());
  EXPECT_TRUE(answer.compare(body, std::string::npos, g.data) == 0);
}

TEST(BlobTransfer, RemoveAndSweep) {
  blob_server s;
  const std::string sha = store(s, "up-remove", random_bytes(1000, 12));
  EXPECT_TRUE(s.blobs->remove(sha));
  EXPECT_FALSE(fs::exists(s.blobs->blob_path(sha)));
  EXPECT_TRUE(s.blobs->remove(sha));  // gone already
  // An incoming file nobody touched for a day goes; a fresh one stays.
  std::ofstream(s.blobs->incoming_path("old"), std::ios::binary) << "abc";
  std::ofstream(s.blobs->incoming_path("fresh"), std::ios::binary) << "abc";
  const int64_t now_s = s.now / 1'000'000;
  timespec times[2] = {{now_s - 2 * 86400, 0}, {now_s - 2 * 86400, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, s.blobs->incoming_path("old").c_str(), times, 0), 0);
  timespec recent[2] = {{now_s - 60, 0}, {now_s - 60, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, s.blobs->incoming_path("fresh").c_str(), recent, 0), 0);
  EXPECT_EQ(s.blobs->sweep(s.now), 1u);
  EXPECT_FALSE(fs::exists(s.blobs->incoming_path("old")));
  EXPECT_TRUE(fs::exists(s.blobs->incoming_path("fresh")));
}

long status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, field.size() + 1, field + ":") == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

TEST(BlobTransfer, A64MiBUploadDoesNotGoThroughMemory) {
  blob_server s;
  const size_t size = size_t{64} << 20;
  // The data: 1 MiB repeated, hashed as it is sent, so the test holds no 64 MiB either.
  const std::string piece = random_bytes(1 << 20, 13);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (size_t i = 0; i < size / piece.size(); ++i) EVP_DigestUpdate(ctx, piece.data(), piece.size());
  unsigned char md[32];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static const char d[] = "0123456789abcdef";
  std::string sha;
  for (unsigned i = 0; i < len; ++i) sha += {d[md[i] >> 4], d[md[i] & 15]};
  s.blobs->grant_upload("worker:w1", "up-big", sha, size, s.now, minute);

  // The peak resident size from here on (writing 5 to clear_refs resets VmHWM).
  { std::ofstream("/proc/self/clear_refs") << "5"; }
  const long before = status_kib("VmRSS");
  raw_client c(s.port, 60);
  c.send(put_head("up-big", 0, size, worker(w1_token)));
  for (size_t i = 0; i < size / piece.size(); ++i) c.send(piece);
  auto r = c.next();
  ASSERT_EQ(r.status, 200) << r.body;
  const long peak = status_kib("VmHWM");
  EXPECT_TRUE(s.blobs->contains(sha, size));
  EXPECT_LT(peak - before, 16 * 1024) << "VmRSS before " << before << " KiB, peak during the upload " << peak << " KiB";

  // And back: a whole download, read as it comes.
  auto g = s.blobs->grant_download("worker:w1", sha, size, s.now, minute);
  { std::ofstream("/proc/self/clear_refs") << "5"; }
  const long before_down = status_kib("VmRSS");
  int fd = baton::test::connect_loopback(s.port, 60);
  ASSERT_GE(fd, 0);
  std::string req = "GET " + g.url + " HTTP/1.1\r\nHost: x\r\n" + worker(w1_token) + "Connection: close\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::vector<char> buf(1 << 16);
  size_t total = 0;
  for (ssize_t n; (n = ::recv(fd, buf.data(), buf.size(), 0)) > 0;) total += static_cast<size_t>(n);
  ::close(fd);
  const long peak_down = status_kib("VmHWM");
  EXPECT_GT(total, size);  // head + every byte
  EXPECT_LT(peak_down - before_down, 16 * 1024) << "download: VmRSS before " << before_down << " KiB, peak " << peak_down;
  EXPECT_EQ(s.blobs->counters().bytes_served.load(), size);
}

}  // namespace
