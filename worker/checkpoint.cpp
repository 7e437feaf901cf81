#include "worker/checkpoint.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "core/util/sha256.hpp"
#include "core/util/time.hpp"
#include "worker/bundle.hpp"
#include "worker/file_io.hpp"

namespace baton::worker {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string now_iso() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return util::format_time_us(std::chrono::duration_cast<std::chrono::microseconds>(now).count(), util::time_form::millis);
}

void fsync_dir(const std::string& dir) {
  fd_guard d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
}

std::string temp_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

// Copies src to dst (fsynced; no copy when dst is "") and returns the hex SHA-256 of the bytes read.
std::string copy_and_hash(const std::string& src, const std::string& dst) {
  fd_guard in{::open(src.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) throw std::runtime_error(errno_text("cannot open", src));
  fd_guard out;
  if (!dst.empty() && (out.fd = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
    throw std::runtime_error(errno_text("cannot create", dst));
  util::sha256_stream h;
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  while (true) {
    ssize_t n = ::read(in.fd, buf.get(), 1 << 20);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(errno_text("cannot read", src));
    if (n == 0) break;
    h.update(buf.get(), static_cast<size_t>(n));
    if (out.fd >= 0 && !write_all(out.fd, buf.get(), static_cast<size_t>(n)))
      throw std::runtime_error(errno_text("cannot write", dst));
  }
  if (out.fd >= 0 && ::fsync(out.fd) != 0) throw std::runtime_error(errno_text("cannot fsync", dst));
  return h.hex();
}

struct file_stamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const file_stamp& o) const { return size == o.size && mtime_ns == o.mtime_ns; }
};

std::optional<file_stamp> stamp_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return file_stamp{static_cast<uint64_t>(st.st_size),
                    static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// Stores src as <dir>/objects/<sha> unless it is already there; returns the sha of what was stored.
std::string store_object(const std::string& dir, const std::string& src, const std::string& expected_sha) {
  auto objects = fs::path(dir) / "objects";
  fs::create_directories(objects);
  auto final_path = (objects / expected_sha).string();
  if (fs::exists(final_path) && fs::file_size(final_path) == fs::file_size(src)) return expected_sha;
  auto tmp = temp_name(final_path);
  std::string got;
  try {
    got = copy_and_hash(src, tmp);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (got != expected_sha) {
    ::unlink(tmp.c_str());
    return got;
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) throw std::runtime_error(errno_text("cannot rename", tmp));
  fsync_dir(objects.string());
  return got;
}

// An integer field within [0, hi]: another type or a value out of range is refused (a float
// of 1e107 read as int would be undefined behaviour, not an error).
int64_t count_field(const json& o, const char* key, int64_t hi, std::optional<int64_t> fallback) {
  auto it = o.find(key);
  if (it == o.end()) {
    if (fallback) return *fallback;
    throw std::runtime_error(std::string("'") + key + "' is missing");
  }
  bool in_range = it->is_number_unsigned() ? it->get<uint64_t>() <= static_cast<uint64_t>(hi)
                                           : it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= hi;
  if (!in_range) throw std::runtime_error(std::string("'") + key + "' must be an integer from 0 to " + std::to_string(hi));
  return it->is_number_unsigned() ? static_cast<int64_t>(it->get<uint64_t>()) : it->get<int64_t>();
}

// Removes the objects under dir/objects that no manifest-attempt-*.json in dir names. Leaves
// everything if a manifest cannot be read (it might name any of them), and temp files alone.
// Returns how many were removed.
uint64_t remove_unreferenced_objects(const std::string& dir) {
  std::set<std::string> named;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("manifest-attempt-", 0) != 0 || entry.path().extension() != ".json") continue;
    try {
      std::ifstream in(entry.path());
      for (const auto& [file, e] : manifest_from_json(json::parse(in)).files) named.insert(e.object);
    } catch (const std::exception&) {
      return 0;  // an unreadable manifest might name any object: keep them all
    }
  }
  if (ec) return 0;
  uint64_t removed = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(dir) / "objects", ec)) {
    const auto name = entry.path().filename().string();
    const bool object = util::is_sha256_hex(name);
    if (!object || named.count("objects/" + name)) continue;  // temp files (".tmp-") belong to a copy in progress
    std::error_code rm;
    if (fs::remove(entry.path(), rm)) ++removed;
  }
  return removed;
}

}  // namespace

json to_json(const manifest& m) {
  json files = json::object();
  for (const auto& [name, e] : m.files)
    files[name] = {{"sha256", e.sha256}, {"size", e.size}, {"attempt", e.attempt}, {"object", e.object}};
  return {{"schema_version", 1},      {"job_id", m.job_id},         {"attempt", m.attempt},
          {"worker_id", m.worker_id}, {"updated_at", m.updated_at}, {"files", files}};
}

manifest manifest_from_json(const json& j) {
  try {
    if (!j.is_object() || !j.contains("schema_version") || !j["schema_version"].is_number_integer() ||
        j["schema_version"].get<int64_t>() != 1)
      throw std::runtime_error("not a schema_version 1 manifest");
    manifest m;
    m.job_id = j.value("job_id", "");
    m.worker_id = j.value("worker_id", "");
    m.updated_at = j.value("updated_at", "");
    m.attempt = static_cast<int>(count_field(j, "attempt", 1 << 30, 0));
    for (const auto& [name, e] : j.at("files").items()) {
      if (!is_safe_relative(name)) throw std::runtime_error("unsafe file name '" + name + "'");
      if (!e.is_object()) throw std::runtime_error("the entry of '" + name + "' is not an object");
      manifest_entry me{e.at("sha256").get<std::string>(),
                        static_cast<uint64_t>(count_field(e, "size", std::numeric_limits<int64_t>::max(), std::nullopt)),
                        static_cast<int>(count_field(e, "attempt", 1 << 30, 0)), e.at("object").get<std::string>()};
      if (!is_safe_relative(me.object)) throw std::runtime_error("unsafe object path '" + me.object + "'");
      m.files[name] = me;
    }
    return m;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed manifest: ") + e.what());
  }
}

