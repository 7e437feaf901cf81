// The S3 backend (http/storage/s3_backend.*) over real HTTP against Ceph's radosgw
// (tests/support/radosgw.sh; Debian 12's package on a one-node in-memory cluster), a store that
// checks signatures, expiry and each URL's key and method: keys, single and multipart uploads,
// verification, copies, Range, refusals, and the upload key that keeps a presigned PUT from
// becoming a copy of another object. tests/s3_sigv4_test.cpp proves the signatures value for value.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>

#include "core/util/sha256.hpp"
#include "http/storage/s3_backend.hpp"
#include "support/free_ports.hpp"
#include "support/process.hpp"
#include "support/radosgw_process.hpp"
#include "support/s3_owner_call.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_until.hpp"

using baton::storage::finish_status;
using baton::storage::part_etag;
using baton::storage::s3_backend;
using baton::storage::transfer;
namespace util = baton::util;

namespace {

constexpr uint64_t mib = 1 << 20;
const char* const bucket = "bkt";

using store = baton::test::radosgw_process;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Bytes that differ from offset to offset, so a part in the wrong place changes the digest.
std::string bytes(uint64_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return s;
}

struct answer {
  int status = 0;
  std::string etag, body;
};

// What a worker does with a transfer: a plain HTTP request to the absolute URL, with exactly
// the transfer's headers and no credential of its own.
answer follow(const transfer& t, const std::string& body = {}, const httplib::Headers& extra = {}) {
  std::smatch m;
  if (!std::regex_match(t.url, m, std::regex("(https?://[^/]+)(/.*)"))) throw std::runtime_error("not an absolute URL: " + t.url);
  httplib::Client cli(m[1].str());
  cli.set_url_encode(false);  // the URL is encoded as it was signed
  cli.set_connection_timeout(5, 0);
  cli.set_read_timeout(30, 0);
  httplib::Headers h = extra;
  for (const auto& [n, v] : t.headers) h.emplace(n, v);
  auto r = t.method == "PUT" ? cli.Put(m[2].str().c_str(), h, body, "application/octet-stream") : cli.Get(m[2].str().c_str(), h);
  if (!r) return {};
  return {r->status, r->get_header_value("ETag"), r->body};
}

class s3_backend_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new store(bucket, /*upload_key=*/true); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr) << "radosgw did not start (see SetUpTestSuite's failure)"; }
  void TearDown() override {
    if (HasFailure() && server_) std::cerr << "radosgw.sh's output:\n" << server_->log() << "\n";
  }

  // Each test its own prefix, so no test sees another's objects; uploads presigned with the
  // write-only upload key, as docs/storage.md asks.
  baton::config::s3_config config(int port = 0) const {
    baton::config::s3_config c;
    c.endpoint = "http://127.0.0.1:" + std::to_string(port ? port : server_->port());
    c.bucket = bucket;
    c.prefix = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "/";
    c.access_key_id = store::owner_key_id;
    c.secret_access_key = store::owner_secret;
    c.upload_access_key_id = store::upload_key_id;
    c.upload_secret_access_key = store::upload_secret;
    c.part_size_mb = 5;            // the least S3 takes
    c.multipart_threshold_mb = 8;  // 12 MiB goes in parts of 5, 5 and 2 MiB
    c.url_expiry_seconds = 300;
    return c;
  }
  // The status a presigned GET of `key` gets (and its body).
  answer get_key(s3_backend& b, const std::string& key) {
    transfer t;
    t.url = b.presign_url("GET", key, {}, {}, now_us(), 60);
    t.method = "GET";
    return follow(t);
  }

  // A bucket policy set and removed by the owner.
  static int put_policy(s3_backend& b, const std::string& policy) {
    auto r = baton::test::s3_owner_call(b, "PUT", "", {{"policy", ""}}, policy);
    return r ? r->status : 0;
  }
  static int delete_policy(s3_backend& b) {
    auto r = baton::test::s3_owner_call(b, "DELETE", "", {{"policy", ""}});
    return r ? r->status : 0;
  }
  // Every part of a grant sent, as a worker does; their ETags into `etags`.
  static void send_parts(const baton::storage::upload_grant& g, const std::string& data, std::vector<part_etag>& etags) {
    for (const auto& p : g.parts) {
      auto a = follow(p, data.substr(p.offset, p.size));
      ASSERT_EQ(a.status, 200) << a.body;
      ASSERT_FALSE(a.etag.empty());
      etags.push_back({p.part_number, a.etag});
    }
  }

  static store* server_;
};
store* s3_backend_test::server_ = nullptr;

}  // namespace

