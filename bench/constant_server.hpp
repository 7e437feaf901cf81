#pragma once
// A cpp-httplib server tuned for many keep-alive pollers: a large
// thread pool, long keep-alive, TCP_NODELAY and a listen backlog of 1024 instead of 5.
// Only api_bench uses it, as the constant endpoint the API's rates are measured against
// (docs/benchmarks.md); batond serves with http/beast_server.hpp.
#include <httplib.h>

#include <string>
#include <thread>

namespace baton::bench {

struct server_options {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = ephemeral
  int threads = 64;
  int keep_alive_max = 100000;
  size_t max_body_bytes = 16 << 20;
};

class constant_server {
 public:
  explicit constant_server(server_options opts);
  ~constant_server();
  httplib::Server& routes() { return server_; }

  // Binds and starts serving on a background thread. Returns the bound port; throws
  // std::runtime_error naming the address if it cannot bind.
  int start();
  // Stops accepting, finishes in-flight requests and joins the serving thread.
  void stop();

 private:
  server_options opts_;
  httplib::Server server_;
  std::thread thread_;
};

// Raises the listen backlog of the socket listening on port (httplib hard-codes 5).
bool raise_listen_backlog(int port, int backlog = 1024);

}  // namespace baton::bench