bool glob_matches(const std::string& pattern, const std::string& rel) {
  return ::fnmatch(pattern.c_str(), rel.c_str(), FNM_PATHNAME) == 0;
}

std::vector<std::string> matching_files(const std::string& root, const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  if (patterns.empty()) return out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    auto st = it->symlink_status(ec);
    if (ec || !fs::is_regular_file(st)) continue;  // symlinks and special files are never checkpointed
    auto rel = fs::relative(it->path(), root, ec).string();
    if (ec) continue;
    for (const auto& p : patterns)
      if (glob_matches(p, rel)) {
        out.push_back(rel);
        break;
      }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string sha256_file(const std::string& path) { return copy_and_hash(path, ""); }

void write_atomically(const std::string& path, const std::string& text) {
  auto tmp = temp_name(path);
  {
    fd_guard out{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (out.fd < 0) throw std::runtime_error(errno_text("cannot create", tmp));
    if (!write_all(out.fd, text.data(), text.size())) throw std::runtime_error(errno_text("cannot write", tmp));
    if (::fsync(out.fd) != 0) throw std::runtime_error(errno_text("cannot fsync", tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(errno_text("cannot rename", tmp));
  }
  fsync_dir(fs::path(path).parent_path().string());
}

checkpoint_store::checkpoint_store(std::string dir, std::string job_id, int attempt, std::string worker_id)
    : dir_(std::move(dir)) {
  m_.job_id = std::move(job_id);
  m_.attempt = attempt;
  m_.worker_id = std::move(worker_id);
}

void checkpoint_store::restore(const std::string& manifest_path, const std::string& workdir) {
  std::ifstream in(manifest_path);
  if (!in) throw std::runtime_error("cannot read checkpoint manifest " + manifest_path);
  auto j = json::parse(in, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error("checkpoint manifest " + manifest_path + " is not JSON");
  manifest old = manifest_from_json(j);
  auto base = fs::path(manifest_path).parent_path();
  bool foreign = fs::weakly_canonical(base) != fs::weakly_canonical(dir_);
  for (auto& [name, e] : old.files) {
    auto src = (base / e.object).string();
    auto got = sha256_file(src);
    if (got != e.sha256)
      throw std::runtime_error("checkpoint object " + src + " has sha256 " + got + ", manifest says " + e.sha256);
    auto dst = fs::path(workdir) / name;
    fs::create_directories(dst.parent_path());
    auto tmp = temp_name(dst.string());
    if (copy_and_hash(src, tmp) != e.sha256) throw std::runtime_error("checkpoint object " + src + " changed while restoring");
    fs::rename(tmp, dst);
    if (foreign) {  // e.g. a requeued clone resuming from its parent's checkpoint: keep objects next to our manifest
      store_object(dir_, src, e.sha256);
      e.object = "objects/" + e.sha256;
    }
  }
  for (auto& [name, e] : old.files) m_.files[name] = e;
}

sync_result checkpoint_store::sync(const std::string& workdir, const std::vector<std::string>& patterns,
                                   const std::function<bool()>& may_commit) {
  manifest before_cycle = m_;
  sync_result r;
  for (const auto& name : matching_files(workdir, patterns)) {
    auto path = (fs::path(workdir) / name).string();
    try {
      auto before = stamp_of(path);
      if (!before) continue;  // vanished since the listing: the entry (if any) stays
      std::string sha;
      if (auto s = seen_.find(name); s != seen_.end() && s->second.size == before->size && s->second.mtime_ns == before->mtime_ns)
        sha = s->second.sha256;
      else
        sha = sha256_file(path);
      if (auto cur = m_.files.find(name); cur != m_.files.end() && cur->second.sha256 == sha) {
        seen_[name] = {before->size, before->mtime_ns, sha};
        continue;
      }
      auto stored = store_object(dir_, path, sha);
      auto after = stamp_of(path);
      if (stored != sha || !after || !(*after == *before)) {
        r.failures.push_back(name + ": write_in_progress");  // picked up by the next cycle
        seen_.erase(name);
        continue;
      }
      seen_[name] = {before->size, before->mtime_ns, sha};
      m_.files[name] = {sha, before->size, m_.attempt, "objects/" + sha};
      r.copied.push_back(name);
    } catch (const std::exception& e) {
      r.failures.push_back(name + ": " + e.what());
    }
  }
  if (!r.copied.empty() && may_commit && !may_commit()) {
    m_ = before_cycle;  // not ours any more: the next owner's checkpoint must not move
    seen_.clear();
    r.vetoed = true;
    r.copied.clear();
    return r;
  }
  if (!r.copied.empty()) {
    m_.updated_at = now_iso();
    auto path = (fs::path(dir_) / ("manifest-attempt-" + std::to_string(m_.attempt) + ".json")).string();
    write_atomically(path, to_json(m_).dump(2) + "\n");
    written_path_ = path;
    r.changed = true;
    r.objects_removed = remove_unreferenced_objects(dir_);
  }
  return r;
}

}  // namespace baton::worker