TEST_F(s3_backend_test, single_put_is_stored_under_its_digest_and_the_staging_key_is_gone) {
  s3_backend b(config());
  const std::string data = bytes(1 * mib + 17, 1), digest = util::sha256_hex(data);
  auto g = b.grant_upload("worker:w1", "up-1", digest, data.size(), now_us(), 600);
  ASSERT_EQ(g.parts.size(), 1u);
  EXPECT_NE(g.parts[0].url.find("/" + std::string(bucket) + "/" + b.staging_key("up-1") + "?"), std::string::npos)
      << g.parts[0].url;
  EXPECT_EQ(g.parts[0].size, data.size());
  ASSERT_EQ(follow(g.parts[0], data).status, 200);
  EXPECT_FALSE(b.contains(digest, data.size()));  // not before batond checked and copied it

  auto f = b.finish_upload("up-1", digest, data.size(), {});
  ASSERT_EQ(f.status, finish_status::stored) << f.detail;
  EXPECT_TRUE(b.contains(digest, data.size()));
  EXPECT_FALSE(b.contains(digest, data.size() + 1));
  EXPECT_EQ(get_key(b, b.staging_key("up-1")).status, 404);
  auto blob = get_key(b, b.blob_key(digest));
  EXPECT_EQ(blob.status, 200);
  EXPECT_TRUE(blob.body == data) << "the stored blob differs from what was uploaded";
  // Finished again with nothing staged: incomplete, though the blob is there (the routes answer
  // a retried commit without asking the backend; knowing a digest is not having its bytes).
  auto again = b.finish_upload("up-1", digest, data.size(), {});
  EXPECT_EQ(again.status, finish_status::incomplete) << again.detail;
  auto other = b.finish_upload("up-of-another-user", digest, data.size(), {});
  EXPECT_EQ(other.status, finish_status::incomplete) << other.detail;
}

TEST_F(s3_backend_test, multipart_upload_in_5_mib_parts) {
  s3_backend b(config());
  const std::string data = bytes(12 * mib, 2), digest = util::sha256_hex(data);
  auto g = b.grant_upload("worker:w1", "up-mp", digest, data.size(), now_us(), 600);
  ASSERT_EQ(g.parts.size(), 3u);
  const uint64_t sizes[] = {5 * mib, 5 * mib, 2 * mib};
  std::smatch m;
  ASSERT_TRUE(std::regex_search(g.parts[0].url, m, std::regex("uploadId=([^&]+)")));
  const std::string s3_upload_id = m[1];
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(g.parts[i].part_number, i + 1);
    EXPECT_EQ(g.parts[i].size, sizes[i]);
    EXPECT_EQ(g.parts[i].offset, i * 5 * mib);
    EXPECT_NE(g.parts[i].url.find("uploadId=" + s3_upload_id), std::string::npos);
  }
  // Asked again (a worker that restarted): the same multipart upload, so parts sent stay valid.
  auto again = b.grant_upload("worker:w1", "up-mp", digest, data.size(), now_us(), 600);
  ASSERT_EQ(again.parts.size(), 3u);
  EXPECT_NE(again.parts[2].url.find("uploadId=" + s3_upload_id), std::string::npos);

  std::vector<part_etag> etags;
  ASSERT_NO_FATAL_FAILURE(send_parts(g, data, etags));
  std::swap(etags[0], etags[2]);  // in any order: batond sorts them
  auto f = b.finish_upload("up-mp", digest, data.size(), etags);
  ASSERT_EQ(f.status, finish_status::stored) << f.detail;
  EXPECT_TRUE(b.contains(digest, data.size()));
  EXPECT_EQ(get_key(b, b.staging_key("up-mp")).status, 404);
  EXPECT_TRUE(get_key(b, b.blob_key(digest)).body == data);
}

