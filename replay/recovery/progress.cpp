#include "replay/recovery/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace baton::replay {

namespace {

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

progress_bar::progress_bar(std::string what, uint64_t total)
    : what_(std::move(what)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

progress_bar::~progress_bar() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void progress_bar::update(uint64_t done) {
  if (!enabled_ || (++calls_ & 1023) != 0) return;  // look at the clock every 1,024 events only
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1) || now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(now - start_).count();
  if (total_)
    std::fprintf(stderr, "\r\033[K%s %3d%% %s of %s events, %llds", what_.c_str(), static_cast<int>(100.0 * done / total_),
                 grouped(done).c_str(), grouped(total_).c_str(), static_cast<long long>(secs));
  else
    std::fprintf(stderr, "\r\033[K%s %s, %llds", what_.c_str(), grouped(done).c_str(), static_cast<long long>(secs));
  std::fflush(stderr);
}

}  // namespace baton::replay
