#pragma once
// A TCP proxy on loopback that cuts connections: each accepted connection takes the next plan
// from a queue (bytes client->server and server->client after which both sockets are shut;
// 0 = no cut), so a test can drop an upload after N bytes or a download midway, for real,
// between a client and a server that know nothing about it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace baton::test {

class cutting_proxy {
 public:
  struct plan {
    uint64_t up = 0;    // client -> server bytes before the cut (0: none)
    uint64_t down = 0;  // server -> client bytes before the cut (0: none)
  };

  explicit cutting_proxy(int target_port) : target_(target_port) {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_, 64) != 0)
      throw std::runtime_error("cutting_proxy: cannot listen");
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~cutting_proxy() {
    quit_ = true;
    ::shutdown(listen_, SHUT_RDWR);
    ::close(listen_);
    acceptor_.join();
    for (auto& t : pumps_) t.join();
  }
  int port() const { return port_; }
  // The next connections' plans, in order; connections after them are not cut.
  void push(plan p) {
    std::lock_guard<std::mutex> lock(m_);
    plans_.push_back(p);
  }
  int connections() const { return connections_; }
  int cuts() const { return cuts_; }

 private:
  void accept_loop() {
    while (!quit_) {
      int c = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (quit_) return;
        continue;
      }
      plan p;
      {
        std::lock_guard<std::mutex> lock(m_);
        if (!plans_.empty()) {
          p = plans_.front();
          plans_.pop_front();
        }
      }
      ++connections_;
      int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(target_));
      if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(c);
        ::close(s);
        continue;
      }
      pumps_.emplace_back([this, c, s, p] { pump(c, s, p); });
    }
  }

  // Copies both ways until either side closes or a budget runs out (then both are cut).
  void pump(int c, int s, plan p) {
    uint64_t up = 0, down = 0;
    std::vector<char> buf(64 * 1024);
    bool cut = false;
    while (!quit_ && !cut) {
      pollfd fds[2] = {{c, POLLIN, 0}, {s, POLLIN, 0}};
      if (::poll(fds, 2, 100) < 0) break;
      bool closed = false;
      for (int i = 0; i < 2 && !cut && !closed; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        uint64_t& count = i == 0 ? up : down;
        uint64_t limit = i == 0 ? p.up : p.down;
        size_t want = buf.size();
        if (limit) want = static_cast<size_t>(std::min<uint64_t>(want, limit - count));
        ssize_t n = ::recv(fds[i].fd, buf.data(), want, 0);
        if (n <= 0) {
          closed = true;
          break;
        }
        int to = i == 0 ? s : c;
        for (ssize_t done = 0; done < n;) {
          ssize_t w = ::send(to, buf.data() + done, static_cast<size_t>(n - done), MSG_NOSIGNAL);
          if (w <= 0) {
            closed = true;
            break;
          }
          done += w;
        }
        count += static_cast<uint64_t>(n);
        if (limit && count >= limit) {
          cut = true;
          ++cuts_;
        }
      }
      if (closed) break;
    }
    ::shutdown(c, SHUT_RDWR);
    ::shutdown(s, SHUT_RDWR);
    ::close(c);
    ::close(s);
  }

  int target_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> quit_{false};
  std::atomic<int> connections_{0}, cuts_{0};
  std::mutex m_;
  std::deque<plan> plans_;
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // joined at the end (a test opens a handful of connections)
};

}  // namespace baton::test