namespace {
std::string s3_upload_id_of(const transfer& t) {
  std::smatch m;
  return std::regex_search(t.url, m, std::regex("uploadId=([^&]+)")) ? m[1].str() : std::string();
}
}  // namespace

// batond restarted between a worker's parts: the upload asked for again is the same multipart
// upload, so the parts already sent count: found by its record in state_dir (any store), or,
// without one, on the store's list of uploads in progress (where the store keeps one).
TEST_F(s3_backend_test, a_multipart_upload_outlives_a_restart) {
  baton::test::temp_dir state;
  s3_backend::options o;
  o.state_dir = state / "s3-multipart";
  const std::string data = bytes(12 * mib, 9), digest = util::sha256_hex(data);
  std::vector<part_etag> etags;
  std::string first;
  {
    s3_backend before(config(), o);
    auto g = before.grant_upload("worker:w1", "up-restart", digest, data.size(), now_us(), 600);
    ASSERT_EQ(g.parts.size(), 3u);
    first = s3_upload_id_of(g.parts[0]);
    for (size_t i = 0; i < 2; ++i) {
      auto a = follow(g.parts[i], data.substr(g.parts[i].offset, g.parts[i].size));
      ASSERT_EQ(a.status, 200) << a.body;
      etags.push_back({g.parts[i].part_number, a.etag});
    }
    EXPECT_TRUE(std::filesystem::exists(o.state_dir + "/up-restart")) << "the upload in progress is not recorded";
  }
  // Without the record: the store's list of uploads in progress names it.
  s3_backend listing(config());
  auto listed = listing.grant_upload("worker:w1", "up-restart", digest, data.size(), now_us(), 600);
  EXPECT_EQ(s3_upload_id_of(listed.parts[0]), first);

  s3_backend after(config(), o);
  auto g = after.grant_upload("worker:w1", "up-restart", digest, data.size(), now_us(), 600);
  ASSERT_EQ(g.parts.size(), 3u);
  EXPECT_EQ(s3_upload_id_of(g.parts[2]), first);
  auto a = follow(g.parts[2], data.substr(g.parts[2].offset, g.parts[2].size));
  ASSERT_EQ(a.status, 200) << a.body;
  etags.push_back({3, a.etag});
  auto f = after.finish_upload("up-restart", digest, data.size(), etags);
  ASSERT_EQ(f.status, finish_status::stored) << f.detail;
  EXPECT_TRUE(get_key(after, after.blob_key(digest)).body == data);
  EXPECT_FALSE(std::filesystem::exists(o.state_dir + "/up-restart")) << "a finished upload's record stays";
}

TEST_F(s3_backend_test, other_bytes_are_a_digest_mismatch_and_nothing_is_stored) {
  s3_backend b(config());
  const std::string data = bytes(100000, 3), other = bytes(100000, 4), digest = util::sha256_hex(data);
  auto g = b.grant_upload("worker:w1", "up-bad", digest, data.size(), now_us(), 600);
  ASSERT_EQ(follow(g.parts[0], other).status, 200);  // radosgw ignores x-amz-checksum-sha256; AWS would refuse here
  auto f = b.finish_upload("up-bad", digest, data.size(), {});
  EXPECT_EQ(f.status, finish_status::digest_mismatch) << f.detail;
  EXPECT_NE(f.detail.find(util::sha256_hex(other)), std::string::npos) << f.detail;
  EXPECT_FALSE(b.contains(digest, data.size()));
  EXPECT_EQ(get_key(b, b.blob_key(digest)).status, 404);
  EXPECT_EQ(get_key(b, b.staging_key("up-bad")).status, 404);  // discarded
}

