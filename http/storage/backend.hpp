#pragma once
// Where blobs live: one interface, two backends (docs/storage.md). A blob is named by its
// SHA-256 (lowercase hex) and has a size; nothing refers to one until the backend says it is
// stored and the scheduler has recorded `storage.blob_stored`. Backends move no bytes through
// the scheduler: they hand out transfers (a URL, a method, the headers to send) that the
// caller follows. A relative URL ("/blobs/...") is batond itself (the caller adds its own
// credential); an absolute one is a presigned object-store URL (no credential added).
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace baton::storage {

using time_us = int64_t;

struct transfer {
  std::string url;     // "/blobs/..." (batond) or "https://bucket.host/key?X-Amz-..." (presigned)
  std::string method;  // PUT, GET
  std::vector<std::pair<std::string, std::string>> headers;  // send exactly these with it
  uint64_t offset = 0;                                       // first byte of the blob this request carries
  uint64_t size = 0;                                         // how many bytes it carries
  int part_number = 0;                                       // multipart uploads: 1-based; 0 otherwise
  time_us expires_at_us = 0;
};

// An upload of one blob: the parts still to send. `have` bytes are already with the backend
// (the local backend resumes from there; parts before it are left out).
struct upload_grant {
  std::string upload_id;
  uint64_t have = 0;
  std::vector<transfer> parts;
};

struct part_etag {
  int part_number = 0;
  std::string etag;
};

enum class finish_status {
  stored,           // the blob is stored under its digest, durably, and verified
  incomplete,       // bytes missing (detail says how many arrived)
  digest_mismatch,  // the bytes that arrived do not hash to the digest (the upload is discarded)
  unavailable,      // the backend could not be reached or answered an error (retry later)
  no_space,         // no room (local disk full, or the store refused for space)
};

struct finish_result {
  finish_status status = finish_status::unavailable;
  std::string detail;
};

// Bytes moved through batond itself (the local backend; S3's go straight to the store).
struct transfer_counters {
  std::atomic<uint64_t> bytes_received{0};  // upload bytes written to incoming files
  std::atomic<uint64_t> bytes_served{0};    // download bytes handed to connections
  std::atomic<int64_t> uploads_in_flight{0};
  std::atomic<int64_t> downloads_in_flight{0};
};

// Who a transfer is for ("worker:<id>", "operator:<name>"): the local backend serves a
// transfer only to that caller; presigned URLs are bearer URLs, scoped by key and expiry.
using holder = std::string;

class backend {
 public:
  virtual ~backend() = default;
  virtual std::string name() const = 0;  // "local" or "s3"

  // An upload of (sha256, size). upload_id is the caller's scope's name for it (the same
  // scope, digest and size give the same id, so an upload survives a restart of batond).
  virtual upload_grant grant_upload(const holder& who, const std::string& upload_id, const std::string& sha256, uint64_t size,
                                    time_us now, int64_t ttl_seconds) = 0;
  // Checks what arrived (size and digest) and stores it under its digest. For multipart
  // uploads, `parts` are the ETags the store answered each part with.
  virtual finish_result finish_upload(const std::string& upload_id, const std::string& sha256, uint64_t size,
                                      const std::vector<part_etag>& parts) = 0;
  // A download of a stored blob (Range requests allowed).
  virtual transfer grant_download(const holder& who, const std::string& sha256, uint64_t size, time_us now,
                                  int64_t ttl_seconds) = 0;
  // Whether the blob is stored with that size (no digest check).
  virtual bool contains(const std::string& sha256, uint64_t size) = 0;
  // Removes a stored blob; true when it is gone (also when it was not there).
  virtual bool remove(const std::string& sha256) = 0;
};

}  // namespace baton::storage
