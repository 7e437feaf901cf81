#pragma once
// Loopback TCP ports for servers a test starts (slurmctld, sshd, a store that must not answer).
// Chosen below the kernel's ephemeral range (net.ipv4.ip_local_port_range): a port the kernel
// handed out for binding to 0 and then released could be handed out again, to a connection or
// a listener of a test running beside this one, before the server binds it ("Address already
// in use"); one below the range is never handed out so. Candidates start at an offset taken
// from the process id and move on with each call, so two suites side by side (release and ASan)
// and two calls in one test get different ports; each is free when asked (held while the
// others are asked).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <vector>

namespace baton::test {

inline std::vector<int> free_ports(size_t n) {
  static std::atomic<int> calls{0};
  int low = 32768;
  if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); range) range >> low;
  constexpr int first = 10000;
  const int span = std::max(1, low - first);
  const int start = static_cast<int>(::getpid()) * 7 + calls.fetch_add(1) * 101;
  std::vector<int> fds, ports;
  for (int tried = 0; tried < span && ports.size() < n; ++tried) {
    const int port = first + (start + tried) % span;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      ports.push_back(port);
      fds.push_back(fd);
    } else {
      ::close(fd);
    }
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

inline int free_port() {
  auto p = free_ports(1);
  return p.empty() ? 0 : p.front();
}

}  // namespace baton::test
