#pragma once
// Which malloc this process runs on. baton-replay is linked against jemalloc (release builds):
// a replay builds and frees millions of small JSON nodes, and glibc's malloc made re-derivation
// about a third slower (docs/benchmarks.md). A sanitizer build runs on the sanitizer's
// allocator instead. `baton-replay --version` prints this, and a test checks it, so a link
// order that let libc's malloc win again would not pass unnoticed.
#include <string>

namespace baton::replay {

// "jemalloc <version>, huge pages: <its thp option>" when jemalloc serves this process's
// malloc; otherwise the file the malloc in use comes from (e.g. "libc.so.6"), or "the
// executable" when it is linked in.
std::string allocator_in_use();

}  // namespace baton::replay
