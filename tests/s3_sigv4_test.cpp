// The SigV4 signer (http/storage/sigv4.*) and the URLs the S3 backend hands out.
//
// Two kinds of evidence, value for value (the store in s3_backend_test checks signatures too, but
// only as accepted or refused):
//  - published vectors: the S3 documentation's worked examples and cases of the AWS SigV4 test
//    suite, checked value for value (canonical request, string to sign, signature). They pin
//    the algorithm to AWS's own numbers but cover few inputs.
//  - botocore, AWS's reference implementation (Debian's python3-botocore): for generated
//    inputs (keys with spaces, unicode, '~', reserved characters, many query parameters, both
//    addressing styles, signed extra headers) our presigned URL must equal its URL byte for
//    byte, and batond's own calls must carry its Authorization header. That covers the
//    encodings and URL shapes the examples do not.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/util/hex.hpp"
#include "core/util/sha256.hpp"
#include "http/storage/s3_backend.hpp"
#include "http/storage/sigv4.hpp"
#include "support/temp_dir.hpp"

namespace sigv4 = baton::storage::sigv4;
namespace util = baton::util;
using nlohmann::json;

namespace {

// The S3 documentation's examples: this key pair, examplebucket, 2013-05-24T00:00:00Z.
const sigv4::credentials s3_example{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
const sigv4::scope s3_scope{"us-east-1", "s3"};
constexpr int64_t may_24_2013 = 1369353600;
const std::string example_host = "examplebucket.s3.amazonaws.com";

// The AWS SigV4 test suite: this key pair, service "service", 2015-08-30T12:36:00Z.
const sigv4::credentials suite_cred{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"};
const sigv4::scope suite_scope{"us-east-1", "service"};
constexpr int64_t aug_30_2015 = 1440938160;

}  // namespace

TEST(s3_sigv4, encodes_as_aws_specifies) {
  EXPECT_EQ(sigv4::uri_encode("-._~AZaz09", false), "-._~AZaz09");
  EXPECT_EQ(sigv4::uri_encode("a b+c=d&e/f%", false), "a%20b%2Bc%3Dd%26e%2Ff%25");
  EXPECT_EQ(sigv4::uri_encode("/a b/c$d/", true), "/a%20b/c%24d/");
  EXPECT_EQ(sigv4::uri_encode("\xe1\x88\xb4", false), "%E1%88%B4");
  EXPECT_EQ(sigv4::canonical_query({{"prefix", "J"}, {"max-keys", "2"}}), "max-keys=2&prefix=J");
  EXPECT_EQ(sigv4::canonical_query({{"lifecycle", ""}}), "lifecycle=");
  EXPECT_EQ(sigv4::amz_date(may_24_2013), "20130524T000000Z");
  EXPECT_EQ(sigv4::amz_date(aug_30_2015), "20150830T123600Z");
}

// The general SigV4 documentation's signing-key example (IAM, 2012-02-15).
TEST(s3_sigv4, signing_key_example) {
  EXPECT_EQ(util::to_hex(sigv4::signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", {"us-east-1", "iam"})),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

// "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)": GET test.txt,
// valid 86400 s.
TEST(s3_sigv4, s3_documentation_presigned_url) {
  sigv4::request req{"GET", example_host, "/test.txt", {}, {}};
  auto p = sigv4::presign(s3_example, s3_scope, req, may_24_2013, 86400);
  EXPECT_EQ(p.canonical_request,
            "GET\n/test.txt\n"
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\n"
            "host:examplebucket.s3.amazonaws.com\n\nhost\nUNSIGNED-PAYLOAD");
  EXPECT_EQ(p.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "3bfa292879f6447bbcda7001decf97f4a54dc650c8942174ae0a9121cf58ad04");
  EXPECT_EQ(p.signature, "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
  EXPECT_EQ("https://" + example_host + p.path_and_query,
            "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
            "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
            "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

// "Signature Calculations for the Authorization Header: Transferring Payload in a Single
// Chunk": its four examples.
TEST(s3_sigv4, s3_documentation_get_object_with_range) {
  sigv4::request req{
      "GET", example_host, "/test.txt", {}, {{"Range", "bytes=0-9"}, {"x-amz-content-sha256", sigv4::empty_payload_sha256}}};
  auto s = sigv4::sign_headers(s3_example, s3_scope, req, may_24_2013, sigv4::empty_payload_sha256);
  EXPECT_EQ(s.canonical_request,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(s3_sigv4, s3_documentation_put_object) {
  const std::string body = "Welcome to Amazon S3.";
  const std::string hash = util::sha256_hex(body);
  ASSERT_EQ(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  sigv4::request req{
      "PUT",
      example_host,
      "/test$file.text",
      {},
      {{"Date", "Fri, 24 May 2013 00:00:00 GMT"}, {"x-amz-storage-class", "REDUCED_REDUNDANCY"}, {"x-amz-content-sha256", hash}}};
  auto s = sigv4::sign_headers(s3_example, s3_scope, req, may_24_2013, hash);
  EXPECT_EQ(s.canonical_request,
            "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\nhost:examplebucket.s3.amazonaws.com\n"
            "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\n"
            "x-amz-date:20130524T000000Z\nx-amz-storage-class:REDUCED_REDUNDANCY\n\n"
            "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
  EXPECT_EQ(s.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(s3_sigv4, s3_documentation_get_bucket_lifecycle) {
  sigv4::request req{"GET", example_host, "/", {{"lifecycle", ""}}, {{"x-amz-content-sha256", sigv4::empty_payload_sha256}}};
  auto s = sigv4::sign_headers(s3_example, s3_scope, req, may_24_2013, sigv4::empty_payload_sha256);
  EXPECT_EQ(s.canonical_request,
            "GET\n/\nlifecycle=\nhost:examplebucket.s3.amazonaws.com\n"
            "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(s.string_to_sign.substr(s.string_to_sign.rfind('\n') + 1),
            "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca");
  EXPECT_EQ(s.signature, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(s3_sigv4, s3_documentation_list_objects) {
  // Given out of order: the canonical query sorts.
  sigv4::request req{
      "GET", example_host, "/", {{"prefix", "J"}, {"max-keys", "2"}}, {{"x-amz-content-sha256", sigv4::empty_payload_sha256}}};
  auto s = sigv4::sign_headers(s3_example, s3_scope, req, may_24_2013, sigv4::empty_payload_sha256);
  EXPECT_NE(s.canonical_request.find("GET\n/\nmax-keys=2&prefix=J\n"), std::string::npos) << s.canonical_request;
  EXPECT_EQ(s.string_to_sign.substr(s.string_to_sign.rfind('\n') + 1),
            "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7");
  EXPECT_EQ(s.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

// Cases of the AWS SigV4 test suite (as published with awslabs/aws-c-auth, tests/aws-signing-
// test-suite/v4): each signed in header form and in query form (valid 3600 s; this service
// signs the empty body's hash, not UNSIGNED-PAYLOAD).
struct suite_case {
  const char* name;
  const char* method;
  std::string path;
  sigv4::pairs query, headers;
  const char* header_signature;
  const char* query_signature;
};

TEST(s3_sigv4, aws_signature_v4_test_suite) {
  // clang-format off
  const std::vector<suite_case> cases = {
      {"get-vanilla", "GET", "/", {}, {}, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
       "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d"},
      {"get-vanilla-query-order-key-case", "GET", "/", {{"Param2", "value2"}, {"Param1", "value1"}}, {},
       "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500", "86012e2c9ad4d77369f5d81c11f75158aae4f895a085212cc6d3f923d300bed5"},
      {"get-vanilla-query-unreserved", "GET", "/",
       {{"-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}},
       {}, "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197", "8e76a88a7433637b12778d5592799b29ad21ecd6cf6325051c21d86f0acda2bf"},
      {"get-vanilla-query-order-encoded", "GET", "/", {{"Param-3", "Value3"}, {"Param", "Value2"}, {"\xe1\x88\xb4", "Value1"}}, {},
       "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac", "c5f1848ceec943ac2ca68ee720460c23aaae30a2300586597ada94c4a65e4787"},
      {"get-vanilla-utf8-query", "GET", "/", {{"\xe1\x88\xb4", "bar"}}, {}, "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04",
       "0bdd809b1519ac4f0c1dc3540e2cc46bd0c7f778eda408b2ebf3b913d21ff600"},
      {"get-utf8", "GET", "/\xe1\x88\xb4", {}, {}, "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
       "10eae3f14a260bd3911cc6d008d3c576d143b05b62f09782a7a4b37f52178e44"},
      {"get-unreserved", "GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", {}, {},
       "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f", "95968482db1b9e0fadef6efc1bd24689f77c77d9ef56919c96a28cc92e0d6005"},
      {"get-space-unnormalized", "GET", "/example space/", {}, {}, "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
       "7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6"},
      {"get-header-value-trim", "GET", "/", {}, {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}},
       "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736", "e7bb0fd515e125e1aec2ecc4c0c17484fb06f6846b927c35e46005dd3df3acd4"},
      {"post-vanilla-query", "POST", "/", {{"Param1", "value1"}}, {}, "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
       "a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682"},
  };
  // clang-format on
  for (const auto& c : cases) {
    sigv4::request req{c.method, "example.amazonaws.com", c.path, c.query, c.headers};
    EXPECT_EQ(sigv4::sign_headers(suite_cred, suite_scope, req, aug_30_2015, sigv4::empty_payload_sha256).signature,
              c.header_signature)
        << c.name << " (header form)";
    EXPECT_EQ(sigv4::presign(suite_cred, suite_scope, req, aug_30_2015, 3600, sigv4::empty_payload_sha256).signature,
              c.query_signature)
        << c.name << " (query form)";
  }
  // Two canonical requests in full: the query form's parameters, and trimmed header values.
  sigv4::request trim{"GET", "example.amazonaws.com", "/", {}, {{"My-Header1", "value1"}, {"My-Header2", "\"a   b   c\""}}};
  EXPECT_EQ(
      sigv4::presign(suite_cred, suite_scope, trim, aug_30_2015, 3600, sigv4::empty_payload_sha256).canonical_request,
      "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request"
      "&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1%3Bmy-header2\n"
      "host:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\n\nhost;my-header1;my-header2\n"
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  sigv4::request utf8{"GET", "example.amazonaws.com", "/\xe1\x88\xb4", {}, {}};
  EXPECT_EQ(sigv4::sign_headers(suite_cred, suite_scope, utf8, aug_30_2015, sigv4::empty_payload_sha256).canonical_request,
            "GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(s3_sigv4, refuses_expiry_out_of_range) {
  sigv4::request req{"GET", example_host, "/k", {}, {}};
  EXPECT_THROW(sigv4::presign(s3_example, s3_scope, req, may_24_2013, 0), std::invalid_argument);
  EXPECT_THROW(sigv4::presign(s3_example, s3_scope, req, may_24_2013, 604801), std::invalid_argument);
  EXPECT_NO_THROW(sigv4::presign(s3_example, s3_scope, req, may_24_2013, 604800));
  req.host.clear();
  EXPECT_THROW(sigv4::presign(s3_example, s3_scope, req, may_24_2013, 60), std::invalid_argument);
}

// ---- botocore ----------------------------------------------------------------------------

namespace {

// Runs tests/s3_botocore_presign.py on the cases; its URLs, one per case.
std::vector<std::string> botocore_urls(const json& cases) {
  baton::test::temp_dir dir;
  std::ofstream(dir / "cases.json") << cases.dump();
  const std::string cmd = "/usr/bin/python3 " S3_BOTOCORE_SCRIPT " < " + (dir / "cases.json") + " > " + (dir / "urls.json") +
                          " 2> " + (dir / "err.txt");
  int rc = std::system(cmd.c_str());
  std::ifstream err(dir / "err.txt");
  std::string err_text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  if (rc != 0) throw std::runtime_error("botocore's presigner failed (exit " + std::to_string(rc) + "): " + err_text);
  std::ifstream in(dir / "urls.json");
  json urls = json::parse(in);
  if (!urls.is_array() || urls.size() != cases.size()) throw std::runtime_error("botocore's presigner answered " + urls.dump());
  return urls.get<std::vector<std::string>>();
}

// Generated keys: spaces, unicode, '~', and the characters S3 keys may hold that need encoding.
// clang-format off
const std::vector<std::string> generated_keys = {
    "test.txt", "a b/c d.bin", "caf\xc3\xa9/\xe1\x88\xb4\xe2\x82\xac.txt", "~user/tilde~name", "plus+equals=amp&q?hash#",
    "semi;colon,comma:colon@at$dollar!bang'quote(paren)*star", "per%cent/%20literal", "deep/a/b/c/d/e/f/g.h", "100%\xf0\x9f\x98\x80",
    "trailing/"};
// clang-format on

}  // namespace

// sigv4::presign against botocore's S3SigV4QueryAuth: arbitrary methods, query parameters
// and signed headers.
TEST(s3_sigv4, presign_equals_botocore_sigv4_query_auth) {
  json cases = json::array();
  std::vector<std::string> ours;
  int i = 0;
  for (const auto& key : generated_keys) {
    for (const char* method : {"GET", "PUT"}) {
      ++i;
      const int64_t t = 1767225600 + i * 7919;  // 2026 onwards, a different second each case
      const std::string host = (i % 2) ? "my-bucket.s3.eu-central-1.amazonaws.com" : "127.0.0.1:9000";
      const std::string scheme = (i % 2) ? "https" : "http";
      const std::string region = (i % 3) ? "eu-central-1" : "us-east-1";
      const std::string path = (i % 2) ? "/" + key : "/bkt/" + key;
      sigv4::pairs query;
      for (int q = 0; q < i % 7; ++q)  // up to six parameters, some with reserved characters and unicode
        query.emplace_back("p" + std::to_string(q) + (q % 2 ? "~x" : " y"),
                           "v=" + std::to_string(q) + "&/ \xc3\xa9+" + (q % 2 ? key : std::string("#%")));
      sigv4::pairs headers;
      if (std::string(method) == "PUT")
        headers.emplace_back("x-amz-checksum-sha256", "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=");
      if (i % 4 == 0) headers.emplace_back("x-amz-meta-owner", "someone  with   spaces");
      const sigv4::credentials cred{"AKID" + std::to_string(i), "secret/+" + std::to_string(i)};
      const int64_t expires = 60 + i * 37;
      auto p = sigv4::presign(cred, {region, "s3"}, {method, host, path, query, headers}, t, expires);
      ours.push_back(scheme + "://" + host + p.path_and_query);
      json params = json::array();
      for (const auto& [n, v] : query) params.push_back({n, v});
      json hs = json::array();
      for (const auto& [n, v] : headers) hs.push_back({n, v});
      cases.push_back({{"mode", "auth"},
                       {"endpoint", scheme + "://" + host},
                       {"path", sigv4::uri_encode(path, true)},
                       {"method", method},
                       {"region", region},
                       {"access_key", cred.access_key_id},
                       {"secret_key", cred.secret_access_key},
                       {"time", t},
                       {"expires", expires},
                       {"params", params},
                       {"headers", hs}});
    }
  }
  auto theirs = botocore_urls(cases);
  ASSERT_EQ(theirs.size(), ours.size());
  for (size_t k = 0; k < ours.size(); ++k) EXPECT_EQ(ours[k], theirs[k]) << "case " << k << ": " << cases[k].dump();
}

// The backend's own URLs (keys from prefix and digest or upload id, both addressing styles,
// default and explicit ports) against botocore's generate_presigned_url.
TEST(s3_sigv4, backend_urls_equal_botocore_generate_presigned_url) {
  struct setup {
    std::string endpoint, bucket, region, prefix;
    bool path_style;
  };
  const std::vector<setup> setups = {
      {"https://s3.eu-central-1.amazonaws.com", "baton-blobs", "eu-central-1", "baton/", false},
      {"https://s3.eu-central-1.amazonaws.com", "baton-blobs", "eu-central-1", "", true},
      {"http://127.0.0.1:9000", "bkt", "us-east-1", "site a/caf\xc3\xa9~/", true},
      {"https://storage.example.org:8443", "b1", "us-west-2", "x+y=z/", true},
  };
  const std::string digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  json cases = json::array();
  std::vector<std::string> ours;
  int i = 0;
  for (const auto& s : setups) {
    baton::config::s3_config cfg;
    cfg.endpoint = s.endpoint;
    cfg.bucket = s.bucket;
    cfg.region = s.region;
    cfg.prefix = s.prefix;
    cfg.path_style = s.path_style;
    cfg.access_key_id = "AKIDBATON";
    cfg.secret_access_key = "batond's secret/" + std::to_string(++i);
    cfg.url_expiry_seconds = 900;
    baton::storage::s3_backend b(cfg);
    const int64_t t = 1780000000 + i * 3571;
    const json base = {{"mode", "client"},
                       {"endpoint", s.endpoint},
                       {"bucket", s.bucket},
                       {"region", s.region},
                       {"path_style", s.path_style},
                       {"access_key", cfg.access_key_id},
                       {"secret_key", cfg.secret_access_key},
                       {"time", t},
                       {"expires", 900}};
    // A download of a blob.
    auto d = b.grant_download("worker:w1", digest, 4, t * 1000000, 3600);
    EXPECT_EQ(d.expires_at_us, (t + 900) * 1000000);
    ours.push_back(d.url);
    json c = base;
    c["client_method"] = "get_object";
    c["key"] = b.blob_key(digest);
    c["params"] = json::object();
    cases.push_back(c);
    // A part of a multipart upload to the staging key.
    const std::string upload_id = "job 7/ckpt~" + std::to_string(i);
    ours.push_back(
        b.presign_url("PUT", b.staging_key(upload_id), {{"partNumber", "3"}, {"uploadId", "2~Xyz/+=abc"}}, {}, t * 1000000, 900));
    c = base;
    c["client_method"] = "upload_part";
    c["key"] = b.staging_key(upload_id);
    c["params"] = {{"PartNumber", 3}, {"UploadId", "2~Xyz/+=abc"}};
    cases.push_back(c);
  }
  auto theirs = botocore_urls(cases);
  ASSERT_EQ(theirs.size(), ours.size());
  for (size_t k = 0; k < ours.size(); ++k) EXPECT_EQ(ours[k], theirs[k]) << "case " << k << ": " << cases[k].dump();
}

// batond's own calls (header form), as s3_backend::prepare signs them for the URL it sends
// to, against botocore's S3SigV4Auth on that URL: bucket- and object-level calls, empty
// query values, bodies, and signed x-amz-* headers with encoded keys in them.
TEST(s3_sigv4, backend_calls_equal_botocore_s3_sigv4_auth) {
  struct setup {
    std::string endpoint, bucket, region, prefix;
    bool path_style;
  };
  const std::vector<setup> setups = {
      {"https://s3.eu-central-1.amazonaws.com", "baton-blobs", "eu-central-1", "baton/", false},
      {"http://127.0.0.1:9000", "bkt", "us-east-1", "site a/caf\xc3\xa9~/", true},
  };
  const std::string digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  struct call {
    std::string method, key;
    sigv4::pairs query, headers;
    std::string body;
  };
  json cases = json::array();
  std::vector<std::string> ours;
  int i = 0;
  for (const auto& s : setups) {
    baton::config::s3_config cfg;
    cfg.endpoint = s.endpoint;
    cfg.bucket = s.bucket;
    cfg.region = s.region;
    cfg.prefix = s.prefix;
    cfg.path_style = s.path_style;
    cfg.access_key_id = "AKIDBATON";
    cfg.secret_access_key = "batond's secret";
    baton::storage::s3_backend b(cfg);
    const std::string staging = b.staging_key("job 7/ckpt~1"), blob = b.blob_key(digest);
    const std::string source = "/" + s.bucket + "/" + sigv4::uri_encode(staging, true);
    const std::vector<call> calls = {
        {"POST", staging, {{"uploads", ""}}, {}, ""},
        {"POST",
         staging,
         {{"uploadId", "2~Xyz/+=abc"}},
         {},
         "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"abc\"</ETag></Part></CompleteMultipartUpload>"},
        {"HEAD", staging, {}, {{"x-amz-checksum-mode", "ENABLED"}}, ""},
        {"GET", staging, {}, {}, ""},
        {"PUT", blob, {}, {{"x-amz-copy-source", source}}, ""},
        {"PUT",
         blob,
         {{"partNumber", "2"}, {"uploadId", "u.1"}},
         {{"x-amz-copy-source", source}, {"x-amz-copy-source-range", "bytes=5-9"}},
         ""},
        {"GET", "", {{"prefix", staging}, {"uploads", ""}}, {}, ""},
        {"DELETE", staging, {}, {}, ""},
    };
    for (const auto& c : calls) {
      const int64_t t = 1780000000 + (++i) * 4099;
      auto p = b.prepare(c.method, c.key, c.query, c.headers, c.body, t);
      std::string auth;
      for (const auto& [n, v] : p.headers)
        if (n == "Authorization") auth = v;
      ours.push_back(auth);
      json hs = json::array();
      for (const auto& [n, v] : c.headers) hs.push_back({n, v});
      cases.push_back({{"mode", "header"},
                       {"url", p.base + p.target},
                       {"method", c.method},
                       {"headers", hs},
                       {"body", c.body},
                       {"region", s.region},
                       {"access_key", cfg.access_key_id},
                       {"secret_key", cfg.secret_access_key},
                       {"time", t}});
    }
  }
  auto theirs = botocore_urls(cases);
  ASSERT_EQ(theirs.size(), ours.size());
  // botocore writes ", " between the parts, the S3 documentation (and we) ","; AWS takes both.
  for (auto& a : theirs)
    for (size_t at; (at = a.find(", ")) != std::string::npos;) a.erase(at + 1, 1);
  for (size_t k = 0; k < ours.size(); ++k) EXPECT_EQ(ours[k], theirs[k]) << "case " << k << ": " << cases[k].dump();
}

// A single-PUT upload grant: the staging key, never the digest's; the checksum signed and
// handed over as a header to send.
TEST(s3_sigv4, single_put_grant_signs_the_checksum_for_the_staging_key) {
  baton::config::s3_config cfg;
  cfg.endpoint = "https://s3.eu-central-1.amazonaws.com";
  cfg.bucket = "baton-blobs";
  cfg.region = "eu-central-1";
  cfg.prefix = "baton/";
  cfg.path_style = false;
  cfg.access_key_id = "AKIDBATON";
  cfg.secret_access_key = "secret";
  baton::storage::s3_backend b(cfg);
  // SHA-256 of "test".
  const std::string digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  const int64_t t = 1780000000;
  auto g = b.grant_upload("worker:w1", "u1", digest, 4, t * 1000000, 600);
  ASSERT_EQ(g.parts.size(), 1u);
  const auto& p = g.parts[0];
  EXPECT_EQ(p.method, "PUT");
  ASSERT_EQ(p.headers.size(), 1u);
  EXPECT_EQ(p.headers[0].first, "x-amz-checksum-sha256");
  EXPECT_EQ(p.headers[0].second, "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=");
  EXPECT_EQ(p.url.rfind("https://baton-blobs.s3.eu-central-1.amazonaws.com/baton/incoming/u1?", 0), 0u) << p.url;
  EXPECT_EQ(p.url.find("blobs/"), std::string::npos) << p.url;
  EXPECT_NE(p.url.find("X-Amz-SignedHeaders=host%3Bx-amz-checksum-sha256&"), std::string::npos) << p.url;
  EXPECT_EQ(p.expires_at_us, (t + 600) * 1000000);
  json c = {{"mode", "auth"},
            {"endpoint", "https://baton-blobs.s3.eu-central-1.amazonaws.com"},
            {"path", "/baton/incoming/u1"},
            {"method", "PUT"},
            {"region", "eu-central-1"},
            {"access_key", "AKIDBATON"},
            {"secret_key", "secret"},
            {"time", t},
            {"expires", 600},
            {"params", json::array()},
            {"headers", json::array({json::array({"x-amz-checksum-sha256", p.headers[0].second})})}};
  EXPECT_EQ(botocore_urls(json::array({c}))[0], p.url);
}