// Parts sent to each other's places: the store assembles them as numbered, the digest differs.
TEST_F(s3_backend_test, multipart_parts_swapped_are_a_digest_mismatch) {
  s3_backend b(config());
  const std::string data = bytes(12 * mib, 8), digest = util::sha256_hex(data);
  auto g = b.grant_upload("worker:w1", "up-swap", digest, data.size(), now_us(), 600);
  ASSERT_EQ(g.parts.size(), 3u);
  std::vector<part_etag> etags;
  for (int i = 0; i < 3; ++i) {
    const auto& from = g.parts[i == 0 ? 1 : i == 1 ? 0 : 2];  // parts 1 and 2 (both 5 MiB) swapped
    auto a = follow(g.parts[i], data.substr(from.offset, from.size));
    ASSERT_EQ(a.status, 200) << a.body;
    etags.push_back({g.parts[i].part_number, a.etag});
  }
  auto f = b.finish_upload("up-swap", digest, data.size(), etags);
  EXPECT_EQ(f.status, finish_status::digest_mismatch) << f.detail;
  EXPECT_FALSE(b.contains(digest, data.size()));
  EXPECT_EQ(get_key(b, b.staging_key("up-swap")).status, 404);
}

TEST_F(s3_backend_test, wrong_size_or_nothing_sent_is_incomplete) {
  s3_backend b(config());
  const std::string data = bytes(50000, 5), digest = util::sha256_hex(data);
  auto none = b.finish_upload("up-none", digest, data.size(), {});
  EXPECT_EQ(none.status, finish_status::incomplete) << none.detail;
  EXPECT_NE(none.detail.find("0 of 50000"), std::string::npos) << none.detail;

  auto g = b.grant_upload("worker:w1", "up-short", digest, data.size(), now_us(), 600);
  ASSERT_EQ(follow(g.parts[0], data.substr(0, 40000)).status, 200);
  auto f = b.finish_upload("up-short", digest, data.size(), {});
  EXPECT_EQ(f.status, finish_status::incomplete) << f.detail;
  EXPECT_NE(f.detail.find("40000 of 50000"), std::string::npos) << f.detail;
  EXPECT_FALSE(b.contains(digest, data.size()));
  // Sent again whole, it is stored.
  ASSERT_EQ(follow(g.parts[0], data).status, 200);
  EXPECT_EQ(b.finish_upload("up-short", digest, data.size(), {}).status, finish_status::stored);
}

TEST_F(s3_backend_test, an_expired_url_is_refused_by_the_store) {
  s3_backend b(config());
  const std::string data = "expired", digest = util::sha256_hex(data);
  const int64_t an_hour_ago = now_us() - 3600ll * 1000000;
  auto g = b.grant_upload("worker:w1", "up-old", digest, data.size(), an_hour_ago, 60);
  EXPECT_LT(g.parts[0].expires_at_us, now_us());
  auto put = follow(g.parts[0], data);
  EXPECT_EQ(put.status, 403) << put.body;
  EXPECT_EQ(get_key(b, b.staging_key("up-old")).status, 404);

  // A fresh grant works; an old download grant of the stored blob does not.
  ASSERT_EQ(follow(b.grant_upload("worker:w1", "up-old", digest, data.size(), now_us(), 60).parts[0], data).status, 200);
  ASSERT_EQ(b.finish_upload("up-old", digest, data.size(), {}).status, finish_status::stored);
  EXPECT_EQ(follow(b.grant_download("worker:w1", digest, data.size(), an_hour_ago, 60)).status, 403);
  EXPECT_EQ(follow(b.grant_download("worker:w1", digest, data.size(), now_us(), 60)).status, 200);
}

