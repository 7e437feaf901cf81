#pragma once
// What the daemon's process holds, for GET /metrics: resident memory, open file descriptors,
// the heap as glibc's allocator counts it (in use, and freed but not yet returned), and
// SQLite's own allocations (the SQL views' page caches). Read at each scrape.
#include <cstdint>

namespace baton::http {

struct process_figures {
  uint64_t resident_bytes = 0;
  uint64_t open_fds = 0;
  bool heap_counted = false;  // glibc's allocator counts its heap; another (a sanitizer's) does not
  uint64_t heap_in_use_bytes = 0;
  uint64_t heap_free_bytes = 0;  // held by the allocator's arenas (malloc_trim hands it back)
  uint64_t sqlite_bytes = 0;
};

process_figures read_process_figures();

}  // namespace baton::http
