#pragma once
// A raw HTTP/1.1 client over one loopback connection (support/loopback_socket.hpp): sends
// bytes as given, reads responses by Content-Length. For tests that must control what goes on
// the wire (split, pipelined or malformed requests, heads whose bodies never come).
#include <gtest/gtest.h>

#include <string>

#include "support/loopback_socket.hpp"

namespace baton::test {

class raw_client {
 public:
  explicit raw_client(int port, int receive_timeout_seconds = 5, const char* from = nullptr)
      : fd_(connect_loopback(port, receive_timeout_seconds, from)), connected_(fd_ >= 0) {}
  ~raw_client() {
    if (fd_ >= 0) ::close(fd_);
  }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;
  bool connected() const { return connected_; }
  void send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }

  struct response {
    int status = 0;
    std::string head;
    std::string body;
    // A header's value as sent ("" when absent); the name is matched as written.
    std::string header(const std::string& name) const {
      auto at = head.find("\r\n" + name + ": ");
      if (at == std::string::npos) return "";
      at += name.size() + 4;
      return head.substr(at, head.find("\r\n", at) - at);
    }
  };
  // The next response; status 0 if the connection closed or timed out first.
  response next() {
    response r;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return r;
    r.head = buf_.substr(0, end);
    r.status = std::stoi(r.head.substr(9, 3));
    size_t length = 0;
    auto cl = r.head.find("Content-Length: ");
    if (cl != std::string::npos) length = std::stoul(r.head.substr(cl + 16));
    while (buf_.size() < end + 4 + length)
      if (!fill()) return response{};
    r.body = buf_.substr(end + 4, length);
    buf_.erase(0, end + 4 + length);
    return r;
  }
  // Reads until what has come so far (kept for next()) holds needle; false if the connection
  // closed or timed out first.
  bool read_until(const std::string& needle) {
    while (buf_.find(needle) == std::string::npos)
      if (!fill()) return false;
    return true;
  }
  const std::string& received() const { return buf_; }
  // True when the server closed the connection (EOF) within the receive timeout.
  bool closed_by_server() {
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  bool fill() {
    char tmp[4096];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

}  // namespace baton::test
