#pragma once
// Progress of a pass over the log, for people: a line on stderr ("rederive  41% 4,100,000 of
// 10,000,000 events, 12 s"), redrawn at most ten times a second, shown only when stderr is a
// terminal and only once the pass has taken a second. The passes report the sequence they
// reached through a progress_fn; the bar is never part of their result.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace baton::replay {

using progress_fn = std::function<void(uint64_t done)>;

class progress_bar {
 public:
  // total 0: unknown (counts only).
  progress_bar(std::string what, uint64_t total);
  ~progress_bar();  // clears the line
  progress_bar(const progress_bar&) = delete;
  progress_bar& operator=(const progress_bar&) = delete;

  void update(uint64_t done);
  progress_fn fn() {
    return [this](uint64_t done) { update(done); };
  }

 private:
  std::string what_;
  uint64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  uint32_t calls_ = 0;
};

}  // namespace baton::replay
