#pragma once
// POSIX file handling shared by the worker's transfers (worker/transfer.cpp, linked by the CLI
// too) and its checkpoints: a descriptor closed on every path, an error naming the file and the
// system's reason, and a write that finishes what a short or interrupted write() left.
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

namespace baton::worker {

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

// "<what> <path>: <strerror(errno)>", for the error just seen.
inline std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Writes all n bytes; false on an error, with errno as write() left it.
inline bool write_all(int fd, const char* p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = ::write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace baton::worker
