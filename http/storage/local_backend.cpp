#include "http/storage/local_backend.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/util/hex.hpp"

namespace baton::storage {

namespace {

constexpr size_t hash_chunk = size_t{1} << 20;

bool valid_upload_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// A directory's entries (a rename, an unlink, a new file) are durable once it is fsynced.
bool fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

void make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("storage: cannot create " + dir + ": " + std::strerror(errno));
}

// The file's length, or -1 when it is not there.
int64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_size);
}

bool write_all(int fd, const char* p, size_t n, uint64_t at) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
    at += static_cast<uint64_t>(w);
  }
  return true;
}

// Hands the bytes just written at [at, at+n) to the disk now, and waits for those written
// writeback_lag earlier: the fsync that stores the blob then finds little left to write (the
// disk worked while the bytes arrived, not after), and an upload never holds more than
// writeback_lag of dirty page cache (which the event log's own fsync could otherwise queue
// behind). Only a hint: a failure here is found by that fsync.
void start_writeback(int fd, uint64_t at, size_t n) {
  constexpr uint64_t writeback_lag = uint64_t{32} << 20;
  ::sync_file_range(fd, static_cast<off_t>(at), static_cast<off_t>(n), SYNC_FILE_RANGE_WRITE);
  if (at >= writeback_lag)
    ::sync_file_range(fd, static_cast<off_t>(at - writeback_lag), static_cast<off_t>(n),
                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
}

// pread until n bytes or the end; the count read, -1 on error.
int64_t read_full(int fd, char* p, size_t n, uint64_t at) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<int64_t>(got);
}

std::string random_grant() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("storage: no random bytes for a download grant");
  return util::to_hex(std::string_view(reinterpret_cast<const char*>(b), sizeof b));
}

// The unexpired grant `key` of an upload or download table (its lock held).
template <class Table>
std::optional<local_backend::grant_info> live_grant(const Table& grants, const std::string& key, time_us now) {
  auto it = grants.find(key);
  if (it == grants.end() || it->second.expires_at <= now) return std::nullopt;
  return it->second;  // (its grant_info)
}

}  // namespace

std::shared_ptr<local_backend> local_backend::open(local_options o) {
  return std::shared_ptr<local_backend>(new local_backend(std::move(o)));
}

local_backend::local_backend(local_options o)
    : opts_(std::move(o)),
      blobs_(opts_.data_dir + "/blobs/sha256"),
      incoming_(opts_.data_dir + "/blobs/incoming"),
      space_(opts_.data_dir, opts_.min_free_bytes) {
  make_dir(opts_.data_dir);  // (batond made it already; a test or a tool may not have)
  make_dir(opts_.data_dir + "/blobs");
  make_dir(blobs_);
  make_dir(incoming_);
}

local_backend::~local_backend() = default;

std::string local_backend::blob_path(const std::string& sha256) const {
  return blobs_ + "/" + sha256.substr(0, 2) + "/" + sha256;
}
std::string local_backend::incoming_path(const std::string& upload_id) const { return incoming_ + "/" + upload_id; }

void local_backend::drop_expired(time_us now) {
  for (auto it = uploads_.begin(); it != uploads_.end();)
    it = it->second.expires_at <= now && !it->second.writing ? uploads_.erase(it) : std::next(it);
  for (auto it = downloads_.begin(); it != downloads_.end();)
    it = it->second.expires_at <= now ? downloads_.erase(it) : std::next(it);
}

upload_grant local_backend::grant_upload(const holder& who, const std::string& upload_id, const std::string& sha256,
                                         uint64_t size, time_us now, int64_t ttl_seconds) {
  if (!valid_upload_id(upload_id)) throw std::invalid_argument("upload_id: 1 to 128 of A-Z a-z 0-9 _ -");
  if (!util::is_sha256_hex(sha256)) throw std::invalid_argument("sha256: 64 lowercase hex digits");
  upload_grant g;
  g.upload_id = upload_id;
  if (proven(upload_id, sha256, size)) {  // this upload's bytes arrived already (its commit was lost): nothing to send
    g.have = size;
  } else {
    int64_t have = file_size(incoming_path(upload_id));
    if (have > static_cast<int64_t>(size)) {  // cannot be this blob's: start again
      ::truncate(incoming_path(upload_id).c_str(), 0);
      have = 0;
    }
    g.have = have < 0 ? 0 : static_cast<uint64_t>(have);
  }
  const time_us expires = now + ttl_seconds * 1'000'000;
  {
    std::lock_guard<std::mutex> lock(mu_);
    drop_expired(now);
    auto& e = uploads_[upload_id];
    if (!e.writing && (e.sha256 != sha256 || e.size != size)) e.hash.reset();
    e.who = who;
    e.sha256 = sha256;
    e.size = size;
    e.expires_at = expires;
  }
  if (g.have < size) {
    transfer t;
    t.url = "/blobs/uploads/" + upload_id;
    t.method = "PUT";
    t.offset = g.have;
    t.size = size - g.have;
    t.expires_at_us = expires;
    g.parts.push_back(std::move(t));
  }
  return g;
}

