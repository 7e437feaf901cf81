#include "cli/bundles.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "cli/progress_bar.hpp"
#include "cli/request_helpers.hpp"
#include "worker/file_io.hpp"

namespace baton::cli {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_targz(const std::string& path) {
  auto ends = [&](const std::string& suffix) {
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".tar.gz") || ends(".tgz");
}

std::vector<std::string> pack_directory(const std::string& dir, const std::string& out) {
  struct entry {
    std::string rel;
    bool is_dir;
  };
  std::vector<entry> entries;
  std::vector<std::string> skipped;
  std::error_code ec;
  fs::path root(dir);
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    auto rel = it->path().lexically_relative(root).generic_string();                     // fs::relative would follow a symlink
    if (it.depth() == 0 && (rel == ".baton-checkpoints" || rel == ".baton-failures")) {  // the worker's, never the job's
      it.disable_recursion_pending();
      continue;
    }
    auto st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(st))
      entries.push_back({rel, true});
    else if (fs::is_regular_file(st))
      entries.push_back({rel, false});
    else {
      skipped.push_back(rel);
      if (fs::is_symlink(st)) it.disable_recursion_pending();
    }
  }
  if (ec) throw std::runtime_error("cannot read " + dir + ": " + ec.message());
  // Sorted: the same tree packs into the same order (and, unchanged, usually the same digest).
  std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) { return a.rel < b.rel; });

  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  // No time in the gzip header: the same tree packs to the same bytes (batond then already holds it).
  if (!a || archive_write_add_filter_gzip(a.get()) != ARCHIVE_OK ||
      archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_set_options(a.get(), "gzip:!timestamp") != ARCHIVE_OK ||
      archive_write_open_filename(a.get(), out.c_str()) != ARCHIVE_OK)
    throw std::runtime_error("cannot write " + out + ": " +
                             (a ? archive_error_string(a.get()) ? archive_error_string(a.get()) : "" : "libarchive"));
  std::vector<char> buf(1 << 20);
  for (const auto& e : entries) {
    auto full = (root / e.rel).string();
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0) throw std::runtime_error("cannot read " + full);
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> ae(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(ae.get(), e.rel.c_str());
    archive_entry_set_filetype(ae.get(), e.is_dir ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(ae.get(), (st.st_mode & 0777) | (e.is_dir ? 0700 : 0600));
    archive_entry_set_mtime(ae.get(), st.st_mtim.tv_sec, 0);
    archive_entry_set_size(ae.get(), e.is_dir ? 0 : st.st_size);
    if (archive_write_header(a.get(), ae.get()) != ARCHIVE_OK)
      throw std::runtime_error("cannot add " + full + " to " + out + ": " + archive_error_string(a.get()));
    if (e.is_dir) continue;
    worker::fd_guard fd{::open(full.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd.fd < 0) throw std::runtime_error("cannot read " + full);
    int64_t left = st.st_size;
    while (left > 0) {
      ssize_t n = ::read(fd.fd, buf.data(), static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buf.size()))));
      if (n <= 0) throw std::runtime_error("cannot read " + full + " (did it shrink while it was packed?)");
      if (archive_write_data(a.get(), buf.data(), static_cast<size_t>(n)) != n)
        throw std::runtime_error("cannot write " + out + ": " + archive_error_string(a.get()));
      left -= n;
    }
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    throw std::runtime_error("cannot write " + out + ": " + archive_error_string(a.get()));
  return skipped;
}

namespace {

// batond's data plane as this CLI's caller (its token and operator name).
xfer::link link_of(const endpoint& e) {
  xfer::link l;
  l.base_url = std::string(e.https ? "https://" : "http://") + e.host + ":" + std::to_string(e.port);
  l.ca_file = e.ca_file;
  l.store_ca_file = e.store_ca_file;
  l.credential = {{"X-API-Token", e.token}};
  if (!e.operator_name.empty()) l.credential.emplace("X-Baton-Operator", e.operator_name);
  l.attempts = 6;
  l.base_seconds = 0.5;
  l.max_seconds = 8;
  return l;
}

// A temp file removed when it goes out of scope.
struct temp_file {
  std::string path;
  temp_file() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/baton-bundle-XXXXXX.tar.gz";
    int fd = ::mkstemps(pattern.data(), 7);
    if (fd < 0) throw std::runtime_error("cannot create a temp file in " + std::string(base && *base ? base : "/tmp"));
    ::close(fd);
    path = pattern;
  }
  ~temp_file() { ::unlink(path.c_str()); }
};

