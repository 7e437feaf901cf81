#pragma once
// The local backend (docs/storage.md): blobs as files under the data directory, their bytes
// streamed through batond's own /blobs/... routes (http/blob_routes). Shell code: files and
// grants, no decisions (who may have which blob is the core's; the caller names the holder).
//
//   <data_dir>/blobs/sha256/<first two hex>/<sha256>   a stored blob (0600, directories 0700)
//   <data_dir>/blobs/incoming/<upload_id>              an upload in progress; its length is
//                                                      what batond holds, so an upload resumes
//                                                      after a restart from there
//
// Grants (uploads and downloads) live in memory only, each with its expiry: after a restart
// the caller asks again (an upload's id is the same, so its bytes are found again). A
// download grant is a random 128-bit name bound to its holder, blob and expiry.
//
// Thread-safe. Everything that touches the disk (all but find_upload and
// find_download) belongs off the HTTP I/O thread.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/util/sha256.hpp"
#include "events/free_space.hpp"
#include "http/storage/backend.hpp"

namespace baton::storage {

struct local_options {
  std::string data_dir;
  uint64_t min_free_bytes = 0;  // event_log.min_free_mb: below this, uploads stop (507 storage_full)
  // A stored blob found damaged (a whole download's digest, or its size): the daemon records
  // it. `found` is the digest the bytes have, or "size <n>".
  std::function<void(const std::string& sha256, const std::string& found)> on_corrupt;
  int64_t stale_incoming_seconds = 86400;  // sweep(): incoming files untouched this long go
};

class local_backend : public backend, public std::enable_shared_from_this<local_backend> {
 public:
  // Creates <data_dir>/blobs/{sha256,incoming} (0700); throws std::runtime_error naming the
  // directory if it cannot.
  static std::shared_ptr<local_backend> open(local_options o);
  ~local_backend() override;

  std::string name() const override { return "local"; }
  // upload_id must be 1..128 of [A-Za-z0-9_-] and sha256 64 lowercase hex (else
  // std::invalid_argument naming the field). A blob already stored: have = size, no parts.
  upload_grant grant_upload(const holder& who, const std::string& upload_id, const std::string& sha256, uint64_t size,
                            time_us now, int64_t ttl_seconds) override;
  // Only looks: the PUT route stores the blob when its last byte arrives. Stored: the upload's
  // grant is dropped. Else incomplete, the detail saying how many bytes batond holds.
  finish_result finish_upload(const std::string& upload_id, const std::string& sha256, uint64_t size,
                              const std::vector<part_etag>& parts) override;
  transfer grant_download(const holder& who, const std::string& sha256, uint64_t size, time_us now, int64_t ttl_seconds) override;
  bool contains(const std::string& sha256, uint64_t size) override;
  bool remove(const std::string& sha256) override;

  // Removes incoming files no upload touched for stale_incoming_seconds (none being written)
  // and drops expired grants; how many files went.
  size_t sweep(time_us now);

  const transfer_counters& counters() const { return counters_; }
  // Whether this upload's own bytes arrived and verified in this run (only then is it stored
  // for its caller: a blob stored for someone else proves nothing about this one).
  bool proven(const std::string& upload_id, const std::string& sha256, uint64_t size);
  // Why an upload may not write now (free space below min_free_bytes); empty when it may.
  std::optional<std::string> short_of_space() const { return space_.short_of_space(); }
  std::string blob_path(const std::string& sha256) const;
  std::string incoming_path(const std::string& upload_id) const;

  // --- the /blobs/... routes ---
  struct grant_info {
    holder who;
    std::string sha256;
    uint64_t size = 0;
  };
  // The live (unexpired) upload grant; memory only.
  std::optional<grant_info> find_upload(const std::string& upload_id, time_us now);
  // The bytes an upload holds (its incoming file's length; the size once stored). Disk.
  uint64_t held(const std::string& upload_id, const grant_info& u);

