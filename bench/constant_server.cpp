#include "bench/constant_server.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace baton::bench {

constant_server::constant_server(server_options opts) : opts_(std::move(opts)) {
  int n = opts_.threads;
  // Each keep-alive connection pins a pool thread, so the pool bounds concurrent pollers.
  server_.new_task_queue = [n] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  server_.set_keep_alive_max_count(static_cast<size_t>(opts_.keep_alive_max));
  server_.set_tcp_nodelay(true);
  server_.set_payload_max_length(opts_.max_body_bytes);
  server_.set_read_timeout(std::chrono::seconds(30));
  // httplib's default sets SO_REUSEPORT, which lets a second daemon bind the same port and
  // silently take half the connections. SO_REUSEADDR alone still allows a quick restart.
  server_.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

constant_server::~constant_server() { stop(); }

int constant_server::start() {
  int port =
      opts_.port == 0 ? server_.bind_to_any_port(opts_.host) : (server_.bind_to_port(opts_.host, opts_.port) ? opts_.port : -1);
  if (port <= 0)
    throw std::runtime_error("cannot listen on " + opts_.host + ":" + std::to_string(opts_.port) +
                             " (address in use or not local)");
  raise_listen_backlog(port);
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

void constant_server::stop() {
  if (!thread_.joinable()) return;
  server_.stop();
  thread_.join();
}

bool raise_listen_backlog(int port, int backlog) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return false;
  bool done = false;
  while (auto* entry = readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    if (fd <= 2) continue;
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int bound = addr.ss_family == AF_INET    ? ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)
                : addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                             : -1;
    if (bound == port && ::listen(fd, backlog) == 0) done = true;
  }
  closedir(dir);
  return done;
}

}  // namespace baton::bench
