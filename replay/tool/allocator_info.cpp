#include "replay/tool/allocator_info.hpp"

#include <dlfcn.h>

namespace baton::replay {

std::string allocator_in_use() {
  // The malloc that calls bind to (the first definition in the global scope), and the object
  // that defines it.
  void* in_use = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info where{};
  if (!in_use || dladdr(in_use, &where) == 0 || !where.dli_fname) return "unknown";
  std::string file = where.dli_fname;
  if (auto slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
  if (file.rfind("libjemalloc", 0) != 0) return file.empty() ? "the executable" : file;
  // jemalloc's own control interface, found the same way (no link-time tie to it).
  using mallctl_fn = int (*)(const char*, void*, size_t*, void*, size_t);
  auto mallctl = reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
  const char* version = nullptr;
  size_t size = sizeof version;
  if (!mallctl || mallctl("version", &version, &size, nullptr, 0) != 0 || !version) return "jemalloc";
  std::string out = std::string("jemalloc ") + version;
  const char* thp = nullptr;  // its transparent huge pages option (replay/tool/jemalloc_options.cpp)
  size = sizeof thp;
  if (mallctl("opt.thp", &thp, &size, nullptr, 0) == 0 && thp) out += std::string(", huge pages: ") + thp;
  return out;
}

}  // namespace baton::replay
