#include "cli/progress_bar.hpp"

#include <cstdio>

namespace baton::cli {

progress_bar::progress_bar(std::ostream& err, std::string label, std::string unit, bool on_terminal)
    : err_(err), label_(std::move(label)), unit_(std::move(unit)), on_(on_terminal) {}

std::string progress_bar::render(const std::string& label, const std::string& unit, uint64_t done, uint64_t total) {
  auto amount = [&](uint64_t n) {
    if (unit != "bytes") return std::to_string(n);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(n) / 1e6);
    return std::string(buf);
  };
  const std::string shown_unit = unit == "bytes" ? "MB" : unit;
  if (total == 0) return label + " " + amount(done) + " " + shown_unit;
  if (done > total) done = total;
  constexpr int width = 30;
  const int filled = static_cast<int>(width * done / total);
  return label + " [" + std::string(filled, '#') + std::string(width - filled, '-') + "] " + amount(done) + " of " +
         amount(total) + " " + shown_unit + " (" + std::to_string(100 * done / total) + " %)";
}

void progress_bar::update(uint64_t done, uint64_t total) {
  done_ = done;
  total_ = total;
  if (!on_) return;
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  err_ << "\r\x1b[2K" << render(label_, unit_, done_, total_) << std::flush;
}

void progress_bar::finish() {
  if (!on_ || !drawn_) return;
  err_ << "\r\x1b[2K" << render(label_, unit_, done_, total_) << "\n" << std::flush;
  drawn_ = false;
  on_ = false;
}

}  // namespace baton::cli
