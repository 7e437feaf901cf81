#include "cli/event_follower.hpp"

#include <httplib.h>

namespace baton::cli {

event_follower::event_follower(const endpoint& e) : client_(connect(e)) {
  client_->set_connection_timeout(5, 0);
  client_->set_read_timeout(60, 0);  // batond writes a comment line every 15 s on a quiet stream
  httplib::Headers h = {{"X-API-Token", e.token}};
  thread_ = std::thread([this, h] {
    int status = 0;
    client_->Get(
        "/events/stream", h,
        [&](const httplib::Response& res) {
          status = res.status;
          return res.status == 200;
        },
        [&](const char* data, size_t n) {
          std::lock_guard<std::mutex> g(mu_);
          take(data, n);
          return true;
        });
    std::lock_guard<std::mutex> g(mu_);
    ended_ = true;
    changed_.notify_all();
  });
}

event_follower::~event_follower() {
  client_->stop();
  thread_.join();
}

// SSE lines: "event: hello" opens the stream; each "id: <seq>" is one event.
void event_follower::take(const char* data, size_t n) {
  partial_.append(data, n);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(partial_.data() + start, nl - start);
    if (line == "event: hello") live_ = true;
    if (line.rfind("id: ", 0) == 0) ++events_;
  }
  partial_.erase(0, start);
  changed_.notify_all();
}

bool event_follower::wait_live(std::chrono::milliseconds within) {
  std::unique_lock<std::mutex> g(mu_);
  changed_.wait_for(g, within, [&] { return live_ || ended_; });
  return live_ && !ended_;
}

uint64_t event_follower::wait_beyond(uint64_t seen, std::chrono::milliseconds within) {
  std::unique_lock<std::mutex> g(mu_);
  changed_.wait_for(g, within, [&] { return events_ > seen || ended_; });
  return events_;
}

uint64_t event_follower::events() const {
  std::lock_guard<std::mutex> g(mu_);
  return events_;
}

bool event_follower::ended() const {
  std::lock_guard<std::mutex> g(mu_);
  return ended_;
}

}  // namespace baton::cli
