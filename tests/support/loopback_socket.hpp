#pragma once
// A blocking TCP connection to 127.0.0.1:port with a receive timeout, for tests that speak
// raw bytes to a server. Returns the fd, or -1 if it cannot connect. `from`: the local
// address to connect from (any of 127.0.0.0/8 on Linux), so one test can be several clients
// as a server's per-address limits see them; null: the kernel's choice (127.0.0.1).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace baton::test {

inline int connect_loopback(int port, int receive_timeout_seconds, const char* from = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{receive_timeout_seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (from) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    if (inet_pton(AF_INET, from, &local.sin_addr) != 1 || ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  ::close(fd);
  return -1;
}

}  // namespace baton::test
