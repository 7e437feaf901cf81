// jemalloc's options for baton-replay and the benches that time its code (cmake/Dependencies.cmake's
// baton_link_jemalloc; not batond, whose resident memory they grew by half): jemalloc reads this
// variable once, when it starts. Compiled into each of those programs, not into baton_util.
//
// Transparent huge pages for its memory. A replay's world is hundreds of megabytes of job
// records reached in hash order (250,000 jobs at 1,000,000 events): with 4 KiB pages nearly
// every such reach missed the TLB and every fresh page faulted in, and re-derivation ran
// about a fifth slower (docs/benchmarks.md). This kernel's THP mode is "madvise", so memory
// gets huge pages only where a program asks, as this asks jemalloc to.
// MALLOC_CONF in the environment still overrides it.
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:always";
}
