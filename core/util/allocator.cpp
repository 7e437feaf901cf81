#include "core/util/allocator.hpp"

#include <dlfcn.h>
#include <malloc.h>

namespace baton::util {

namespace {

// The file of the object that defines the malloc calls bind to (the first definition in the
// global scope): "" for the executable itself, nullopt when it cannot be told.
std::optional<std::string> malloc_file() {
  void* in_use = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info where{};
  if (!in_use || dladdr(in_use, &where) == 0 || !where.dli_fname) return std::nullopt;
  std::string file = where.dli_fname;
  if (auto slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
  return file;
}

// jemalloc's control interface when it serves malloc, found by name (no link-time tie).
using mallctl_fn = int (*)(const char*, void*, size_t*, void*, size_t);
mallctl_fn jemalloc_ctl() {
  static const mallctl_fn found = [] {
    const auto file = malloc_file();
    if (!file || file->rfind("libjemalloc", 0) != 0) return mallctl_fn{};
    return reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
  }();
  return found;
}

template <typename T>
bool read_ctl(mallctl_fn ctl, const char* name, T& out) {
  size_t size = sizeof out;
  return ctl(name, &out, &size, nullptr, 0) == 0;
}

}  // namespace

std::string allocator_in_use() {
  const auto file = malloc_file();
  if (!file) return "unknown";
  const mallctl_fn ctl = jemalloc_ctl();
  if (!ctl) return file->empty() ? "the executable" : *file;
  const char* version = nullptr;
  if (!read_ctl(ctl, "version", version) || !version) return "jemalloc";
  std::string out = std::string("jemalloc ") + version;
  const char* thp = nullptr;  // its transparent huge pages option (core/util/jemalloc_options.cpp)
  if (read_ctl(ctl, "opt.thp", thp) && thp) out += std::string(", huge pages: ") + thp;
  return out;
}

std::optional<heap_figures> heap_in_use() {
  if (const mallctl_fn ctl = jemalloc_ctl()) {
    // Its statistics are a snapshot taken when the epoch advances.
    uint64_t epoch = 1;
    size_t size = sizeof epoch;
    ctl("epoch", &epoch, &size, &epoch, sizeof epoch);
    size_t allocated = 0, resident = 0;
    if (!read_ctl(ctl, "stats.allocated", allocated) || !read_ctl(ctl, "stats.resident", resident) || allocated == 0)
      return std::nullopt;
    // Resident pages not holding allocations: freed memory not yet purged, and its metadata.
    return heap_figures{allocated, resident > allocated ? resident - allocated : 0};
  }
  const struct mallinfo2 m = mallinfo2();
  const uint64_t in_use = m.uordblks + m.hblkhd;  // small blocks in use, plus those mmapped whole
  if (in_use == 0) return std::nullopt;           // a sanitizer's allocator answers zeros
  return heap_figures{in_use, m.fordblks};
}

void release_free_memory() {
  if (const mallctl_fn ctl = jemalloc_ctl()) {
    ctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);  // 4096: MALLCTL_ARENAS_ALL
    return;
  }
  malloc_trim(0);
}

}  // namespace baton::util
