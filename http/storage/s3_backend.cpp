#include "http/storage/s3_backend.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "core/util/hex.hpp"
#include "core/util/sha256.hpp"

namespace baton::storage {

namespace {

constexpr uint64_t mib = 1ull << 20;
constexpr uint64_t max_single_put = 5ull << 30;  // S3: one PUT carries at most 5 GiB
constexpr uint64_t max_object = 5ull << 40;      // S3: an object holds at most 5 TiB
constexpr uint64_t max_parts = 10000;            // S3: parts of one multipart upload

// Over multipart_threshold_mb, or more than one PUT carries: a multipart upload.
bool is_multipart(const config::s3_config& cfg, uint64_t size) {
  return size > static_cast<uint64_t>(cfg.multipart_threshold_mb) * mib || size > max_single_put;
}

void require_digest(const std::string& sha256) {
  if (!util::is_sha256_hex(sha256))
    throw std::invalid_argument("s3 backend: '" + sha256 + "' is not a SHA-256 (64 lower-case hex digits)");
}

// x-amz-checksum-sha256 carries the digest's 32 bytes in base64.
std::string digest_base64(const std::string& hex) {
  const std::string raw = util::from_hex(hex).value();  // a digest checked by require_digest()
  unsigned char out[48];
  int n = EVP_EncodeBlock(out, reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  return std::string(reinterpret_cast<char*>(out), static_cast<size_t>(n));
}

std::string xml_field(const std::string& body, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  auto a = body.find(open);
  if (a == std::string::npos) return {};
  a += open.size();
  auto b = body.find(close, a);
  return b == std::string::npos ? std::string{} : body.substr(a, b - a);
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A connection error or a 5xx: the store may answer later. Anything else unexpected (403 for
// a wrong credential, 400) also leaves the upload as it is and says what the store said.
finish_result unavailable(const std::string& what, const s3_backend::reply& r) {
  return {finish_status::unavailable, what + ": " + r.describe()};
}

// S3 answers 200 to CopyObject, UploadPartCopy and CompleteMultipartUpload before the work is
// done, and reports a failure in the body.
bool ok_with_body(const s3_backend::reply& r) { return r.status == 200 && r.body.find("<Error>") == std::string::npos; }

// `text` as the whole of `path`, durably: a temporary file, fsynced, renamed, the directory
// fsynced. False (errno set) when any step fails.
bool write_durably(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string tmp = dir + "/." + name + ".tmp", path = dir + "/" + name;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) return false;
  int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return false;
  ok = ::fsync(d) == 0;
  ::close(d);
  return ok;
}

}  // namespace

std::string s3_backend::reply::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string{} : it->second;
}

std::string s3_backend::reply::describe() const {
  if (status == 0) return "no answer (" + error + ")";
  std::string code = xml_field(body, "Code"), message = xml_field(body, "Message");
  std::string out = "HTTP " + std::to_string(status);
  if (!code.empty()) out += " " + code;
  if (!message.empty()) out += ": " + message;
  return out;
}

s3_backend::s3_backend(config::s3_config cfg) : s3_backend(std::move(cfg), options{}) {}

s3_backend::s3_backend(config::s3_config cfg, options opt) : cfg_(std::move(cfg)), opt_(opt) {
  const std::string& e = cfg_.endpoint;
  auto sep = e.find("://");
  if (sep == std::string::npos)
    throw std::invalid_argument("storage.s3.endpoint '" + e + "' has no scheme (http:// or https://)");
  scheme_ = e.substr(0, sep);
  if (scheme_ != "http" && scheme_ != "https")
    throw std::invalid_argument("storage.s3.endpoint '" + e + "': the scheme must be http or https");
  std::string rest = e.substr(sep + 3);
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    if (rest.find_first_not_of('/', slash) != std::string::npos)
      throw std::invalid_argument("storage.s3.endpoint '" + e + "' has a path; give only scheme://host[:port]");
    rest.resize(slash);
  }
  port_ = scheme_ == "https" ? 443 : 80;
  if (auto colon = rest.rfind(':'); colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    try {
      port_ = std::stoi(rest.substr(colon + 1));
    } catch (const std::exception&) {
      throw std::invalid_argument("storage.s3.endpoint '" + e + "' has a port that is not a number");
    }
    rest.resize(colon);
  }
  endpoint_host_ = rest;
  if (endpoint_host_.empty()) throw std::invalid_argument("storage.s3.endpoint '" + e + "' has no host");
  if (cfg_.bucket.empty()) throw std::invalid_argument("storage.s3.bucket is empty");
  if (cfg_.access_key_id.empty()) throw std::invalid_argument("storage.s3.access_key_id (or BATON_S3_ACCESS_KEY_ID) is empty");
  if (cfg_.secret_access_key.empty()) throw std::invalid_argument("BATON_S3_SECRET_ACCESS_KEY is empty");
  if (cfg_.upload_access_key_id.empty() != cfg_.upload_secret_access_key.empty())
    throw std::invalid_argument("storage.s3.upload_access_key_id and BATON_S3_UPLOAD_SECRET_ACCESS_KEY go together");
  if (cfg_.part_size_mb < 5 || cfg_.part_size_mb > 5120)
    throw std::invalid_argument("storage.s3.part_size_mb is " + std::to_string(cfg_.part_size_mb) +
                                "; S3 takes parts of 5..5120 MiB");
  if (cfg_.verify != "read" && cfg_.verify != "store_checksum")
    throw std::invalid_argument("storage.s3.verify is '" + cfg_.verify + "'; it must be read or store_checksum");
  if (opt_.max_copy_bytes < 5 * mib || opt_.max_copy_bytes > max_single_put)
    throw std::invalid_argument("s3 backend: max_copy_bytes must be 5 MiB..5 GiB (S3's part sizes)");
  if (!opt_.state_dir.empty() && ::mkdir(opt_.state_dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("s3 backend: cannot create " + opt_.state_dir + ": " + std::strerror(errno));
}

s3_backend::place s3_backend::locate(const std::string& key) const {
  const bool default_port = port_ == (scheme_ == "https" ? 443 : 80);
  const std::string host = cfg_.path_style ? endpoint_host_ : cfg_.bucket + "." + endpoint_host_;
  place p;
  p.host = default_port ? host : host + ":" + std::to_string(port_);
  p.path = cfg_.path_style ? "/" + cfg_.bucket + "/" + key : "/" + key;
  p.base = scheme_ + "://" + host + ":" + std::to_string(port_);
  return p;
}

int64_t s3_backend::expiry(int64_t ttl_seconds) const {
  int64_t e = cfg_.url_expiry_seconds;
  if (ttl_seconds > 0) e = std::min<int64_t>(e, ttl_seconds);
  return std::clamp<int64_t>(e, 1, 604800);
}

std::string s3_backend::presign_url(const std::string& method, const std::string& key, const sigv4::pairs& query,
                                    const sigv4::pairs& headers, time_us now, int64_t expires_seconds) const {
  const place p = locate(key);
  const sigv4::request req{method, p.host, p.path, query, headers};
  // An upload's URL is signed with the upload key where there is one: a store that lets an
  // unsigned x-amz-copy-source ride on a presigned PUT (Ceph RGW does) then copies nothing,
  // as that key may read no object.
  const bool upload = method == "PUT" && !cfg_.upload_access_key_id.empty();
  const sigv4::credentials cred = upload ? sigv4::credentials{cfg_.upload_access_key_id, cfg_.upload_secret_access_key}
                                         : sigv4::credentials{cfg_.access_key_id, cfg_.secret_access_key};
  const auto signed_url = sigv4::presign(cred, {cfg_.region, "s3"}, req, now / 1000000, expires_seconds);
  // The URL names the host as it is signed (no default port), as any client would send it.
  return scheme_ + "://" + p.host + signed_url.path_and_query;
}

uint64_t s3_backend::part_size_for(uint64_t size) const {
  uint64_t part = static_cast<uint64_t>(cfg_.part_size_mb) * mib;
  uint64_t least = (size + max_parts - 1) / max_parts;  // no more than 10000 parts
  if (part < least) part = (least + mib - 1) / mib * mib;
  return part;
}

upload_grant s3_backend::grant_upload(const holder&, const std::string& upload_id, const std::string& sha256, uint64_t size,
                                      time_us now, int64_t ttl_seconds) {
  require_digest(sha256);
  if (upload_id.empty()) throw std::invalid_argument("s3 backend: an upload needs an upload_id");
  if (size > max_object)
    throw std::invalid_argument("s3 backend: " + std::to_string(size) + " bytes is more than the 5 TiB an S3 object may hold");
  const int64_t exp = expiry(ttl_seconds);
  const time_us expires_at = now + exp * 1000000;
  const std::string key = staging_key(upload_id);
  upload_grant g;
  g.upload_id = upload_id;

  if (!is_multipart(cfg_, size)) {
    // The checksum is a signed header: a store that checks it (AWS) refuses other bytes at
    // once; for the others finish_upload's check is what counts.
    sigv4::pairs headers = {{"x-amz-checksum-sha256", digest_base64(sha256)}};
    transfer t;
    t.url = presign_url("PUT", key, {}, headers, now, exp);
    t.method = "PUT";
    t.headers = headers;
    t.size = size;
    t.expires_at_us = expires_at;
    g.parts.push_back(std::move(t));
    return g;
  }

  // Multipart: the same upload_id (and size) gets the same multipart upload again, so parts
  // already sent stay valid when a worker asks anew.
  multipart mp;
  if (auto known = find_multipart(upload_id, key); known && (known->size == 0 || known->size == size))
    mp = {known->s3_upload_id, size, known->part_size ? known->part_size : part_size_for(size)};
  if (mp.s3_upload_id.empty()) {
    reply r = call("POST", key, {{"uploads", ""}}, {});
    std::string id = xml_field(r.body, "UploadId");
    if (r.status != 200 || id.empty())
      throw std::runtime_error("s3 backend: CreateMultipartUpload of " + key + " failed: " + r.describe());
    mp = {id, size, part_size_for(size)};
    record_multipart(upload_id, mp);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    multiparts_[upload_id] = mp;
  }
  int n = 1;
  for (uint64_t off = 0; off < size; off += mp.part_size, ++n) {
    transfer t;
    t.url = presign_url("PUT", key, {{"partNumber", std::to_string(n)}, {"uploadId", mp.s3_upload_id}}, {}, now, exp);
    t.method = "PUT";
    t.offset = off;
    t.size = std::min(mp.part_size, size - off);
    t.part_number = n;
    t.expires_at_us = expires_at;
    g.parts.push_back(std::move(t));
  }
  return g;
}

// The multipart upload behind upload_id: batond's own record (memory, then state_dir after a
// restart), else the store's list of uploads in progress under the staging key. Without
// either (no state_dir, a store that lists none) such an upload starts again.
std::optional<s3_backend::multipart> s3_backend::find_multipart(const std::string& upload_id, const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = multiparts_.find(upload_id);
    if (it != multiparts_.end()) return it->second;
  }
  if (auto kept = recorded_multipart(upload_id)) {
    // Still there? A store that lists parts says NoSuchUpload for one aborted or expired
    // (a lifecycle rule); one that cannot list them (501) is taken at its word, and a record
    // gone stale there is forgotten when finishing finds nothing (finish_upload).
    reply parts = call("GET", key, {{"uploadId", kept->s3_upload_id}, {"max-parts", "1"}}, {});
    if (parts.status != 404) {
      std::lock_guard<std::mutex> lock(mu_);
      multiparts_[upload_id] = *kept;
      return kept;
    }
    forget_multipart(upload_id);
  }
  reply r = call("GET", "", {{"prefix", key}, {"uploads", ""}}, {});
  if (r.status != 200) return std::nullopt;
  // The newest upload of exactly this key (size 0: not known from the list).
  std::optional<multipart> found;
  for (size_t pos = 0; (pos = r.body.find("<Upload>", pos)) != std::string::npos; ++pos) {
    std::string one = r.body.substr(pos, r.body.find("</Upload>", pos) - pos);
    if (xml_field(one, "Key") == key) found = multipart{xml_field(one, "UploadId"), 0, 0};
  }
  return found;
}

finish_result s3_backend::finish_upload(const std::string& upload_id, const std::string& sha256, uint64_t size,
                                        const std::vector<part_etag>& parts) {
  if (!util::is_sha256_hex(sha256)) return {finish_status::digest_mismatch, "'" + sha256 + "' is not a SHA-256"};
  const std::string key = staging_key(upload_id);
  const bool multipart_upload = is_multipart(cfg_, size);

  if (auto mp = multipart_upload ? find_multipart(upload_id, key) : std::nullopt) {
    if (parts.empty())
      return {finish_status::incomplete, "a multipart upload is finished with its parts' ETags; none were given"};
    std::vector<part_etag> sorted = parts;
    std::sort(sorted.begin(), sorted.end(), [](const part_etag& a, const part_etag& b) { return a.part_number < b.part_number; });
    std::string xml = "<CompleteMultipartUpload>";
    for (const auto& pe : sorted)
      xml +=
          "<Part><PartNumber>" + std::to_string(pe.part_number) + "</PartNumber><ETag>" + xml_escape(pe.etag) + "</ETag></Part>";
    xml += "</CompleteMultipartUpload>";
    reply r = call("POST", key, {{"uploadId", mp->s3_upload_id}}, {}, xml);
    const std::string code = xml_field(r.body, "Code");
    if (!ok_with_body(r)) {
      if (code == "InvalidPart" || code == "InvalidPartOrder" || code == "EntityTooSmall" || r.status == 400)
        return {finish_status::incomplete, "CompleteMultipartUpload of " + key + " refused: " + r.describe()};
      // NoSuchUpload: completed before (an earlier finish that failed later); the staged object says.
      if (code != "NoSuchUpload") return unavailable("CompleteMultipartUpload of " + key, r);
    }
    forget_multipart(upload_id);
  }

  // What arrived: its size, and the store's own checksum when that is how we verify (single
  // PUTs only: a multipart object's checksum is one of its parts' checksums, not of its bytes).
  const bool by_checksum = cfg_.verify == "store_checksum" && !multipart_upload;
  sigv4::pairs head_headers;
  if (by_checksum) head_headers.emplace_back("x-amz-checksum-mode", "ENABLED");
  reply head = call("HEAD", key, {}, head_headers);
  // Nothing staged is nothing sent, also when blobs/<digest> exists: that another upload stored
  // these bytes proves nothing about this one's (knowing a digest is not having its bytes). A
  // commit retried in the same run of batond never gets here (the routes remember it finished).
  if (head.status == 404)
    return {finish_status::incomplete, "0 of " + std::to_string(size) + " bytes arrived (nothing at " + key + ")"};
  if (head.status != 200) return unavailable("HEAD " + key, head);
  const std::string length = head.header("content-length");
  if (length != std::to_string(size)) {
    discard(key);  // a PUT is whole or nothing: these bytes can never become the blob
    return {finish_status::incomplete, length + " of " + std::to_string(size) + " bytes arrived at " + key + "; send it again"};
  }
  if (by_checksum) {
    const std::string got = head.header("x-amz-checksum-sha256"), want = digest_base64(sha256);
    if (got.empty())
      return {finish_status::unavailable, "the store keeps no SHA-256 checksum of " + key +
                                              " (storage.s3.verify: store_checksum needs one; use read for this store)"};
    if (got != want) {
      discard(key);
      return {finish_status::digest_mismatch, "the store's SHA-256 of " + key + " is " + got + ", not " + want};
    }
  } else {
    finish_result v = verify_by_reading(key, sha256);
    if (v.status != finish_status::stored) return v;
  }

  finish_result c = copy_to_blob(key, blob_key(sha256), size);
  if (c.status != finish_status::stored) return c;
  discard(key);
  return {finish_status::stored, blob_key(sha256)};
}

// Streams the staged object back and hashes it as it comes (never held whole).
finish_result s3_backend::verify_by_reading(const std::string& key, const std::string& sha256) {
  util::sha256_stream hash;
  uint64_t got_bytes = 0;
  reply r = call("GET", key, {}, {}, {}, [&](const char* d, size_t n) {
    got_bytes += n;
    hash.update(d, n);
    return true;
  });
  if (r.status == 404) return {finish_status::incomplete, "nothing at " + key + " to read back"};
  if (r.status != 200) return unavailable("GET " + key, r);
  const std::string got = hash.hex();
  if (got != sha256) {
    discard(key);
    return {finish_status::digest_mismatch,
            "the " + std::to_string(got_bytes) + " bytes at " + key + " hash to " + got + ", not " + sha256 + "; discarded"};
  }
  return {finish_status::stored, {}};
}

finish_result s3_backend::copy_to_blob(const std::string& from, const std::string& to, uint64_t size) {
  const std::string source = "/" + cfg_.bucket + "/" + sigv4::uri_encode(from, true);
  if (size <= opt_.max_copy_bytes) {
    reply r = call("PUT", to, {}, {{"x-amz-copy-source", source}});
    if (!ok_with_body(r)) return unavailable("CopyObject " + from + " -> " + to, r);
    return {finish_status::stored, {}};
  }
  // Larger than one CopyObject may copy: a multipart upload of the destination whose parts
  // are ranges of the source (UploadPartCopy).
  reply c = call("POST", to, {{"uploads", ""}}, {});
  const std::string id = xml_field(c.body, "UploadId");
  if (c.status != 200 || id.empty()) return unavailable("CreateMultipartUpload of " + to + " (to copy " + from + ")", c);
  std::string xml = "<CompleteMultipartUpload>";
  int n = 1;
  for (uint64_t off = 0; off < size; off += opt_.max_copy_bytes, ++n) {
    const uint64_t last = std::min(size, off + opt_.max_copy_bytes) - 1;
    reply r = call("PUT", to, {{"partNumber", std::to_string(n)}, {"uploadId", id}},
                   {{"x-amz-copy-source", source},
                    {"x-amz-copy-source-range", "bytes=" + std::to_string(off) + "-" + std::to_string(last)}});
    const std::string etag = xml_field(r.body, "ETag");
    if (!ok_with_body(r) || etag.empty()) {
      call("DELETE", to, {{"uploadId", id}}, {});  // abort: the parts copied so far are not kept
      return unavailable("UploadPartCopy " + std::to_string(n) + " of " + from + " -> " + to, r);
    }
    xml += "<Part><PartNumber>" + std::to_string(n) + "</PartNumber><ETag>" + etag + "</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  reply done = call("POST", to, {{"uploadId", id}}, {}, xml);
  if (!ok_with_body(done)) {
    call("DELETE", to, {{"uploadId", id}}, {});
    return unavailable("CompleteMultipartUpload of the copy " + from + " -> " + to, done);
  }
  return {finish_status::stored, {}};
}

void s3_backend::discard(const std::string& key) {
  reply r = call("DELETE", key, {}, {});
  if (r.status != 204 && r.status != 200 && r.status != 404)
    spdlog::warn("s3: could not delete {} ({}); the bucket's lifecycle rule for incoming/ removes it", key, r.describe());
}

transfer s3_backend::grant_download(const holder&, const std::string& sha256, uint64_t size, time_us now, int64_t ttl_seconds) {
  require_digest(sha256);
  const int64_t exp = expiry(ttl_seconds);
  transfer t;
  t.url = presign_url("GET", blob_key(sha256), {}, {}, now, exp);
  t.method = "GET";
  t.size = size;
  t.expires_at_us = now + exp * 1000000;
  return t;
}

bool s3_backend::contains(const std::string& sha256, uint64_t size) {
  if (!util::is_sha256_hex(sha256)) return false;
  reply r = call("HEAD", blob_key(sha256), {}, {});
  if (r.status != 200 && r.status != 404) spdlog::warn("s3: HEAD {}: {}; taken as not stored", blob_key(sha256), r.describe());
  return r.status == 200 && r.header("content-length") == std::to_string(size);
}

bool s3_backend::remove(const std::string& sha256) {
  if (!util::is_sha256_hex(sha256)) return true;  // nothing can be stored under a name that is not a digest
  reply r = call("DELETE", blob_key(sha256), {}, {});
  if (r.status == 204 || r.status == 200 || r.status == 404) return true;
  spdlog::warn("s3: DELETE {}: {}", blob_key(sha256), r.describe());
  return false;
}

s3_backend::prepared s3_backend::prepare(const std::string& method, const std::string& key, const sigv4::pairs& query,
                                         sigv4::pairs headers, const std::string& body, int64_t now_unix_seconds) const {
  const place p = locate(key);
  // A bucket-level call (key "") addresses "/bucket/" path-style; S3 wants "/bucket" there.
  std::string path = p.path;
  if (key.empty() && cfg_.path_style) path.pop_back();
  const std::string payload = body.empty() ? sigv4::empty_payload_sha256 : util::sha256_hex(body);
  headers.emplace_back("x-amz-content-sha256", payload);
  const auto s = sigv4::sign_headers({cfg_.access_key_id, cfg_.secret_access_key}, {cfg_.region, "s3"},
                                     sigv4::request{method, p.host, path, query, headers}, now_unix_seconds, payload);
  prepared out;
  out.base = p.base;
  out.target = path.empty() ? "/" : sigv4::uri_encode(path, true);
  std::string q;
  for (const auto& [n, v] : query)
    q += (q.empty() ? "?" : "&") + sigv4::uri_encode(n, false) + (v.empty() ? "" : "=" + sigv4::uri_encode(v, false));
  out.target += q;
  out.headers.emplace_back("Host", p.host);
  out.headers.emplace_back("x-amz-date", s.amz_date);
  out.headers.emplace_back("Authorization", s.authorization);
  out.headers.insert(out.headers.end(), headers.begin(), headers.end());
  return out;
}

s3_backend::reply s3_backend::call(const std::string& method, const std::string& key, const sigv4::pairs& query,
                                   sigv4::pairs headers, const std::string& body,
                                   const std::function<bool(const char*, size_t)>& sink) {
  const prepared req = prepare(method, key, query, std::move(headers), body, now_seconds());
  httplib::Headers h(req.headers.begin(), req.headers.end());

  httplib::Client cli(req.base);
  cli.set_url_encode(false);  // the target is encoded already, as it was signed
  cli.set_connection_timeout(opt_.connect_timeout_seconds, 0);
  cli.set_read_timeout(opt_.io_timeout_seconds, 0);
  cli.set_write_timeout(opt_.io_timeout_seconds, 0);
  cli.set_tcp_nodelay(true);
  if (scheme_ == "https") {
    cli.enable_server_certificate_verification(true);
    if (!cfg_.ca_file.empty()) cli.set_ca_cert_path(cfg_.ca_file.c_str());
  }

  reply out;
  httplib::Result res{nullptr, httplib::Error::Unknown};
  if (method == "GET" && sink) {
    int status = 0;
    res = cli.Get(
        req.target.c_str(), h,
        [&](const httplib::Response& r) {
          status = r.status;
          return true;
        },
        [&](const char* d, size_t n) {
          if (status == 200) return sink(d, n);
          if (out.body.size() < 65536) out.body.append(d, n);  // an error's XML, for describe()
          return true;
        });
  } else if (method == "GET") {
    res = cli.Get(req.target.c_str(), h);
  } else if (method == "HEAD") {
    res = cli.Head(req.target.c_str(), h);
  } else if (method == "PUT") {
    res = cli.Put(req.target.c_str(), h, body, body.empty() ? "" : "application/xml");
  } else if (method == "POST") {
    res = cli.Post(req.target.c_str(), h, body, "application/xml");
  } else if (method == "DELETE") {
    res = cli.Delete(req.target.c_str(), h);
  } else {
    throw std::logic_error("s3 backend: no call for method " + method);
  }
  if (!res) {
    out.error = method + " " + req.base + ": " + httplib::to_string(res.error()) + " error";
    if (res.error() == httplib::Error::SSLServerVerification)
      out.error += ": the store's certificate did not verify (storage.s3.ca_file)";
    return out;
  }
  out.status = res->status;
  for (const auto& [n, v] : res->headers) {
    std::string l = n;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    out.headers.emplace(l, v);
  }
  if (!(method == "GET" && sink)) out.body = res->body;
  return out;
}

void s3_backend::record_multipart(const std::string& upload_id, const multipart& mp) {
  if (opt_.state_dir.empty()) return;
  // (upload ids are [A-Za-z0-9_-]: file names as they are)
  const std::string text = mp.s3_upload_id + " " + std::to_string(mp.size) + " " + std::to_string(mp.part_size) + "\n";
  if (!write_durably(opt_.state_dir, upload_id, text))  // the upload still works; only a restart loses it
    spdlog::warn("storage: cannot record multipart upload {} in {}: {}", upload_id, opt_.state_dir, std::strerror(errno));
}

std::optional<s3_backend::multipart> s3_backend::recorded_multipart(const std::string& upload_id) {
  if (opt_.state_dir.empty()) return std::nullopt;
  std::ifstream in(opt_.state_dir + "/" + upload_id);
  multipart mp;
  if (!(in >> mp.s3_upload_id >> mp.size >> mp.part_size) || mp.s3_upload_id.empty()) return std::nullopt;
  return mp;
}

void s3_backend::forget_multipart(const std::string& upload_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    multiparts_.erase(upload_id);
  }
  if (!opt_.state_dir.empty()) ::unlink((opt_.state_dir + "/" + upload_id).c_str());
}

}  // namespace baton::storage
