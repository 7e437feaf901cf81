#pragma once
// Who holds which blob (docs/storage.md): bundles, checkpoints and outputs are blobs named by
// their SHA-256 and size. The book says which jobs and users refer to each blob, how many
// bytes each user holds (the quota), which checkpoints a job keeps, and which blobs nothing
// refers to any more (the collector's work). It changes only by the `storage` stream's events,
// so replay rebuilds it, and every store, release and removal is a decision of its own here.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/events/domain.hpp"

namespace baton::core {

inline constexpr const char* storage_stream = "storage";

// Size limits of what a manifest may name (docs/storage.md).
inline constexpr size_t max_files_per_set = 1024;  // and the manifest within the 256 KiB body limit
inline constexpr size_t max_stored_path_bytes = 1024;
inline constexpr uint64_t max_blob_bytes = 5ULL << 40;  // 5 TiB, S3's object limit

struct blob_ref {
  std::string sha256;  // 64 lowercase hex digits
  uint64_t size = 0;
  bool operator==(const blob_ref& o) const { return sha256 == o.sha256 && size == o.size; }
};

struct stored_file {
  std::string path;  // relative to the job's working dir, no "..", no leading "/"
  blob_ref blob;
};

// A checkpoint or a job's outputs: a manifest of files, each a stored blob.
struct file_set {
  std::string id;
  std::string kind;  // "checkpoint" or "output"
  uint32_t attempt = 0;
  time_us stored_at = 0;
  std::vector<stored_file> files;
};

struct job_storage {
  std::string user;  // whose quota its blobs count against
  std::optional<blob_ref> bundle;
  std::vector<file_set> checkpoints;  // oldest first, at most the configured number
  std::optional<file_set> outputs;
};

struct blob_state {
  uint64_t size = 0;
  uint32_t holds = 0;     // references to it (jobs' bundles and sets, unclaimed uploads)
  bool removing = false;  // the collector is removing it: not stored for anyone any more
  time_us stored_at = 0;
};

struct storage_book {
  std::map<std::string, blob_state> blobs;                           // digest -> its state
  std::map<std::pair<std::string, std::string>, uint32_t> holds;     // (user, digest) -> references
  std::map<std::string, uint64_t> used_by_user;                      // bytes, each digest once per user
  std::map<std::string, job_storage> jobs;                           // job id -> what it refers to
  std::map<std::pair<std::string, std::string>, time_us> unclaimed;  // (user, digest) -> uploaded at: bundles no job used yet
  std::set<std::string> unreferenced;                                // stored blobs nothing holds (to remove)
  uint64_t stored_bytes = 0;                                         // all stored blobs
};

// What the storage rules are set to (storage: in the config).
struct storage_rules {
  bool enabled = true;
  uint64_t user_quota_bytes = 0;  // 0: none
  uint32_t keep_checkpoints = 3;
  int64_t unclaimed_upload_seconds = 24 * 3600;
};

// A job's bundle or latest checkpoint as its fields name them: "blob:<sha256>:<size>" in
// input_bundle_path, "blob-set:<set id>" in latest_checkpoint_manifest_path.
std::string blob_uri(const blob_ref& b);
std::optional<blob_ref> parse_blob_uri(const std::string& s);
std::string set_uri(const std::string& set_id);
std::optional<std::string> parse_set_uri(const std::string& s);

// "" when the path may name a stored file, else why not.
std::string stored_path_problem(const std::string& path);
// The user an operator acts as when naming none: their name, "admin" for the admin token's
// holder who declared none. Jobs they submit and bundles they upload are that user's.
std::string caller_user(const std::string& caller_name);

bool holds_blob(const storage_book& b, const std::string& user, const std::string& sha256);
bool is_stored(const storage_book& b, const blob_ref& r);  // stored, with that size, not being removed
const job_storage* job_files_of(const storage_book& b, const std::string& job_id);

// Applies one event of the storage stream.
void evolve_storage(storage_book& b, const ev::payload& payload, time_us at);

// --- events (each decided by the functions in core/app/storage_decide.hpp) ---
domain_event blob_stored_event(const blob_ref& r, const std::string& user, const std::string& purpose, const std::string& job_id);
// A bundle upload held for `user` until a job uses it or it expires.
domain_event upload_held_event(const std::string& user, const blob_ref& r);
domain_event job_bound_event(const std::string& job_id, const std::string& user, const std::optional<blob_ref>& bundle,
                             const std::vector<file_set>& checkpoints);
domain_event quota_refused_event(const std::string& user, uint64_t quota, uint64_t used, uint64_t requested);

nlohmann::json to_json(const file_set& s);
ev::file_set_row file_set_row_of(const file_set& s);   // as storage events record it
file_set file_set_from_json(const nlohmann::json& j);  // throws nlohmann's errors on a bad shape
nlohmann::json to_json(const storage_book& b);         // for world snapshots
storage_book storage_book_from_json(const nlohmann::json& j);

}  // namespace baton::core
