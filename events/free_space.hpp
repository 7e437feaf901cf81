#pragma once
// The rule for "is there room for more of the log": free space on the filesystem under the
// data directory against a reserve (event_log.min_free_mb). The store asks it before every
// write, so a filling disk refuses new events cleanly, with nothing half-written, instead
// of letting RocksDB run into ENOSPC: after a failed WAL write RocksDB keeps the write-ahead
// log in an error state (and Debian's build asserts on the next sync), so only a restart
// would bring the log back. The reserve also leaves room for RocksDB's own flushes and for
// the SQL view.
#include <cstdint>
#include <optional>
#include <string>

namespace baton::events {

class free_space_guard {
 public:
  // min_free_bytes 0: never short.
  free_space_guard(std::string dir, uint64_t min_free_bytes);

  // Empty while the filesystem has at least the reserve free; else why not, e.g. "3 MiB free
  // under /data, below the reserve of 128 MiB (event_log.min_free_mb)". One statvfs (about a
  // microsecond; the log writer asks once per group commit); safe from any thread.
  std::optional<std::string> short_of_space() const;

 private:
  const std::string dir_;
  const uint64_t min_free_;
};

}  // namespace baton::events
