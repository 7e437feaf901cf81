#pragma once
// Waiting for a condition with a deadline (never a sleep that guesses how long something takes).
#include <chrono>
#include <functional>
#include <thread>

namespace baton::test {

// Whether pred became true before the timeout; it is asked every `every` (50 ms unless a
// test times something finer) and once at the end.
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                       std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(every);
  }
  return pred();
}

}  // namespace baton::test
