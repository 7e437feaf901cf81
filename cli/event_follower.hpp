#pragma once
// Follows batond's live stream (GET /events/stream, Server-Sent Events) on a thread of its
// own and counts the events that arrive, so `baton monitor` redraws when something happened
// instead of asking every few seconds.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cli/client.hpp"

namespace httplib {
class Client;
}

namespace baton::cli {

class event_follower {
 public:
  explicit event_follower(const endpoint& e);
  ~event_follower();
  event_follower(const event_follower&) = delete;
  event_follower& operator=(const event_follower&) = delete;

  // Waits until the stream is live (its hello came) or has ended; true when live.
  bool wait_live(std::chrono::milliseconds within);
  // Waits until more than `seen` events have arrived, the stream ended, or `within` passed;
  // returns the number of events so far.
  uint64_t wait_beyond(uint64_t seen, std::chrono::milliseconds within);
  bool ended() const;
  uint64_t events() const;  // arrived so far

 private:
  void take(const char* data, size_t n);  // under mu_

  std::unique_ptr<httplib::Client> client_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::string partial_;  // an unfinished line
  uint64_t events_ = 0;
  bool live_ = false, ended_ = false;
  std::thread thread_;
};

}  // namespace baton::cli