finish_result local_backend::finish_upload(const std::string& upload_id, const std::string& sha256, uint64_t size,
                                           const std::vector<part_etag>&) {
  if (!util::is_sha256_hex(sha256)) return {finish_status::digest_mismatch, "sha256: 64 lowercase hex digits"};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = uploads_.find(upload_id);
    if (it != uploads_.end() && it->second.proven && it->second.sha256 == sha256 && it->second.size == size &&
        contains(sha256, size)) {
      if (!it->second.writing) uploads_.erase(it);
      return {finish_status::stored, ""};
    }
  }
  const int64_t have = valid_upload_id(upload_id) ? std::max<int64_t>(file_size(incoming_path(upload_id)), 0) : 0;
  if (static_cast<uint64_t>(have) == size)
    return {finish_status::incomplete, "all " + std::to_string(size) +
                                           " bytes arrived but were not verified; PUT again with offset=" + std::to_string(size) +
                                           " and an empty body"};
  return {finish_status::incomplete, std::to_string(have) + " of " + std::to_string(size) + " bytes arrived"};
}

transfer local_backend::grant_download(const holder& who, const std::string& sha256, uint64_t size, time_us now,
                                       int64_t ttl_seconds) {
  if (!util::is_sha256_hex(sha256)) throw std::invalid_argument("sha256: 64 lowercase hex digits");
  transfer t;
  const std::string grant = random_grant();
  t.url = "/blobs/downloads/" + grant;
  t.method = "GET";
  t.offset = 0;
  t.size = size;
  t.expires_at_us = now + ttl_seconds * 1'000'000;
  std::lock_guard<std::mutex> lock(mu_);
  drop_expired(now);
  downloads_[grant] = grant_entry{{who, sha256, size}, t.expires_at_us};
  return t;
}

bool local_backend::contains(const std::string& sha256, uint64_t size) {
  if (!util::is_sha256_hex(sha256)) return false;
  return file_size(blob_path(sha256)) == static_cast<int64_t>(size);
}

bool local_backend::remove(const std::string& sha256) {
  if (!util::is_sha256_hex(sha256)) return true;  // (no such file can exist)
  const std::string path = blob_path(sha256);
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return true;
    spdlog::warn("storage: {}", errno_text("cannot remove", path));
    return false;
  }
  return fsync_dir(blobs_ + "/" + sha256.substr(0, 2));
}

size_t local_backend::sweep(time_us now) {
  std::vector<std::string> writing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    drop_expired(now);
    for (const auto& [id, e] : uploads_)
      if (e.writing) writing.push_back(id);
  }
  size_t removed = 0;
  DIR* d = ::opendir(incoming_.c_str());
  if (!d) return 0;
  while (dirent* ent = ::readdir(d)) {
    std::string id = ent->d_name;
    if (!valid_upload_id(id)) continue;  // (".", "..")
    if (std::find(writing.begin(), writing.end(), id) != writing.end()) continue;
    struct stat st {};
    const std::string path = incoming_path(id);
    if (::stat(path.c_str(), &st) != 0) continue;
    const int64_t age_s = now / 1'000'000 - static_cast<int64_t>(st.st_mtime);
    if (age_s < opts_.stale_incoming_seconds) continue;
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(d);
  if (removed > 0) fsync_dir(incoming_);
  return removed;
}

std::optional<local_backend::grant_info> local_backend::find_upload(const std::string& upload_id, time_us now) {
  std::lock_guard<std::mutex> lock(mu_);
  return live_grant(uploads_, upload_id, now);
}

bool local_backend::proven(const std::string& upload_id, const std::string& sha256, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = uploads_.find(upload_id);
  return it != uploads_.end() && it->second.proven && it->second.sha256 == sha256 && it->second.size == size &&
         contains(sha256, size);
}

uint64_t local_backend::held(const std::string& upload_id, const grant_info& u) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = uploads_.find(upload_id);
    if (it != uploads_.end() && it->second.proven && contains(u.sha256, u.size)) return u.size;
  }
  return static_cast<uint64_t>(std::max<int64_t>(file_size(incoming_path(upload_id)), 0));
}

