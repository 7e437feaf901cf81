#pragma once
// batond's HTTP/1.1 server on Boost.Beast + Asio: one I/O thread accepts, reads, parses and
// writes for every connection; a small pool runs the blocking routes (http/router.hpp).
//
// Why an event loop rather than a thread per connection: a worker's poll is handed to the
// scheduler as a message and its reply comes back once the decision is fsynced; with a
// thread per connection every poll cost several wake-ups while that thread slept
// (docs/benchmarks.md). Here nothing waits: the reply is posted back to the I/O thread.
//
// Limits (each one closes the connection it hits, after a JSON error where there is one):
// a request must arrive whole within read_timeout_seconds (head and body together), a
// keep-alive connection without a request in progress closes after idle_timeout_seconds,
// at most max_connections are served (beyond: 503), and all requests being read or handled
// together hold at most max_buffered_request_bytes (beyond: 503). An async route that has not
// answered within async_reply_deadline_ms gets 503 not_durable_yet with Retry-After; the
// connection goes on with its next request and the late answer is dropped.
//
// Who may hold those resources: a connection is authenticated from its first request whose
// head carries a valid credential (`authenticates`). Until then it has the shorter
// unauthenticated_timeout_seconds for everything, a client address holds at most
// max_unauthenticated_per_address of them, and when connections or request bytes run out
// they are closed, oldest first, to make room: so callers without a credential cannot take
// either from those with one. A body over max_unauthenticated_body_bytes, or Expect:
// 100-continue, needs a valid credential in that request's head, else 401 at once: the
// budget is reserved from Content-Length, and 16 strangers announcing 16 MiB had taken it all.
#include <functional>
#include <memory>
#include <string>

#include "http/message.hpp"
#include "http/request_counters.hpp"
#include "http/router.hpp"

namespace baton::http {

struct beast_server_options {
  std::string host = "127.0.0.1";
  int port = 0;                        // 0 = ephemeral
  int handler_threads = 16;            // pool for blocking routes (operator calls, lists)
  size_t max_body_bytes = 16 << 20;    // larger: 413
  size_t max_header_bytes = 64 << 10;  // request line + headers; larger: 431
  int max_requests_per_connection = 100000;
  int read_timeout_seconds = 30;                          // a whole request (head + body), from its first byte
  int idle_timeout_seconds = 120;                         // a keep-alive connection with no request in progress
  int max_connections = 20000;                            // beyond: 503 and close
  size_t max_buffered_request_bytes = size_t{256} << 20;  // all connections together; beyond: 503
  int async_reply_deadline_ms = 10000;                    // an async route's answer; later: 503 not_durable_yet
  int stream_keepalive_seconds = 15;                      // a quiet event stream gets a comment line this often
  // An event stream's client gets at most one write per this many ms, with everything queued
  // meanwhile: one write per log batch to each of 50 dashboards took the I/O thread from polls.
  int stream_write_interval_ms = 50;
  int stop_grace_seconds = 5;  // stop(): how long requests in flight may still answer
  // Whether a request's head carries a valid credential (batond: http::identify()); unset,
  // every connection counts as authenticated from the start. Runs on the I/O thread.
  std::function<bool(const request& head)> authenticates;
  int unauthenticated_timeout_seconds = 10;          // before authenticating: handshake, each request, each idle wait
  int max_unauthenticated_per_address = 32;          // per client_group(); beyond, that address's oldest closes
  size_t max_unauthenticated_body_bytes = 64 << 10;  // larger, or Expect: 100-continue, without a credential: 401
  // HTTPS when set (PEM files; the certificate file may carry the chain). TLS 1.2 with ECDHE
  // and an AEAD cipher only, or TLS 1.3; the handshake is the unauthenticated connection's
  // first step. The key file must not be open to group or others (start() refuses it).
  std::string tls_cert_file, tls_key_file;
  std::shared_ptr<request_counters> counters;  // requests by route and status (none: not counted)
  // Streamed bodies (router::upload, response::source) move in chunks of this size, two per
  // transfer at most, each charged to max_buffered_request_bytes while the transfer runs.
  // Their body arrives (or leaves) with no whole-request deadline: each read or write of it
  // must progress within read_timeout_seconds.
  size_t transfer_chunk_bytes = size_t{1} << 20;
  // Each read or write of their bytes on the socket moves at most this much, one turn of the
  // I/O thread each: requests on other connections (polls) wait behind one such copy at most.
  size_t transfer_io_bytes = size_t{128} << 10;
  // Their disk reads, writes and hashing run on a pool of their own, at a lower CPU priority
  // (nice, within batond): a busy transfer then yields the cores to the I/O thread and the
  // scheduler, so polls are not slowed, and the blocking routes' pool stays free for them.
  int transfer_threads = 4;
  int transfer_nice = 10;
};

class beast_server {
 public:
  explicit beast_server(beast_server_options opts);
  ~beast_server();
  beast_server(const beast_server&) = delete;
  beast_server& operator=(const beast_server&) = delete;

  router& routes() { return router_; }

  // Binds, listens (backlog 1024) and starts the I/O thread and the pool. Returns the bound
  // port; throws std::runtime_error naming the address if it cannot listen, or naming the
  // file if the TLS certificate or key cannot be loaded or the key is open to others.
  int start();
  // Stops accepting; requests in flight get their answers for up to stop_grace_seconds, then
  // every connection closes. Blocking handlers still running finish before this returns;
  // answers that arrive later (from any thread) are dropped.
  void stop();

  struct impl;

 private:
  beast_server_options opts_;
  router router_;
  std::unique_ptr<impl> impl_;
};

}  // namespace baton::http
