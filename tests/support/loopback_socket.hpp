#pragma once
// A blocking TCP connection to 127.0.0.1:port with a receive timeout, for tests that speak
// raw bytes to a server. Returns the fd, or -1 if it cannot connect.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace baton::test {

inline int connect_loopback(int port, int receive_timeout_seconds) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{receive_timeout_seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  ::close(fd);
  return -1;
}

}  // namespace baton::test