local_backend::open_result local_backend::open_upload(const std::string& upload_id, uint64_t offset, uint64_t length,
                                                      time_us now) {
  open_result r;
  std::shared_ptr<util::sha256_stream> cached;
  uint64_t cached_bytes = 0;
  grant_info u;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = uploads_.find(upload_id);
    if (it == uploads_.end() || it->second.expires_at <= now) return r;  // unknown
    if (it->second.writing) {
      r.status = open_status::busy;
      return r;
    }
    it->second.writing = true;  // from here on, released by the writer or below
    u = it->second;
    cached = it->second.hash;
    cached_bytes = it->second.hashed;
  }
  auto w = std::unique_ptr<upload_writer>(new upload_writer());
  w->owner_ = shared_from_this();
  w->id_ = upload_id;
  w->sha256_ = u.sha256;
  w->size_ = u.size;
  // (Any failure below lets the writer go: its destructor releases the upload.)
  const std::string path = incoming_path(upload_id);
  w->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (w->fd_ < 0) {
    r.status = open_status::io_error;
    r.detail = errno_text("cannot open", path);
    return r;
  }
  struct stat st {};
  ::fstat(w->fd_, &st);
  uint64_t have = static_cast<uint64_t>(st.st_size);
  if (have > u.size) have = ::ftruncate(w->fd_, 0) != 0 ? u.size + 1 : 0;  // cannot be this blob's: start again
  w->held_ = have;
  r.held = have;
  if (offset != have) {
    r.status = open_status::offset;
    return r;
  }
  if (offset + length != u.size) {
    r.status = open_status::length;
    return r;
  }
  // The hash of what is held: from this run's last writer, else read again.
  if (cached && cached_bytes == have) {
    w->hash_ = std::make_unique<util::sha256_stream>(*cached);
  } else {
    w->hash_ = std::make_unique<util::sha256_stream>();
    std::vector<char> buf(have > 0 ? hash_chunk : 0);
    for (uint64_t at = 0; at < have;) {
      int64_t n = read_full(w->fd_, buf.data(), static_cast<size_t>(std::min<uint64_t>(hash_chunk, have - at)), at);
      if (n <= 0) {
        r.status = open_status::io_error;
        r.detail = errno_text("cannot read", path);
        return r;
      }
      w->hash_->update(buf.data(), static_cast<size_t>(n));
      at += static_cast<uint64_t>(n);
    }
  }
  ++counters_.uploads_in_flight;
  w->counted_ = true;
  r.status = open_status::ok;
  r.writer = std::move(w);
  return r;
}

local_backend::upload_writer::~upload_writer() {
  if (fd_ >= 0) ::close(fd_);
  if (!owner_) return;
  if (counted_) --owner_->counters_.uploads_in_flight;
  // A writer that wrote and went without finishing leaves its hash for the next; one refused
  // at its opening leaves the last one's; a finished upload needs none.
  const auto keep = finished_ ? hash_keep::clear : counted_ ? hash_keep::replace : hash_keep::leave;
  owner_->writer_gone(id_, keep, std::move(hash_), held_);
}

void local_backend::writer_gone(const std::string& id, hash_keep keep, std::unique_ptr<util::sha256_stream> hash,
                                uint64_t hashed) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = uploads_.find(id);
  if (it == uploads_.end()) return;
  it->second.writing = false;
  if (keep == hash_keep::leave) return;
  it->second.hash = keep == hash_keep::replace ? std::shared_ptr<util::sha256_stream>(std::move(hash)) : nullptr;
  it->second.hashed = hashed;
}

local_backend::upload_writer::status local_backend::upload_writer::write(const char* data, size_t n, std::string& why) {
  if (n == 0) return status::ok;
  if (held_ + n > size_) {
    why = "more bytes than the upload's size";
    return status::io_error;
  }
  if (auto short_of = owner_->space_.short_of_space()) {
    why = *short_of;
    return status::no_space;
  }
  if (!write_all(fd_, data, n, held_)) {
    const int err = errno;
    why = std::string("cannot write ") + owner_->incoming_path(id_) + ": " + std::strerror(err);
    if (::ftruncate(fd_, static_cast<off_t>(held_)) != 0) {  // (a part written stays unhashed: re-hashed on resume)
    }
    return err == ENOSPC || err == EDQUOT ? status::no_space : status::io_error;
  }
  hash_->update(data, n);
  start_writeback(fd_, held_, n);
  held_ += n;
  owner_->counters_.bytes_received += n;
  return status::ok;
}

finish_result local_backend::upload_writer::finish() { return owner_->store(*this); }

