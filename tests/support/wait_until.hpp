#pragma once
// Waiting for a condition with a deadline (never a sleep that guesses how long something takes).
#include <chrono>
#include <functional>
#include <thread>

namespace baton::test {

// Whether pred became true before the timeout; it is asked every 50 ms and once at the end.
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

}  // namespace baton::test
