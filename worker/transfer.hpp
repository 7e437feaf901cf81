#pragma once
// The client side of batond's data plane (docs/storage.md): following transfers to move blob
// bytes between a local file and batond or an object store, and the protocol steps built on
// them (store a bundle, store a file set, download a blob). Linked by baton-worker and the
// baton CLI (library baton_transfer), so it knows neither: the caller says where batond is
// and which credential header it sends.
//
// Bytes are streamed from and to disk, never held whole in memory. A relative transfer url is
// batond (the caller's credential is added); an absolute one is a presigned store URL, sent
// with exactly the transfer's headers and nothing else. The process must ignore SIGPIPE (a
// connection cut while a body is sent is then an error that is retried, not the process's end).
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace baton::xfer {

// One request that moves bytes (docs/storage.md "Transfers").
struct transfer {
  std::string url;                                           // "/blobs/..." (batond) or "https://host/key?X-Amz-..." (presigned)
  std::string method;                                        // PUT or GET
  std::vector<std::pair<std::string, std::string>> headers;  // sent exactly
  uint64_t offset = 0;                                       // first byte of the blob this request carries
  uint64_t size = 0;                                         // how many bytes
  int part_number = 0;                                       // multipart: 1-based; 0 otherwise
  bool absolute() const { return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0; }
};

// An upload of one blob: {"sha256", "size", "upload_id", "parts": [transfer...]}.
struct upload_grant {
  std::string upload_id, sha256;
  uint64_t size = 0;
  std::vector<transfer> parts;
};

struct part_etag {
  int part_number = 0;
  std::string etag;
};

// Both throw std::runtime_error naming `where` and the field that is missing or wrong.
transfer transfer_from_json(const nlohmann::json& j, const std::string& where);
upload_grant upload_from_json(const nlohmann::json& j, const std::string& where);

// Who calls batond, and how hard to retry.
struct link {
  std::string base_url;         // "http://host:port" or "https://host:port"
  std::string ca_file;          // an https batond's CA ("" = the system's)
  std::string store_ca_file;    // an https store's CA, for presigned URLs ("" = the system's)
  httplib::Headers credential;  // e.g. {"X-Worker-Token", t}: sent to batond only, never to a store
  int attempts = 8;             // per request (connection errors, 5xx and 429 are retried)
  double base_seconds = 1, max_seconds = 30;
  // Waits between retries; returns false to give up early (shutdown). Default: sleeps.
  std::function<bool(double)> sleep;
  int read_timeout_seconds = 60;
};

enum class failure {
  unavailable,  // no answer, 5xx or 429 after every retry
  expired,      // the transfer is no longer valid (403 from a store, 404 from batond): ask again
  refused,      // any other 4xx from batond (the body says why)
  mismatch,     // the bytes do not have the size or digest they should
  local,        // a local file could not be read or written
};

struct transfer_error : std::runtime_error {
  transfer_error(failure k, const std::string& what, int status = 0, nlohmann::json body = nullptr)
      : std::runtime_error(what), kind(k), status(status), body(std::move(body)) {}
  failure kind;
  int status;
  nlohmann::json body;
  std::string error_code() const { return body.is_object() ? body.value("error", "") : ""; }
};

// A JSON answer from batond.
struct answer {
  int status = 0;  // 0: no answer
  nlohmann::json body;
  std::string error;
  bool ok() const { return status >= 200 && status < 300; }
  // No answer, over the request budget, or a server error (507, a quota refusal, is not one).
  bool retryable() const { return status == 0 || status == 429 || (status >= 500 && status != 507); }
  std::string error_code() const { return body.is_object() ? body.value("error", "") : ""; }
  std::string describe() const;
};

// A JSON request to batond (relative path), retried as the link says.
answer call(const link& l, const std::string& method, const std::string& path, const nlohmann::json& body = nullptr);

// Bytes of this blob moved so far (for a progress bar).
using progress_fn = std::function<void(uint64_t done, uint64_t total)>;

// The hex SHA-256 and size of a file, streamed. Throws transfer_error(local).
std::pair<std::string, uint64_t> hash_file(const std::string& path);

// Follows a GET transfer into `path` (created or replaced), hashing as the bytes arrive; a cut
// is resumed with a Range request. Throws transfer_error: mismatch when the size or digest is
// not (sha256, size) (the file is removed), expired, refused, unavailable, local.
void download(const link& l, const transfer& t, const std::string& sha256, uint64_t size, const std::string& path,
              const progress_fn& progress = {});

// The store parts one upload has sent, by what makes them the same part of the same multipart
// upload (the URL's path and uploadId, the part number, offset and size; not the signature):
// asked for again, batond hands out the same multipart upload (also after its restart), and a
// part the store answered with an ETag is not sent again.
using sent_parts = std::map<std::string, std::string>;

// Sends every part of the upload from the file at `path` (whose bytes must hash to u.sha256).
// A local upload cut midway resumes from the offset batond holds; a store part restarts from
// its start; a part in `sent` is not sent again. Returns the ETags of multipart parts
// (part_number > 0), in part order.
std::vector<part_etag> upload(const link& l, const upload_grant& u, const std::string& path, const progress_fn& progress = {},
                              sent_parts* sent = nullptr);

// --- protocol steps ---

// An operator's bundle: POST /blobs/uploads {"purpose": "bundle"}, the parts, then
// .../complete (asked again if a transfer expired). Returns true when batond already held it.
bool store_bundle(const link& l, const std::string& path, const std::string& sha256, uint64_t size,
                  const progress_fn& progress = {});

// A file of a set: its path relative to the job's working dir, digest and size, and where
// its bytes are on this machine (a copy that does not change while it is sent).
struct set_file {
  std::string path, sha256;
  uint64_t size = 0;
  std::string local;
};

// A worker's file set (kind "checkpoint" or "output"): POST /jobs/{id}/files, the uploads it
// asks for, then .../commit (resending what a 409 upload_incomplete names, asking again when
// a transfer expired). `extra` is merged into the first request (a checkpoint's report fields).
// Returns the set's id once the commit answered 2xx; throws transfer_error otherwise.
std::string store_file_set(const link& l, const std::string& job_id, const std::string& kind, int attempt,
                           const std::vector<set_file>& files, const nlohmann::json& extra = nlohmann::json::object());

// GET /jobs/{id}/files. Throws transfer_error.
nlohmann::json job_files(const link& l, const std::string& job_id);

// Downloads a blob listed in a GET /jobs/{id}/files answer, asking for the answer again when
// its transfer expired. `pick` finds the blob's entry (with "download") in a fresh answer.
void download_listed(const link& l, const std::string& job_id, const nlohmann::json& entry,
                     const std::function<nlohmann::json(const nlohmann::json& files_answer)>& pick, const std::string& path,
                     const progress_fn& progress = {});

}  // namespace baton::xfer
