#pragma once
// What the daemon's process holds, for GET /metrics: resident memory, open file descriptors,
// the heap as the allocator counts it (in use, and freed but not yet returned), and
// SQLite's own allocations (the SQL views' page caches). Read at each scrape.
#include <cstdint>

namespace baton::http {

struct process_figures {
  uint64_t resident_bytes = 0;
  uint64_t open_fds = 0;
  bool heap_counted = false;  // jemalloc and glibc count their heap; a sanitizer's allocator does not
  uint64_t heap_in_use_bytes = 0;
  uint64_t heap_free_bytes = 0;  // held by the allocator (util::release_free_memory hands it back)
  uint64_t sqlite_bytes = 0;
};

process_figures read_process_figures();

}  // namespace baton::http
