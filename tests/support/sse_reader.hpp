#pragma once
// Follows a Server-Sent Events stream (GET /events/stream) on its own thread and keeps what
// arrives, so a test can wait, with a deadline, until some text has come.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace baton::test {

class sse_reader {
 public:
  sse_reader(int port, httplib::Headers headers, std::string path = "/events/stream") : client_("127.0.0.1", port) {
    client_.set_read_timeout(60, 0);
    thread_ = std::thread([this, headers = std::move(headers), path = std::move(path)] {
      auto r = client_.Get(
          path.c_str(), headers,
          [this](const httplib::Response& res) {
            std::lock_guard<std::mutex> g(mu_);
            status_ = res.status;
            content_type_ = res.get_header_value("Content-Type");
            changed_.notify_all();
            return true;
          },
          [this](const char* data, size_t n) {
            std::lock_guard<std::mutex> g(mu_);
            text_.append(data, n);
            changed_.notify_all();
            return true;
          });
      std::lock_guard<std::mutex> g(mu_);
      if (r && status_ == 0) status_ = r->status;
      if (r && !r->body.empty()) text_ += r->body;  // an error answer's body
      ended_ = true;
      changed_.notify_all();
    });
  }
  ~sse_reader() {
    client_.stop();
    thread_.join();
  }

  // Waits until the text received contains `needle`; false at the deadline or once the stream ended without it.
  bool wait_for(const std::string& needle, std::chrono::milliseconds within = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> g(mu_);
    return changed_.wait_for(g, within, [&] { return text_.find(needle) != std::string::npos || ended_; }) &&
           text_.find(needle) != std::string::npos;
  }
  // Waits until the stream has ended (the server closed it); false at the deadline.
  bool wait_ended(std::chrono::milliseconds within = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> g(mu_);
    return changed_.wait_for(g, within, [&] { return ended_; });
  }
  std::string text() const {
    std::lock_guard<std::mutex> g(mu_);
    return text_;
  }
  int status() const {
    std::lock_guard<std::mutex> g(mu_);
    return status_;
  }
  std::string content_type() const {
    std::lock_guard<std::mutex> g(mu_);
    return content_type_;
  }

 private:
  httplib::Client client_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::string text_, content_type_;
  int status_ = 0;
  bool ended_ = false;
  std::thread thread_;
};

}  // namespace baton::test
