#pragma once
// batond's HTTP/1.1 server: one epoll event loop thread that accepts, reads, parses and
// writes for every connection, plus a small pool for blocking routes (http/router.hpp).
//
// Why not cpp-httplib's server: it parks one pool thread per keep-alive connection and that
// thread sleeps while the reply to a worker's poll becomes durable, so every poll costs
// several thread wake-ups and context switches (docs/benchmarks.md). Here a poll is parsed on
// the loop, handed to the scheduler as a message, and its reply is queued back to the loop
// when the decision's events are fsynced; nothing waits. httplib still supplies the request
// and response types and the URL decoding, so route code is unchanged.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/router.hpp"

namespace baton::http {

struct event_server_options {
  std::string host = "127.0.0.1";
  int port = 0;                          // 0 = ephemeral
  int handler_threads = 16;              // pool for blocking routes (operator calls, lists)
  size_t max_body_bytes = 16 << 20;      // larger: 413 and the connection closes
  size_t max_header_bytes = 64 << 10;    // request line + headers; larger: 431
  int max_requests_per_connection = 100000;
  int idle_timeout_seconds = 120;        // a keep-alive connection with no request in flight
  int read_timeout_seconds = 30;         // a request (or a reply the client does not read) stalls
  int max_connections = 20000;           // beyond: new connections are closed at once
};

class event_server {
 public:
  explicit event_server(event_server_options opts);
  ~event_server();
  event_server(const event_server&) = delete;
  event_server& operator=(const event_server&) = delete;

  router& routes() { return router_; }

  // Binds and starts the loop and the pool. Returns the bound port; throws
  // std::runtime_error naming the address if it cannot listen.
  int start();
  // Stops accepting and closes every connection; blocking handlers already running finish
  // first. Replies that arrive later are dropped.
  void stop();

  struct impl;

 private:
  event_server_options opts_;
  router router_;
  std::unique_ptr<impl> impl_;
};

}  // namespace baton::http
