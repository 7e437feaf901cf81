#pragma once
// AWS Signature Version 4 (docs/storage.md, "S3 backend"): pure functions, the time is an
// argument and no clock is read, so a signature can be checked value for value against the
// published examples. Two forms: presigned URLs (query string; what workers get) and the
// Authorization header (batond's own calls to the store).
//
// Paths, query names and values are given unencoded; they are encoded here exactly as AWS
// specifies (RFC 3986 unreserved characters kept, everything else %XX in upper case, UTF-8
// bytes one by one; `/` kept in paths only). Paths are encoded once and never normalised, as
// S3 wants (other services encode twice; nothing here signs for them).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::storage::sigv4 {

using pairs = std::vector<std::pair<std::string, std::string>>;

// The body's hash a presigned URL signs: the bytes are not known when the URL is made.
inline constexpr const char* unsigned_payload = "UNSIGNED-PAYLOAD";
// SHA-256 of nothing, hex: the payload hash of a request without a body.
inline constexpr const char* empty_payload_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct credentials {
  std::string access_key_id;
  std::string secret_access_key;
};

struct scope {
  std::string region = "us-east-1";
  std::string service = "s3";
};

struct request {
  std::string method;  // GET, PUT, POST, HEAD, DELETE
  std::string host;    // the Host header as the client sends it ("bucket.s3.amazonaws.com", "127.0.0.1:4568")
  std::string path;    // unencoded, starting with '/': "/bucket/key with spaces"
  pairs query;         // unencoded names and values, without any X-Amz-* of the signature itself
  pairs headers;       // signed besides host (names in any case; values as they will be sent)
};

// What a signature was computed from, for tests and error messages.
struct signing {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // hex
};

struct presigned : signing {
  std::string path_and_query;  // encoded: "/bucket/k%20ey?partNumber=1&...&X-Amz-Signature=…"
};

struct header_signed : signing {
  std::string amz_date;       // send as x-amz-date
  std::string authorization;  // send as Authorization
};

// URI-encodes as SigV4 specifies; keep_slash for paths.
std::string uri_encode(std::string_view s, bool keep_slash);
// "20130524T000000Z" (UTC) from seconds since the epoch.
std::string amz_date(int64_t unix_seconds);
std::string hmac_sha256(std::string_view key, std::string_view data);  // raw 32 bytes
// HMAC chain of "AWS4"+secret over date (YYYYMMDD), region, service, "aws4_request": raw bytes.
std::string signing_key(std::string_view secret, std::string_view yyyymmdd, const scope& sc);

// Sorted by encoded name, then encoded value, joined with '&' ("lifecycle=" for a bare name).
std::string canonical_query(const pairs& query);
// "name:value\n" per header (lower-case names, values trimmed, inner runs of spaces made one,
// repeated names joined with ','), sorted; and the names joined with ';'.
std::string canonical_headers(const pairs& headers);
std::string signed_headers(const pairs& headers);
// The six lines: method, encoded path, canonical query, canonical headers, signed headers, payload hash.
// `headers` must hold host.
std::string canonical_request(std::string_view method, std::string_view path, const pairs& query, const pairs& headers,
                              std::string_view payload_hash);
std::string string_to_sign(std::string_view amz_date, const scope& sc, std::string_view canonical_request);

// A presigned URL's path and query for `req`, valid `expires_seconds` from `now_unix_seconds`
// (1..604800). Signed headers: host and req.headers (the caller must send those exactly).
// The operation's own query parameters come first in the order given, then the X-Amz-*
// ones, then X-Amz-Signature (the order botocore writes; any order verifies).
presigned presign(const credentials& cred, const scope& sc, const request& req, int64_t now_unix_seconds, int64_t expires_seconds,
                  std::string_view payload_hash = unsigned_payload);

// The Authorization header for `req`: signs host, x-amz-date and req.headers (for S3 the
// caller adds x-amz-content-sha256 = payload_hash to req.headers and sends it).
header_signed sign_headers(const credentials& cred, const scope& sc, const request& req, int64_t now_unix_seconds,
                           std::string_view payload_hash);

}  // namespace baton::storage::sigv4
