#pragma once
// Blobs in one bucket of an S3-compatible store (docs/storage.md, "S3 backend"). Workers get
// presigned URLs (one key, one method, a short expiry); batond holds the only credential and
// makes its own calls (multipart setup, verification, copy, delete) with signed headers.
//
// An upload goes to a staging key, <prefix>incoming/<upload_id>, and reaches
// <prefix>blobs/<sha256> only by batond's server-side copy once size and digest were checked:
// a store that does not check x-amz-checksum-sha256 would otherwise let one uploader put other
// bytes under a digest another user's jobs refer to.
//
// grant_upload throws std::runtime_error (naming the store's answer) when it must ask the
// store for a multipart upload and cannot, and grant_* throw std::invalid_argument for a name
// that is not a digest or a size S3 cannot hold; the other calls report through their results
// (contains answers false, and remove false, when the store cannot be asked).
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "http/storage/backend.hpp"
#include "http/storage/sigv4.hpp"

namespace baton::storage {

class s3_backend : public backend {
 public:
  struct options {
    int connect_timeout_seconds = 5;
    int io_timeout_seconds = 120;  // a server-side copy of gigabytes answers only when done
    // Largest object one CopyObject may copy (S3's limit); above it UploadPartCopy, in parts
    // of at most this size. A setting so that a test can reach the part-copy path.
    uint64_t max_copy_bytes = 5ull << 30;
    // Where the multipart uploads in progress are recorded (one small file per upload, made
    // by batond, never a credential), so that after a restart an upload asked for again gets
    // the same multipart upload on any store: some cannot list them.
    // Empty: in memory, and on the store's list where it has one.
    std::string state_dir;
  };

  explicit s3_backend(config::s3_config cfg);
  s3_backend(config::s3_config cfg, options opt);

  std::string name() const override { return "s3"; }
  upload_grant grant_upload(const holder& who, const std::string& upload_id, const std::string& sha256, uint64_t size,
                            time_us now, int64_t ttl_seconds) override;
  finish_result finish_upload(const std::string& upload_id, const std::string& sha256, uint64_t size,
                              const std::vector<part_etag>& parts) override;
  transfer grant_download(const holder& who, const std::string& sha256, uint64_t size, time_us now, int64_t ttl_seconds) override;
  bool contains(const std::string& sha256, uint64_t size) override;
  bool remove(const std::string& sha256) override;

  // The keys an upload and a blob live under.
  std::string staging_key(const std::string& upload_id) const { return cfg_.prefix + "incoming/" + upload_id; }
  std::string blob_key(const std::string& sha256) const { return cfg_.prefix + "blobs/" + sha256; }
  // A presigned URL for `key` (absolute), as transfers carry them.
  std::string presign_url(const std::string& method, const std::string& key, const sigv4::pairs& query,
                          const sigv4::pairs& headers, time_us now, int64_t expires_seconds) const;
  // The part size a multipart upload of `size` bytes uses (part_size_mb, raised so that no
  // upload needs more than S3's 10000 parts).
  uint64_t part_size_for(uint64_t size) const;

  // One of batond's own calls, signed in header form at the time given: where to connect, the
  // encoded path and query to send, and every header to send with it (Host and Authorization too).
  struct prepared {
    std::string base;
    std::string target;
    sigv4::pairs headers;
  };
  prepared prepare(const std::string& method, const std::string& key, const sigv4::pairs& query, sigv4::pairs headers,
                   const std::string& body, int64_t now_unix_seconds) const;

  // What one of batond's own calls got back; status 0 when no answer came.
  struct reply {
    int status = 0;
    std::string error;                                // transport error, when status is 0
    std::multimap<std::string, std::string> headers;  // lower-case names
    std::string body;
    std::string header(const std::string& lower_name) const;
    std::string describe() const;  // "HTTP 404 NoSuchKey: The specified key does not exist." or the transport error
  };

 private:
  struct multipart {
    std::string s3_upload_id;
    uint64_t size = 0;
    uint64_t part_size = 0;
  };
  struct place {
    std::string base;  // scheme://host[:port] to connect to
    std::string host;  // the Host header (port left out when it is the scheme's default)
    std::string path;  // unencoded: /bucket/key (path style) or /key
  };
  place locate(const std::string& key) const;
  int64_t expiry(int64_t ttl_seconds) const;
  reply call(const std::string& method, const std::string& key, const sigv4::pairs& query, sigv4::pairs headers,
             const std::string& body = {}, const std::function<bool(const char*, size_t)>& sink = {});
  std::optional<multipart> find_multipart(const std::string& upload_id, const std::string& key);
  // The record of upload_id's multipart upload (state_dir): written before its URLs are
  // handed out, read after a restart, removed once the upload is finished or found gone.
  void record_multipart(const std::string& upload_id, const multipart& mp);
  std::optional<multipart> recorded_multipart(const std::string& upload_id);
  void forget_multipart(const std::string& upload_id);
  finish_result copy_to_blob(const std::string& from, const std::string& to, uint64_t size);
  finish_result verify_by_reading(const std::string& key, const std::string& sha256);
  void discard(const std::string& key);

  config::s3_config cfg_;
  options opt_;
  std::string scheme_, endpoint_host_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, multipart> multiparts_;  // upload_id -> the store's multipart upload
};

}  // namespace baton::storage
