#pragma once
// Unpacks a bundle archive (tar, pax or GNU tar; plain, gzip, bzip2 or xz) with libarchive,
// member by member, into a fresh directory. Only regular files and directories with relative
// names and no ".." component are written; links of any kind, devices, fifos and sockets are
// refused, and so is an archive whose members would exceed the caps (a sparse file counts at
// its full size, so a 10 GB hole is refused like 10 GB of data).
#include <cstdint>
#include <string>

namespace baton::worker {

struct bundle_limits {
  uint64_t max_bytes = uint64_t{8} << 30;  // sum of the members' sizes once unpacked
  uint64_t max_members = 100000;           // files and directories
};

// Extracts archive_path into dst (created; must not exist yet). Throws invalid_bundle naming
// the first bad member or the cap it would pass, std::runtime_error when dst cannot be
// written. On a throw, whatever was written stays inside dst for the caller to remove.
void extract_bundle_archive(const std::string& archive_path, const std::string& dst, const bundle_limits& limits);

}  // namespace baton::worker
