#pragma once
// Names the calling thread, as `top -H`, `perf` and /proc/<pid>/task/*/comm show it. batond's
// own threads (the log writer, its syncer, each projection on a thread of its own, the HTTP
// I/O thread) carry their role, so an operator sees which one is busy, and the API bench splits
// batond's CPU by it. Linux keeps 15 bytes; a longer name is cut (the call fails past 15).
// Header-only: the projections, below the actors, use it too.
#include <pthread.h>

#include <string>

namespace baton::actors {

inline void name_this_thread(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

}  // namespace baton::actors