// The files of the newest output set in a GET /jobs/{id}/files answer; null when there are none.
json latest_output_files(const json& listing) {
  json o = listing.contains("outputs") ? listing["outputs"] : json();
  if (o.is_array()) o = o.empty() ? json() : o.back();
  return o.is_object() && o.contains("files") && o["files"].is_array() ? o["files"] : json();
}

}  // namespace

bool upload_bundle(context& c, const std::string& path, stored_bundle& out) {
  std::error_code ec;
  std::unique_ptr<temp_file> packed;
  std::string file = path;
  try {
    if (fs::is_directory(path, ec)) {
      packed = std::make_unique<temp_file>();
      for (const auto& s : pack_directory(path, packed->path))
        c.err << "baton: " << path << ": left " << s << " out of the bundle (only regular files and directories are packed)\n";
      file = packed->path;
    } else if (!fs::is_regular_file(path, ec) || !is_targz(path)) {
      c.err << "baton: " << path << ": a bundle is a directory or a .tar.gz/.tgz file\n";
      return false;
    }
    auto [sha, size] = xfer::hash_file(file);
    out.sha256 = sha;
    out.size = size;
    progress_bar bar(c.err, "uploading " + fs::path(path).filename().string(), "bytes", isatty(2) && !c.json);
    out.already_stored =
        xfer::store_bundle(link_of(c.daemon), file, sha, size, [&](uint64_t done, uint64_t total) { bar.update(done, total); });
    bar.finish();
    return true;
  } catch (const xfer::transfer_error& e) {
    c.err << "baton: " << path << ": bundle not uploaded: " << e.what() << "\n";
    if (e.error_code() == "storage_unavailable")
      c.err << "baton: (--shared-path sends the bundle's path instead, for workers that all see it)\n";
  } catch (const std::exception& e) {
    c.err << "baton: " << path << ": " << e.what() << "\n";
  }
  return false;
}

int jobs_fetch(context& c, const std::string& id, const std::string& dir_arg) {
  auto l = link_of(c.daemon);
  json listing;
  try {
    listing = xfer::job_files(l, id);
  } catch (const xfer::transfer_error& e) {
    c.err << "baton: " << e.what() << "\n";
    return e.status == 0 ? unreachable : api_error;
  }
  const json files = latest_output_files(listing);
  if (!files.is_array()) {
    c.err << "baton: job " << id << " has no stored outputs\n";
    return api_error;
  }
  const std::string dir = dir_arg.empty() ? id + "-outputs" : dir_arg;
  // Every path is checked before anything is written: only relative paths inside DIR.
  for (const auto& f : files) {
    std::string p = f.is_object() && f.contains("path") && f["path"].is_string() ? f["path"].get<std::string>() : "";
    bool safe = !p.empty() && p[0] != '/';
    for (const auto& part : fs::path(p))
      if (part == "..") safe = false;
    if (!safe) {
      c.err << "baton: job " << id << ": refusing output path '" << p
            << "' (absolute, empty or with '..'); nothing was written\n";
      return api_error;
    }
  }
  json written = json::array();
  for (const auto& f : files) {
    const std::string rel = f["path"].get<std::string>();
    const auto target = fs::path(dir) / rel;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      c.err << "baton: cannot create " << target.parent_path().string() << ": " << ec.message() << "\n";
      return usage_error;
    }
    auto part = target.string() + ".part";
    auto pick = [&](const json& fresh) -> json {
      for (const auto& g : latest_output_files(fresh))  // (null: no element)
        if (g.is_object() && g.value("path", "") == rel) return g;
      return nullptr;
    };
    try {
      progress_bar bar(c.err, rel, "bytes", isatty(2) && !c.json);
      xfer::download_listed(l, id, f, pick, part, [&](uint64_t done, uint64_t total) { bar.update(done, total); });
      bar.finish();
      fs::rename(part, target);
    } catch (const xfer::transfer_error& e) {
      fs::remove(part, ec);
      c.err << "baton: " << target.string() << ": " << (e.kind == xfer::failure::mismatch ? "digest mismatch: " : "") << e.what()
            << "\n";
      return e.status == 0 && e.kind == xfer::failure::unavailable ? unreachable : api_error;
    } catch (const std::exception& e) {
      fs::remove(part, ec);
      c.err << "baton: " << target.string() << ": " << e.what() << "\n";
      return api_error;
    }
    written.push_back({{"path", target.string()}, {"sha256", f.value("sha256", "")}, {"size", f["size"]}});
    if (!c.json)
      c.out << "wrote " << target.string() << " (" << f["size"].dump() << " bytes, sha256 " << f.value("sha256", "") << ")\n";
  }
  if (c.json) c.out << json{{"job_id", id}, {"dir", dir}, {"files", written}}.dump(2) << "\n";
  return ok;
}

}  // namespace baton::cli
