#include "replay/allocator_info.hpp"

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
  if (file.rfind("libjemalloc", 0) == 0) {
    // jemalloc's own control interface, looked up where that malloc lives (no link-time tie).
    using mallctl_fn = int (*)(const char*, void*, size_t*, void*, size_t);
    if (void* self = dlopen(where.dli_fname, RTLD_NOW | RTLD_NOLOAD)) {
      auto mallctl = reinterpret_cast<mallctl_fn>(dlsym(self, "mallctl"));
      const char* version = nullptr;
      size_t size = sizeof version;
      std::string out = "jemalloc";
      if (mallctl && mallctl("version", &version, &size, nullptr, 0) == 0 && version) out += std::string(" ") + version;
      dlclose(self);
      return out;
    }
    return "jemalloc";
  }
  return file.empty() ? "the executable" : file;
}

}  // namespace baton::replay
