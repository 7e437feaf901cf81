#pragma once
// Checkpoints on the shared filesystem, next to the bundle:
//   <bundle>/.baton-checkpoints/<job id>/objects/<sha256>          file contents, write-once
//   <bundle>/.baton-checkpoints/<job id>/manifest-attempt-<n>.json  name -> {sha256, size, attempt, object}
// A file is copied to a temp name, re-hashed and renamed; then the manifest is written to a temp
// name and renamed over the attempt's manifest, so a reader sees the old or the new manifest and
// every object it names is complete. Entries are never dropped because a file is missing now
// (RelayMD's delete-on-missing wiped a checkpoint). Each attempt writes its own manifest, so a
// worker that lost its job cannot overwrite the manifest its successor reports.
// After each commit, objects that no manifest in the directory names any more (an old version
// of a file that changes every cycle) are removed, so the directory holds what the manifests
// need and not every version ever written.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace baton::worker {

struct manifest_entry {
  std::string sha256;
  uint64_t size = 0;
  int attempt = 0;     // the attempt that wrote this content
  std::string object;  // relative to the manifest's directory
};

struct manifest {
  std::string job_id, worker_id, updated_at;
  int attempt = 0;
  std::map<std::string, manifest_entry> files;  // relative file name -> entry
};

nlohmann::json to_json(const manifest& m);
manifest manifest_from_json(const nlohmann::json& j);  // throws std::runtime_error

// fnmatch with FNM_PATHNAME: "*.chk" matches top-level files only, "out/*.dcd" one level down.
bool glob_matches(const std::string& pattern, const std::string& rel);

// Regular files (no symlinks) under root whose relative path matches a pattern, sorted.
std::vector<std::string> matching_files(const std::string& root, const std::vector<std::string>& patterns);

// Hex SHA-256 of a file, streamed. Throws std::runtime_error if it cannot be read.
std::string sha256_file(const std::string& path);

// Writes text to path atomically: temp file in the same dir, fsync, rename, fsync the dir.
void write_atomically(const std::string& path, const std::string& text);

struct sync_result {
  bool changed = false;               // the manifest was rewritten
  bool vetoed = false;                // files changed but may_commit() said no
  std::vector<std::string> copied;    // file names whose content was stored
  std::vector<std::string> failures;  // "<name>: <why>" (retried next cycle)
  uint64_t objects_removed = 0;       // no manifest named them any more
};

class checkpoint_store {
 public:
  checkpoint_store(std::string dir, std::string job_id, int attempt, std::string worker_id);

  // Copies every file of the manifest at manifest_path into workdir, checking each hash, and
  // adopts its entries. Throws std::runtime_error naming the first problem.
  void restore(const std::string& manifest_path, const std::string& workdir);

  // One cycle: store changed matching files, rewrite the manifest if anything changed and
  // may_commit() (asked only then) agrees. Objects stored without a commit are simply unused.
  sync_result sync(const std::string& workdir, const std::vector<std::string>& patterns,
                   const std::function<bool()>& may_commit = nullptr);

  // This attempt's manifest once written, else "".
  const std::string& manifest_path() const { return written_path_; }
  const manifest& current() const { return m_; }
  const std::string& dir() const { return dir_; }

 private:
  struct seen {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    std::string sha256;
  };
  std::string dir_;
  manifest m_;
  std::string written_path_;
  std::map<std::string, seen> seen_;  // skips re-hashing files whose size and mtime did not change
};

}  // namespace baton::worker
