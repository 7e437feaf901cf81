#include "events/free_space.hpp"

#include <sys/statvfs.h>

namespace baton::events {

namespace {
std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
}  // namespace

free_space_guard::free_space_guard(std::string dir, uint64_t min_free_bytes) : dir_(std::move(dir)), min_free_(min_free_bytes) {}

std::optional<std::string> free_space_guard::short_of_space() const {
  if (min_free_ == 0) return std::nullopt;
  struct statvfs fs {};
  // A filesystem that cannot be asked is not judged full: the write itself will tell.
  if (::statvfs(dir_.c_str(), &fs) != 0) return std::nullopt;
  const uint64_t free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free >= min_free_) return std::nullopt;
  return mib(free) + " free under " + dir_ + ", below the reserve of " + mib(min_free_) + " (event_log.min_free_mb)";
}

}  // namespace baton::events
