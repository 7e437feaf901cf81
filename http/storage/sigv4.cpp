#include "http/storage/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "core/util/hex.hpp"
#include "core/util/sha256.hpp"
#include "core/util/time.hpp"

namespace baton::storage::sigv4 {

namespace {

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
         c == '~';
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Leading and trailing spaces gone, each inner run of spaces one space (SigV4's "Trimall").
std::string trimall(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// Lower-case names in order, each with its values joined by ','.
std::vector<std::pair<std::string, std::string>> header_lines(const pairs& headers) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& [n, val] : headers) v.emplace_back(lower(n), trimall(val));
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& [n, val] : v) {
    if (!out.empty() && out.back().first == n)
      out.back().second += "," + val;
    else
      out.emplace_back(n, val);
  }
  return out;
}

std::string credential_scope(std::string_view amz, const scope& sc) {
  return std::string(amz.substr(0, 8)) + "/" + sc.region + "/" + sc.service + "/aws4_request";
}

std::string signature_of(const credentials& cred, const scope& sc, std::string_view amz, std::string_view sts) {
  return util::to_hex(hmac_sha256(signing_key(cred.secret_access_key, amz.substr(0, 8), sc), sts));
}

pairs with_host(const request& req) {
  if (req.host.empty()) throw std::invalid_argument("sigv4: the request has no host to sign");
  pairs h;
  h.emplace_back("host", req.host);
  for (const auto& kv : req.headers)
    if (lower(kv.first) != "host") h.push_back(kv);
  return h;
}

}  // namespace

std::string uri_encode(std::string_view s, bool keep_slash) {
  static const char digits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (unsigned char c : s) {
    if (unreserved(c) || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

std::string amz_date(int64_t unix_seconds) {
  // µs fit int64 for ±292,000 years; gmtime_r refused only what lies far beyond that.
  constexpr int64_t limit = INT64_MAX / 1'000'000;
  if (unix_seconds > limit || unix_seconds < -limit)
    throw std::invalid_argument("sigv4: time " + std::to_string(unix_seconds) + " is out of range");
  return util::format_time_us(unix_seconds * 1'000'000, util::time_form::basic);
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
            data.size(), md, &n))
    throw std::runtime_error("sigv4: OpenSSL's HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(md), n);
}

std::string signing_key(std::string_view secret, std::string_view yyyymmdd, const scope& sc) {
  std::string k = hmac_sha256("AWS4" + std::string(secret), yyyymmdd);
  k = hmac_sha256(k, sc.region);
  k = hmac_sha256(k, sc.service);
  return hmac_sha256(k, "aws4_request");
}

std::string canonical_query(const pairs& query) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [n, v] : query) enc.emplace_back(uri_encode(n, false), uri_encode(v, false));
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (const auto& [n, v] : enc) {
    if (!out.empty()) out += '&';
    out += n + "=" + v;
  }
  return out;
}

std::string canonical_headers(const pairs& headers) {
  std::string out;
  for (const auto& [n, v] : header_lines(headers)) out += n + ":" + v + "\n";
  return out;
}

std::string signed_headers(const pairs& headers) {
  std::string out;
  for (const auto& [n, v] : header_lines(headers)) {
    if (!out.empty()) out += ';';
    out += n;
  }
  return out;
}

std::string canonical_request(std::string_view method, std::string_view path, const pairs& query, const pairs& headers,
                              std::string_view payload_hash) {
  std::string uri = path.empty() ? "/" : uri_encode(path, true);
  return std::string(method) + "\n" + uri + "\n" + canonical_query(query) + "\n" + canonical_headers(headers) + "\n" +
         signed_headers(headers) + "\n" + std::string(payload_hash);
}

std::string string_to_sign(std::string_view amz, const scope& sc, std::string_view creq) {
  return "AWS4-HMAC-SHA256\n" + std::string(amz) + "\n" + credential_scope(amz, sc) + "\n" + util::sha256_hex(creq);
}

presigned presign(const credentials& cred, const scope& sc, const request& req, int64_t now, int64_t expires_seconds,
                  std::string_view payload_hash) {
  if (expires_seconds < 1 || expires_seconds > 604800)
    throw std::invalid_argument("sigv4: a presigned URL's expiry must be 1..604800 seconds, not " +
                                std::to_string(expires_seconds));
  const std::string amz = amz_date(now);
  const pairs headers = with_host(req);
  const pairs auth = {{"X-Amz-Algorithm", "AWS4-HMAC-SHA256"},
                      {"X-Amz-Credential", cred.access_key_id + "/" + credential_scope(amz, sc)},
                      {"X-Amz-Date", amz},
                      {"X-Amz-Expires", std::to_string(expires_seconds)},
                      {"X-Amz-SignedHeaders", signed_headers(headers)}};
  pairs all = req.query;
  all.insert(all.end(), auth.begin(), auth.end());

  presigned out;
  out.canonical_request = canonical_request(req.method, req.path, all, headers, payload_hash);
  out.string_to_sign = string_to_sign(amz, sc, out.canonical_request);
  out.signature = signature_of(cred, sc, amz, out.string_to_sign);
  std::string q;
  for (const auto& [n, v] : all) q += (q.empty() ? "" : "&") + uri_encode(n, false) + "=" + uri_encode(v, false);
  out.path_and_query = (req.path.empty() ? "/" : uri_encode(req.path, true)) + "?" + q + "&X-Amz-Signature=" + out.signature;
  return out;
}

header_signed sign_headers(const credentials& cred, const scope& sc, const request& req, int64_t now,
                           std::string_view payload_hash) {
  header_signed out;
  out.amz_date = amz_date(now);
  pairs headers = with_host(req);
  if (std::none_of(headers.begin(), headers.end(), [](const auto& kv) { return lower(kv.first) == "x-amz-date"; }))
    headers.emplace_back("x-amz-date", out.amz_date);
  out.canonical_request = canonical_request(req.method, req.path, req.query, headers, payload_hash);
  out.string_to_sign = string_to_sign(out.amz_date, sc, out.canonical_request);
  out.signature = signature_of(cred, sc, out.amz_date, out.string_to_sign);
  out.authorization = "AWS4-HMAC-SHA256 Credential=" + cred.access_key_id + "/" + credential_scope(out.amz_date, sc) +
                      ",SignedHeaders=" + signed_headers(headers) + ",Signature=" + out.signature;
  return out;
}

}  // namespace baton::storage::sigv4