  // An upload being written: one connection's PUT body, in order, on one thread at a time.
  class upload_writer {
   public:
    ~upload_writer();  // without finish(): what was written stays, for a resume
    enum class status { ok, no_space, io_error };
    // Appends and hashes; on failure nothing of these bytes stays (the file is cut back).
    status write(const char* data, size_t n, std::string& why);
    // Every byte arrived: size and digest checked, the file fsynced and renamed to the
    // digest's name, the directory fsynced (stored); or discarded (digest_mismatch).
    finish_result finish();
    uint64_t held() const { return held_; }

   private:
    friend class local_backend;
    upload_writer() = default;
    std::shared_ptr<local_backend> owner_;
    std::string id_, sha256_;
    uint64_t size_ = 0, held_ = 0;
    int fd_ = -1;
    std::unique_ptr<util::sha256_stream> hash_;
    bool finished_ = false;
    bool counted_ = false;  // handed out (an upload in flight)
  };
  enum class open_status { ok, unknown, busy, offset, length, io_error };
  struct open_result {
    open_status status = open_status::unknown;
    std::unique_ptr<upload_writer> writer;
    uint64_t held = 0;   // bytes batond holds (for 409 upload_offset)
    std::string detail;  // io_error: what failed
  };
  // Opens the upload for a PUT of `length` bytes from `offset` (which must be what batond
  // holds, and offset + length its size). A resume re-hashes what is held first (unless this
  // run still has its hash from the connection that wrote it). One writer per upload at a time.
  open_result open_upload(const std::string& upload_id, uint64_t offset, uint64_t length, time_us now);

  std::optional<grant_info> find_download(const std::string& grant, time_us now);

  // Bytes [first, first + count) of a stored blob. A whole blob (first 0, count size) is hashed
  // as it is read and its last chunk is held back until the digest matched: a damaged blob is
  // reported (on_corrupt, a warning) and never read whole.
  class blob_reader {
   public:
    ~blob_reader();
    // Up to max bytes; -1 when nothing more may be read (damaged, or an I/O error).
    int64_t read(char* buf, size_t max);
    uint64_t count() const { return count_; }

   private:
    friend class local_backend;
    blob_reader() = default;
    std::shared_ptr<local_backend> owner_;
    std::string sha256_;
    uint64_t size_ = 0, first_ = 0, count_ = 0, done_ = 0;
    int fd_ = -1;
    std::unique_ptr<util::sha256_stream> hash_;  // whole blobs only
    bool failed_ = false;
  };
  enum class blob_status { ok, missing, damaged };
  struct blob_open {
    blob_status status = blob_status::missing;
    std::unique_ptr<blob_reader> reader;
  };
  blob_open open_blob(const std::string& sha256, uint64_t size, uint64_t first, uint64_t count);

 private:
  explicit local_backend(local_options o);
  struct grant_entry : grant_info {  // a download's whole entry
    time_us expires_at = 0;
  };
  struct upload_entry : grant_entry {
    bool writing = false;
    // Its bytes arrived and hashed to the digest in this run. Only then is it stored for its
    // caller: a blob stored for someone else proves nothing about this caller, who must send
    // the bytes once (else naming a digest would be enough to read another user's data).
    bool proven = false;
    // The hash of the first `hashed` bytes, kept by the last writer that went without
    // finishing, so a resume in this run need not read them again.
    std::shared_ptr<util::sha256_stream> hash;
    uint64_t hashed = 0;
  };
  void drop_expired(time_us now);  // (mu_ held)
  enum class hash_keep { leave, replace, clear };
  void writer_gone(const std::string& id, hash_keep keep, std::unique_ptr<util::sha256_stream> hash, uint64_t hashed);
  void report_corrupt(const std::string& sha256, const std::string& found);
  finish_result store(upload_writer& w);

  local_options opts_;
  std::string blobs_, incoming_;
  events::free_space_guard space_;
  transfer_counters counters_;
  std::mutex mu_;
  std::map<std::string, upload_entry> uploads_;
  std::map<std::string, grant_entry> downloads_;
};

}  // namespace baton::storage
