#pragma once
// Bundles and outputs as blobs (docs/storage.md): a bundle directory packed into a .tar.gz,
// uploaded to batond's data plane and named by digest in POST /jobs; a job's outputs fetched
// back. The bytes go through the transfer library (worker/transfer.hpp).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "worker/transfer.hpp"

namespace baton::cli {

// Packs dir into a gzip-compressed tar at out: regular files and directories only, names
// relative to dir, in sorted order, without the top-level .baton-checkpoints and
// .baton-failures. Returns the paths left out because they are neither (symlinks, fifos...).
// Throws std::runtime_error naming the file that could not be read or written.
std::vector<std::string> pack_directory(const std::string& dir, const std::string& out);

struct stored_bundle {
  std::string sha256;
  uint64_t size = 0;
  bool already_stored = false;
  nlohmann::json as_json() const { return {{"sha256", sha256}, {"size", size}}; }
};

// A bundle directory (packed into a temp file first) or a .tar.gz/.tgz file, uploaded with a
// progress bar on a terminal. Returns false after printing why to c.err.
bool upload_bundle(context& c, const std::string& path, stored_bundle& out);

// True for a path ending in .tar.gz or .tgz.
bool is_targz(const std::string& path);

}  // namespace baton::cli