// A URL names one key and one method, and the signature covers both: the store refuses it for
// another key, another method or with its signature changed, and writes nothing.
TEST_F(s3_backend_test, a_url_is_for_its_own_key_and_method_only) {
  s3_backend b(config());
  const std::string a = "bytes of a", bb = "bytes of b";
  auto ga = b.grant_upload("worker:w1", "up-a", util::sha256_hex(a), a.size(), now_us(), 600);
  auto gb = b.grant_upload("worker:w2", "up-b", util::sha256_hex(bb), bb.size(), now_us(), 600);
  const std::string& ua = ga.parts[0].url;
  EXPECT_NE(ua.find("/" + b.staging_key("up-a") + "?"), std::string::npos) << ua;
  EXPECT_EQ(ua.find("up-b"), std::string::npos) << ua;
  EXPECT_EQ(ua.find("blobs/"), std::string::npos) << "an upload URL must never name a digest's key: " << ua;
  std::smatch sa, sb;
  ASSERT_TRUE(std::regex_search(ua, sa, std::regex("X-Amz-Signature=([0-9a-f]{64})")));
  ASSERT_TRUE(std::regex_search(gb.parts[0].url, sb, std::regex("X-Amz-Signature=([0-9a-f]{64})")));
  EXPECT_NE(sa[1].str(), sb[1].str());
  // up-a's URL sent to up-b's key, and with its signature changed.
  transfer other_key = ga.parts[0];
  other_key.url = std::regex_replace(other_key.url, std::regex("up-a\\?"), "up-b?");
  EXPECT_EQ(follow(other_key, a).status, 403);
  transfer forged = ga.parts[0];
  forged.url = std::regex_replace(forged.url, std::regex("X-Amz-Signature=[0-9a-f]"), "X-Amz-Signature=x");
  EXPECT_EQ(follow(forged, a).status, 403);
  EXPECT_EQ(get_key(b, b.staging_key("up-b")).status, 404);
  // The upload URL used to read.
  transfer as_get = ga.parts[0];
  as_get.method = "GET";
  EXPECT_EQ(follow(as_get).status, 403);
  ASSERT_EQ(follow(ga.parts[0], a).status, 200);
  EXPECT_EQ(get_key(b, b.staging_key("up-a")).body, a);
  EXPECT_EQ(get_key(b, b.staging_key("up-b")).status, 404);
  // A download URL is a GET: the store refuses a PUT with it.
  ASSERT_EQ(b.finish_upload("up-a", util::sha256_hex(a), a.size(), {}).status, finish_status::stored);
  auto d = b.grant_download("worker:w1", util::sha256_hex(a), a.size(), now_us(), 60);
  EXPECT_EQ(d.method, "GET");
  EXPECT_EQ(follow(d).body, a);
  transfer as_put = d;
  as_put.method = "PUT";
  EXPECT_EQ(follow(as_put, "other bytes").status, 403);
  EXPECT_EQ(follow(d).body, a);
}

// The attack the upload key closes: radosgw (like other stores, unlike AWS) takes an unsigned
// x-amz-copy-source on a presigned PUT and copies, server side, an object the URL's key may
// read. An uploader who knows another user's digest would so stage that user's bytes without
// having them, pass the digest check and be recorded as holding the blob. Signed with the
// upload key (write only), both the PUT and the part upload are refused and nothing is staged.
TEST_F(s3_backend_test, an_upload_url_cannot_copy_in_an_object_it_was_not_given) {
  s3_backend b(config());
  const std::string secret = bytes(6 * mib, 11), digest = util::sha256_hex(secret);
  ASSERT_EQ(follow(b.grant_upload("worker:victim", "up-victim", digest, secret.size(), now_us(), 600).parts[0], secret).status,
            200);
  ASSERT_EQ(b.finish_upload("up-victim", digest, secret.size(), {}).status, finish_status::stored);
  const std::string source = "/" + std::string(bucket) + "/" + b.blob_key(digest);

  auto single = b.grant_upload("operator:mallory", "up-mallory", digest, secret.size(), now_us(), 600);
  ASSERT_EQ(single.parts.size(), 1u);
  transfer t = single.parts[0];
  t.headers.clear();  // no checksum: a copy has no body to check it against
  auto copied = follow(t, "", {{"x-amz-copy-source", source}});
  EXPECT_EQ(copied.status, 403) << copied.body;
  EXPECT_EQ(get_key(b, b.staging_key("up-mallory")).status, 404);
  auto f = b.finish_upload("up-mallory", digest, secret.size(), {});
  EXPECT_EQ(f.status, finish_status::incomplete) << f.detail;

  // A part of a multipart upload, turned into UploadPartCopy.
  auto cfg = config();
  cfg.multipart_threshold_mb = 5;
  s3_backend parts(cfg);
  auto mp = parts.grant_upload("operator:mallory", "up-mallory-mp", digest, secret.size(), now_us(), 600);
  ASSERT_EQ(mp.parts.size(), 2u);
  auto part = follow(mp.parts[0], "",
                     {{"x-amz-copy-source", source}, {"x-amz-copy-source-range", "bytes=0-" + std::to_string(5 * mib - 1)}});
  EXPECT_EQ(part.status, 403) << part.body;
}

