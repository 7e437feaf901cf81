// Fuzz target: a job's archive bundle as baton-worker unpacks it. Whatever the
// bytes, the worker either unpacks (only regular files and directories) or
// refuses with invalid_bundle / std::runtime_error, and writes nothing outside
// the job's directory.
#include "worker/bundle_archive.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "worker/bundle.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path root = [] {
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("baton-bundle-fuzz-" + std::to_string(::getpid())), ec);
    });
    return fs::temp_directory_path() / ("baton-bundle-fuzz-" + std::to_string(::getpid()));
  }();
  static const fs::path archive = root / "bundle.tar";
  static const fs::path job = root / "work" / "job";
  fs::remove_all(root / "work");
  fs::create_directories(root / "work");
  {
    std::ofstream out(archive, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  baton::worker::bundle_limits limits;
  limits.max_bytes = 1 << 20;  // small caps: the fuzzer explores the checks, not the disk
  limits.max_members = 64;
  try {
    baton::worker::extract_bundle_archive(archive.string(), job.string(), limits);
  } catch (const std::runtime_error&) {  // invalid_bundle is one
  }
  // Only the archive beside the work dir, and only the job's dir inside it.
  for (auto& e : fs::directory_iterator(root))
    if (e.path() != archive && e.path() != root / "work") std::abort();
  for (auto& e : fs::directory_iterator(root / "work"))
    if (e.path() != job) std::abort();
  if (fs::exists(job))
    for (auto& e : fs::recursive_directory_iterator(job)) {
      auto st = e.symlink_status();
      if (!fs::is_regular_file(st) && !fs::is_directory(st)) std::abort();  // a link, fifo, device
    }
  return 0;
}
