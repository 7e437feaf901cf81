#pragma once
// A progress bar on standard error, for CLI work that takes a while (an export, waiting for a
// campaign). Drawn only when stderr is a terminal, at most ten times a second, on one line
// that it redraws; nothing at all otherwise, so scripts and logs see only the results.
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace baton::cli {

class progress_bar {
 public:
  // `unit`: what is counted ("bytes" is shown as MB); `err` must be stderr's stream.
  progress_bar(std::ostream& err, std::string label, std::string unit, bool on_terminal);
  ~progress_bar() { finish(); }
  // done of total (total 0: unknown, a count is shown instead of a bar).
  void update(uint64_t done, uint64_t total);
  // The last state, drawn once more, then a new line.
  void finish();

  // The line as it is drawn (for tests): "label [#####-----] 50 of 100 unit (50 %)".
  static std::string render(const std::string& label, const std::string& unit, uint64_t done, uint64_t total);

 private:
  std::ostream& err_;
  std::string label_, unit_;
  bool on_;
  bool drawn_ = false;
  uint64_t done_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace baton::cli
