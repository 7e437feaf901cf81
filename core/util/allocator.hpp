#pragma once
// Which malloc this process runs on, what its heap holds, and handing freed memory back.
// batond, baton-replay and the benches that time their code are linked against jemalloc in
// release builds (cmake/Dependencies.cmake: a replay builds and frees millions of small
// nodes, and a poll's reply is made on one thread and freed on another, both faster there;
// docs/benchmarks.md). A sanitizer build runs on the sanitizer's allocator instead. jemalloc
// is found at run time (dlsym), so nothing here ties a program to it at link time.
#include <cstdint>
#include <optional>
#include <string>

namespace baton::util {

// "jemalloc <version>, huge pages: <its thp option>" when jemalloc serves this process's
// malloc; otherwise the file the malloc in use comes from (e.g. "libc.so.6"), or "the
// executable" when it is linked in. `--version` prints it, and tests check it, so a link
// order that let libc's malloc win again would not pass unnoticed.
std::string allocator_in_use();

struct heap_figures {
  uint64_t in_use_bytes = 0;  // what the program has allocated and not freed
  uint64_t free_bytes = 0;    // freed, and still held by the allocator
};
// jemalloc's or glibc's own count; nullopt under an allocator that counts nothing (a sanitizer's).
std::optional<heap_figures> heap_in_use();

// Hands memory freed since back to the OS (jemalloc: purges every arena; glibc: malloc_trim).
void release_free_memory();

}  // namespace baton::util
