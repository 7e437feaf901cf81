#include "http/process_figures.hpp"

#include <dirent.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>

#include "core/util/allocator.hpp"

namespace baton::http {

process_figures read_process_figures() {
  process_figures f;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    unsigned long long size = 0, resident = 0;
    if (std::fscanf(statm, "%llu %llu", &size, &resident) == 2)
      f.resident_bytes = resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    std::fclose(statm);
  }
  if (DIR* fds = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(fds))
      if (e->d_name[0] != '.') ++f.open_fds;
    closedir(fds);
    if (f.open_fds > 0) --f.open_fds;  // the directory's own descriptor
  }
  if (const auto heap = util::heap_in_use()) {
    f.heap_counted = true;
    f.heap_in_use_bytes = heap->in_use_bytes;
    f.heap_free_bytes = heap->free_bytes;
  }
  f.sqlite_bytes = static_cast<uint64_t>(sqlite3_memory_used());
  return f;
}

}  // namespace baton::http