TEST_F(s3_backend_test, range_get_on_a_presigned_download) {
  s3_backend b(config());
  const std::string data = bytes(4096, 6), digest = util::sha256_hex(data);
  ASSERT_EQ(follow(b.grant_upload("worker:w1", "up-r", digest, data.size(), now_us(), 600).parts[0], data).status, 200);
  ASSERT_EQ(b.finish_upload("up-r", digest, data.size(), {}).status, finish_status::stored);
  auto d = b.grant_download("worker:w1", digest, data.size(), now_us(), 600);
  EXPECT_EQ(d.size, data.size());
  auto part = follow(d, {}, {{"Range", "bytes=1000-1999"}});
  EXPECT_EQ(part.status, 206);
  EXPECT_TRUE(part.body == data.substr(1000, 1000)) << part.body.size() << " bytes";
  auto tail = follow(d, {}, {{"Range", "bytes=4000-"}});
  EXPECT_EQ(tail.status, 206);
  EXPECT_TRUE(tail.body == data.substr(4000));
}

TEST_F(s3_backend_test, remove) {
  s3_backend b(config());
  const std::string data = "to be removed", digest = util::sha256_hex(data);
  ASSERT_EQ(follow(b.grant_upload("worker:w1", "up-x", digest, data.size(), now_us(), 600).parts[0], data).status, 200);
  ASSERT_EQ(b.finish_upload("up-x", digest, data.size(), {}).status, finish_status::stored);
  ASSERT_TRUE(b.contains(digest, data.size()));
  EXPECT_TRUE(b.remove(digest));
  EXPECT_FALSE(b.contains(digest, data.size()));
  EXPECT_EQ(follow(b.grant_download("worker:w1", digest, data.size(), now_us(), 60)).status, 404);
  EXPECT_TRUE(b.remove(digest));  // gone already: still true
}

TEST_F(s3_backend_test, unavailable_when_the_store_is_down) {
  // A port nothing listens on (below the ephemeral range: no connection of another test takes it).
  const int port = baton::test::free_port();
  ASSERT_NE(port, 0);

  s3_backend b(config(port));
  const std::string digest = util::sha256_hex("x");
  auto f = b.finish_upload("up-down", digest, 1, {});
  EXPECT_EQ(f.status, finish_status::unavailable) << f.detail;
  EXPECT_NE(f.detail.find("no answer"), std::string::npos) << f.detail;
  EXPECT_NE(f.detail.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << f.detail;
  EXPECT_FALSE(b.contains(digest, 1));
  EXPECT_FALSE(b.remove(digest));
  try {
    b.grant_upload("worker:w1", "up-down", digest, 20 * mib, now_us(), 600);  // multipart: batond must ask the store
    ADD_FAILURE() << "a multipart grant with the store down did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CreateMultipartUpload"), std::string::npos) << e.what();
  }
  // A single PUT needs no call: the URL is made here (the worker's PUT will fail instead).
  EXPECT_EQ(b.grant_upload("worker:w1", "up-down", digest, 1, now_us(), 600).parts.size(), 1u);
}

// verify: store_checksum needs a store that keeps SHA-256 checksums; radosgw 16 keeps none, and
// the upload is then left unrecorded with a detail that says which setting to change.
TEST_F(s3_backend_test, store_checksum_on_a_store_without_checksums_says_so) {
  auto cfg = config();
  cfg.verify = "store_checksum";
  s3_backend b(cfg);
  const std::string data = "checksummed", digest = util::sha256_hex(data);
  ASSERT_EQ(follow(b.grant_upload("worker:w1", "up-c", digest, data.size(), now_us(), 600).parts[0], data).status, 200);
  auto f = b.finish_upload("up-c", digest, data.size(), {});
  EXPECT_EQ(f.status, finish_status::unavailable) << f.detail;
  EXPECT_NE(f.detail.find("storage.s3.verify"), std::string::npos) << f.detail;
  EXPECT_FALSE(b.contains(digest, data.size()));
}

