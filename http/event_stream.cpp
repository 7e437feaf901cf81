#include "http/event_stream.hpp"

namespace baton::http {

bool event_stream::push(const std::string& text) {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (closed_) return false;
    if (queued_.size() + text.size() > max_queued_) {  // the client is not reading: let it reconnect
      closed_ = true;
      queued_.clear();
      wake = wake_;  // the connection closes once it looks
    } else {
      queued_ += text;
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

std::string event_stream::take() {
  std::lock_guard<std::mutex> g(mu_);
  wake_pending_ = false;
  std::string out;
  out.swap(queued_);
  return out;
}

void event_stream::close() {
  std::lock_guard<std::mutex> g(mu_);
  closed_ = true;
  queued_.clear();
  wake_ = nullptr;  // it holds the connection's handles; the connection is going
}

}  // namespace baton::http
