#include "worker/credential_guard.hpp"

#include <sys/prctl.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/util/process.hpp"

extern char** environ;

namespace baton::worker {

bool make_undumpable() { return ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0; }

namespace {

// Overwrites a C string's bytes in place ('x' keeps /proc/<pid>/cmdline's word boundaries).
void overwrite(char* s) {
  for (; *s; ++s) *s = 'x';
}

}  // namespace

void wipe_credentials(int argc, char** argv) {
  for (const auto& name : util::secret_env_names()) {
    const std::string prefix = name + "=";
    for (char** e = environ; e && *e; ++e)
      if (std::strncmp(*e, prefix.c_str(), prefix.size()) == 0) overwrite(*e + prefix.size());
    ::unsetenv(name.c_str());
  }
  for (int i = 1; i < argc; ++i) {
    for (const char* flag : {"--api-token", "--api-token-file"}) {
      const size_t n = std::strlen(flag);
      if (std::strcmp(argv[i], flag) == 0 && i + 1 < argc) {
        overwrite(argv[i + 1]);
      } else if (std::strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=') {
        overwrite(argv[i] + n + 1);
      }
    }
  }
}

}  // namespace baton::worker