// Objects above what one CopyObject copies (5 GiB on S3) are copied part by part with
// UploadPartCopy; the limit is lowered here to reach that path.
TEST_F(s3_backend_test, objects_above_the_copy_limit_are_copied_in_parts) {
  s3_backend::options opt;
  opt.max_copy_bytes = 5 * mib;  // the least: parts but the last are 5 MiB at least
  s3_backend b(config(), opt);
  const std::string data = bytes(11 * mib + 5, 7), digest = util::sha256_hex(data);
  auto g = b.grant_upload("worker:w1", "up-big", digest, data.size(), now_us(), 600);
  std::vector<part_etag> etags;
  ASSERT_NO_FATAL_FAILURE(send_parts(g, data, etags));
  auto f = b.finish_upload("up-big", digest, data.size(), etags);
  ASSERT_EQ(f.status, finish_status::stored) << f.detail;
  EXPECT_TRUE(b.contains(digest, data.size()));
  EXPECT_TRUE(get_key(b, b.blob_key(digest)).body == data) << "the copy in parts differs from what was uploaded";
  EXPECT_EQ(get_key(b, b.staging_key("up-big")).status, 404);
}

// A store that refuses the copy (a policy, an outage): unavailable, clearly, and the verified
// upload stays staged for a retry.
TEST_F(s3_backend_test, a_copy_the_store_refuses_leaves_the_upload_staged) {
  s3_backend b(config());
  const std::string data = bytes(3000, 12), digest = util::sha256_hex(data);
  ASSERT_EQ(follow(b.grant_upload("worker:w1", "up-refused", digest, data.size(), now_us(), 600).parts[0], data).status, 200);
  // A blob key the copy cannot write: the bucket's policy denies writes under blobs/ here.
  const std::string policy = R"({"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":["*"]},)"
                             R"("Action":"s3:PutObject","Resource":"arn:aws:s3:::)" +
                             std::string(bucket) + "/" + b.blob_key("") + R"(*"}]})";
  ASSERT_EQ(put_policy(b, policy), 204);
  auto f = b.finish_upload("up-refused", digest, data.size(), {});
  const int removed = delete_policy(b);
  ASSERT_TRUE(removed == 204 || removed == 200) << removed;
  EXPECT_EQ(f.status, finish_status::unavailable) << f.detail;
  EXPECT_NE(f.detail.find("AccessDenied"), std::string::npos) << f.detail;
  EXPECT_FALSE(b.contains(digest, data.size()));
  EXPECT_EQ(get_key(b, b.staging_key("up-refused")).status, 200);
  EXPECT_EQ(b.finish_upload("up-refused", digest, data.size(), {}).status, finish_status::stored);
}

TEST_F(s3_backend_test, refuses_settings_and_names_clearly) {
  auto cfg = config();
  cfg.endpoint = "127.0.0.1:4568";
  EXPECT_THROW(s3_backend{cfg}, std::invalid_argument);
  cfg = config();
  cfg.secret_access_key.clear();
  EXPECT_THROW(s3_backend{cfg}, std::invalid_argument);
  cfg = config();
  cfg.part_size_mb = 4;
  EXPECT_THROW(s3_backend{cfg}, std::invalid_argument);
  s3_backend b(config());
  EXPECT_THROW(b.grant_upload("worker:w1", "u", "not-a-digest", 1, now_us(), 60), std::invalid_argument);
  EXPECT_THROW(b.grant_upload("worker:w1", "u", util::sha256_hex(""), (5ull << 40) + 1, now_us(), 60), std::invalid_argument);
  // More than 10000 parts of 5 MiB: the part size grows.
  EXPECT_EQ(b.part_size_for(100000 * mib), 10 * mib);
  EXPECT_EQ(b.part_size_for(12 * mib), 5 * mib);
}
