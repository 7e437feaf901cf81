#include "worker/bundle_archive.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "worker/bundle.hpp"

namespace baton::worker {
namespace {

namespace fs = std::filesystem;

struct free_reader {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct free_writer {
  void operator()(archive* a) const { archive_write_free(a); }
};
using archive_ptr = std::unique_ptr<archive, free_reader>;
using disk_ptr = std::unique_ptr<archive, free_writer>;

std::string error_of(archive* a) {
  const char* text = archive_error_string(a);
  return text ? text : "unknown error";
}

// 10737418240 -> "10 GiB", 67108864 -> "64 MiB", 1536 -> "1.5 KiB".
std::string human(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, v == static_cast<double>(static_cast<uint64_t>(v)) ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

// Why a member may not be written, or "" when it may (a regular file or a directory).
std::string refusal(archive_entry* e, const std::string& name) {
  const std::string member = "archive member '" + name + "'";
  if (archive_entry_hardlink(e)) return member + " is a hardlink (to '" + archive_entry_hardlink(e) + "'); links are not allowed";
  switch (archive_entry_filetype(e)) {
    case AE_IFREG:
    case AE_IFDIR:
      break;
    case AE_IFLNK: {
      const char* target = archive_entry_symlink(e);
      return member + " is a symlink (-> " + (target ? target : "?") + "); links are not allowed";
    }
    case AE_IFCHR:
    case AE_IFBLK:
      return member + " is a device file";
    case AE_IFIFO:
      return member + " is a fifo";
    case AE_IFSOCK:
      return member + " is a socket";
    default:
      return member + " has an unsupported type";
  }
  if (name.empty() || name[0] == '/') return member + " has an absolute path";
  if (!is_safe_relative(name)) return member + " has a '..' component";
  return "";
}

bool is_top(const std::string& name) { return name == "." || name == "./"; }

}  // namespace

void extract_bundle_archive(const std::string& archive_path, const std::string& dst, const bundle_limits& limits) {
  archive_ptr in(archive_read_new());
  archive_read_support_format_tar(in.get());  // ustar, pax, GNU tar (with its sparse files)
  archive_read_support_filter_gzip(in.get());
  archive_read_support_filter_bzip2(in.get());
  archive_read_support_filter_xz(in.get());
  if (archive_read_open_filename(in.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK)
    throw invalid_bundle("cannot read archive " + archive_path + ": " + error_of(in.get()));

  if (fs::exists(dst)) throw std::runtime_error("cannot unpack into " + dst + ": it exists already");
  fs::create_directories(dst);
  // Members are written by absolute path under the real directory: libarchive's symlink check
  // walks the whole path, so a work dir reached through a symlink (/scratch -> /lustre/...)
  // must be resolved first.
  const fs::path root = fs::canonical(dst);

  disk_ptr out(archive_write_disk_new());
  // No owner, permission bits beyond the umask, ACLs, xattrs or file flags from the archive.
  archive_write_disk_set_options(out.get(),
                                 ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);

  uint64_t members = 0, total = 0;
  archive_entry* e = nullptr;
  for (;;) {
    int r = archive_read_next_header(in.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) throw invalid_bundle("cannot read archive " + archive_path + ": " + error_of(in.get()));
    const char* raw = archive_entry_pathname(e);
    const std::string name = raw ? raw : "";
    if (auto why = refusal(e, name); !why.empty()) throw invalid_bundle(why + " (in " + archive_path + ")");
    if (++members > limits.max_members)
      throw invalid_bundle("archive " + archive_path + " has more than " + std::to_string(limits.max_members) + " members");
    if (is_top(name)) continue;  // the bundle dir itself
    const bool is_dir = archive_entry_filetype(e) == AE_IFDIR;
    const uint64_t size = is_dir || !archive_entry_size_is_set(e) ? 0 : static_cast<uint64_t>(archive_entry_size(e));
    auto over_cap = [&](const std::string& member_is) {
      return invalid_bundle("archive " + archive_path + " unpacks to more than " + human(limits.max_bytes) + " (member '" + name +
                            "' is " + member_is + ")");
    };
    if (size > limits.max_bytes - total) throw over_cap(human(size));
    total += size;
    // Whoever runs the payload can read, write and remove everything it was given.
    archive_entry_set_perm(e, archive_entry_perm(e) | (is_dir ? 0700 : 0600));
    archive_entry_set_pathname(e, (root / name).c_str());
    if (archive_write_header(out.get(), e) != ARCHIVE_OK)
      throw std::runtime_error("cannot write " + (root / name).string() + ": " + error_of(out.get()));
    const void* block = nullptr;
    size_t length = 0;
    la_int64_t offset = 0;
    for (;;) {
      r = archive_read_data_block(in.get(), &block, &length, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN)
        throw invalid_bundle("cannot read member '" + name + "' of " + archive_path + ": " + error_of(in.get()));
      // A member without a size in its header is counted as it is read.
      if (offset < 0 || static_cast<uint64_t>(offset) + length > size + (limits.max_bytes - total))
        throw over_cap("larger than its header says");
      if (archive_write_data_block(out.get(), block, length, offset) < ARCHIVE_OK)
        throw std::runtime_error("cannot write " + (root / name).string() + ": " + error_of(out.get()));
    }
    if (archive_write_finish_entry(out.get()) < ARCHIVE_WARN)
      throw std::runtime_error("cannot finish " + (root / name).string() + ": " + error_of(out.get()));
  }
  if (members == 0) throw invalid_bundle("archive " + archive_path + " is empty");
  if (archive_write_close(out.get()) != ARCHIVE_OK)
    throw std::runtime_error("cannot finish unpacking into " + dst + ": " + error_of(out.get()));
}

}  // namespace baton::worker