finish_result local_backend::store(upload_writer& w) {
  const std::string from = incoming_path(w.id_);
  if (w.held_ != w.size_)
    return {finish_status::incomplete, std::to_string(w.held_) + " of " + std::to_string(w.size_) + " bytes arrived"};
  w.finished_ = true;
  const std::string found = w.hash_->hex();
  if (found != w.sha256_) {
    ::close(w.fd_);
    w.fd_ = -1;
    ::unlink(from.c_str());
    fsync_dir(incoming_);
    w.held_ = 0;
    return {finish_status::digest_mismatch, "the bytes hash to " + found + ", not " + w.sha256_};
  }
  if (::fsync(w.fd_) != 0)  // (the file stays: a PUT of its last 0 bytes reads it again and retries)
    return {finish_status::unavailable, errno_text("cannot fsync", from)};
  ::close(w.fd_);
  w.fd_ = -1;
  const std::string dir = blobs_ + "/" + w.sha256_.substr(0, 2);
  const bool new_dir = ::mkdir(dir.c_str(), 0700) == 0;
  if (new_dir) fsync_dir(blobs_);
  const std::string to = blob_path(w.sha256_);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int err = errno;
    return {err == ENOSPC ? finish_status::no_space : finish_status::unavailable,
            "cannot rename " + from + " to " + to + ": " + std::strerror(err)};
  }
  if (!fsync_dir(dir) || !fsync_dir(incoming_)) return {finish_status::unavailable, errno_text("cannot fsync", dir)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = uploads_.find(w.id_); it != uploads_.end()) it->second.proven = true;
  }
  return {finish_status::stored, ""};
}

std::optional<local_backend::grant_info> local_backend::find_download(const std::string& grant, time_us now) {
  std::lock_guard<std::mutex> lock(mu_);
  return live_grant(downloads_, grant, now);
}

void local_backend::report_corrupt(const std::string& sha256, const std::string& found) {
  spdlog::warn("storage: blob {} is damaged on disk (found {}); it is not served", sha256, found);
  if (opts_.on_corrupt) {
    try {
      opts_.on_corrupt(sha256, found);
    } catch (const std::exception& e) {
      spdlog::error("storage: reporting damaged blob {}: {}", sha256, e.what());
    }
  }
}

local_backend::blob_open local_backend::open_blob(const std::string& sha256, uint64_t size, uint64_t first, uint64_t count) {
  blob_open r;
  if (!util::is_sha256_hex(sha256)) return r;
  const std::string path = blob_path(sha256);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return r;  // missing
  struct stat st {};
  ::fstat(fd, &st);
  if (static_cast<uint64_t>(st.st_size) != size) {
    ::close(fd);
    report_corrupt(sha256, "size " + std::to_string(st.st_size));
    r.status = blob_status::damaged;
    return r;
  }
  auto rd = std::unique_ptr<blob_reader>(new blob_reader());
  rd->owner_ = shared_from_this();
  rd->sha256_ = sha256;
  rd->size_ = size;
  rd->first_ = first;
  rd->count_ = count;
  rd->fd_ = fd;
  if (first == 0 && count == size) rd->hash_ = std::make_unique<util::sha256_stream>();
  ::posix_fadvise(fd, static_cast<off_t>(first), static_cast<off_t>(count), POSIX_FADV_SEQUENTIAL);
  ++counters_.downloads_in_flight;
  r.status = blob_status::ok;
  r.reader = std::move(rd);
  return r;
}

local_backend::blob_reader::~blob_reader() {
  if (fd_ >= 0) ::close(fd_);
  if (owner_) --owner_->counters_.downloads_in_flight;
}

int64_t local_backend::blob_reader::read(char* buf, size_t max) {
  if (failed_) return -1;
  if (done_ == count_) return 0;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(max, count_ - done_));
  int64_t n = read_full(fd_, buf, want, first_ + done_);
  if (n < 0) {
    failed_ = true;
    spdlog::warn("storage: reading blob {}: {}", sha256_, std::strerror(errno));
    return -1;
  }
  if (static_cast<size_t>(n) < want) {  // the file shrank since it was opened
    failed_ = true;
    owner_->report_corrupt(sha256_, "size " + std::to_string(first_ + done_ + static_cast<uint64_t>(n)));
    return -1;
  }
  done_ += static_cast<uint64_t>(n);
  if (hash_) {
    hash_->update(buf, static_cast<size_t>(n));
    if (done_ == count_) {  // the last chunk: it goes only if the whole blob hashes to its name
      const std::string found = hash_->hex();
      hash_.reset();
      if (found != sha256_) {
        failed_ = true;
        owner_->report_corrupt(sha256_, found);
        return -1;
      }
    }
  }
  owner_->counters_.bytes_served += static_cast<uint64_t>(n);
  return n;
}

}  // namespace baton::storage
