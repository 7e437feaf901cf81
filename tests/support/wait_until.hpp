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

// Whether a loop that runs its cycles one after another ran `cycles` more whole cycles before
// the timeout. count() counts something each cycle does once (a call it makes; -1 when it
// cannot be read): once cycles + 1 more are counted, the cycles of the first `cycles` of
// them have ended, with whatever they did after it.
inline bool wait_for_cycles(const std::function<long long()>& count, int cycles, std::chrono::milliseconds timeout) {
  const long long seen = count();
  return seen >= 0 && wait_until([&] { return count() >= seen + cycles + 1; }, timeout);
}

}  // namespace baton::test
