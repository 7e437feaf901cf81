#include "http/event_stream.hpp"

#include <utility>

namespace baton::http {

bool event_stream::push(shared_text text) {
  if (!text) return !closed();
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (closed_) return false;
    if (queued_bytes_ + text->size() > max_queued_) {  // the client is not reading: let it reconnect
      closed_ = true;
      queued_.clear();
      queued_bytes_ = 0;
      wake = wake_;  // the connection closes once it looks
    } else {
      if (text->empty()) return true;
      queued_bytes_ += text->size();
      queued_.push_back(std::move(text));
      if (!wake_ || wake_pending_) return true;
      wake_pending_ = true;
      wake = wake_;
    }
  }
  if (wake) wake();
  return !closed();
}

bool event_stream::closed() const {
  std::lock_guard<std::mutex> g(mu_);
  return closed_;
}

void event_stream::attach(std::function<void()> wake) {
  std::function<void()> now;
  {
    std::lock_guard<std::mutex> g(mu_);
    wake_ = std::move(wake);
    if (!queued_.empty() || closed_) now = wake_;
    wake_pending_ = static_cast<bool>(now);
  }
  if (now) now();
}

std::vector<event_stream::shared_text> event_stream::take() {
  std::lock_guard<std::mutex> g(mu_);
  wake_pending_ = false;
  queued_bytes_ = 0;
  return std::exchange(queued_, {});
}

void event_stream::hold(std::shared_ptr<void> held) {
  std::lock_guard<std::mutex> g(mu_);
  held_ = std::move(held);
}

void event_stream::close() {
  std::shared_ptr<void> held;  // given back once the lock is released
  std::lock_guard<std::mutex> g(mu_);
  closed_ = true;
  queued_.clear();
  queued_bytes_ = 0;
  wake_ = nullptr;          // it holds the connection's handles; the connection is going
  held = std::move(held_);  // the live feed may keep this object a while: the slot goes now
}

}  // namespace baton::http
