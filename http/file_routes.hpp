#pragma once
// The data plane's JSON routes (docs/storage.md): bundle uploads, a worker's file sets
// (checkpoints, outputs) and a job's files with their downloads. The core decides who may
// store or read what (core/app/storage_decide.hpp); the backend (http/storage/backend.hpp) hands
// out the transfers and checks what arrived; the bytes never pass through here.
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/app/commands.hpp"
#include "http/api_routes.hpp"
#include "http/router.hpp"

namespace baton::http {

// Uploads and file sets granted and not yet committed, in memory: a restart forgets them,
// and the caller asks again (the upload ids are the same, so the bytes batond holds stay).
class transfer_book {
 public:
  struct upload {
    std::string holder;  // who may complete it (core::principal::actor())
    core::blob_ref blob;
    core::time_us expires = 0;
    bool finished = false;  // the backend stored it (a complete sent again must not finish it twice)
  };
  struct file_set {
    std::string holder, job_id, kind;
    uint32_t attempt = 0;
    std::vector<core::stored_file> files;
    std::map<std::string, core::blob_ref> uploads;  // upload id -> the blob it brings
    core::checkpoint_report report;
    core::time_us expires = 0;
    bool committed = false;  // kept a while, so a commit sent again is answered the same
    // Uploads of this set the backend stored already: a commit sent again counts them without
    // finishing them again. Only this set's own uploads: a blob stored for someone else is
    // never taken as arrived (whoever names a digest must have sent its bytes once).
    std::set<std::string> finished;
  };
  static constexpr size_t max_entries = 4096;  // of each kind, all callers together
  static constexpr size_t max_sets_per_holder = 8;

  // False when full (after dropping expired entries).
  bool put_upload(const std::string& id, upload u, core::time_us now);
  std::optional<upload> find_upload(const std::string& id, core::time_us now);
  void drop_upload(const std::string& id);
  bool put_set(const std::string& id, file_set s, core::time_us now);
  std::optional<file_set> find_set(const std::string& id, core::time_us now);
  void mark_committed(const std::string& id);
  void mark_finished(const std::string& set_id, const std::string& upload_id);
  void mark_upload_finished(const std::string& id);

 private:
  void expire(core::time_us now);
  std::mutex mu_;
  std::map<std::string, upload> uploads_;
  std::map<std::string, file_set> sets_;
};

// The upload id of (user, digest, size): the same for the same scope and blob, so an upload
// survives batond's restart and is resumed from the bytes already held.
std::string upload_id_of(const std::string& user, const core::blob_ref& b);

void add_file_routes(router& server, api_context ctx);

}  // namespace baton::http
