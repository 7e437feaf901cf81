#pragma once
// One client connection of the Beast server (internal to http/beast_server.cpp). It reads one
// request at a time, hands it to its route, writes the answer, then parses the next one from
// what is already buffered: pipelined requests are answered in order by construction.
// Everything here runs on the server's single I/O thread except the responders, which post
// the answer back to it.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "http/beast_message.hpp"
#include "http/beast_server.hpp"
#include "http/body_transfer.hpp"
#include "http/connection_stream.hpp"
#include "http/event_stream.hpp"

namespace baton::http {

using steady = std::chrono::steady_clock;

// What a responder on any thread checks before posting to the I/O context: once the server
// stops, ioc is null and late answers are dropped instead of touching a destroyed context.
struct reply_gate {
  std::mutex mu;
  boost::asio::io_context* ioc = nullptr;
};

class session;

// The state every connection shares; touched only on the I/O thread.
struct server_core {
  server_core(beast_server_options o, const router& r) : opts(std::move(o)), routes(r) {}

  beast_server_options opts;
  const router& routes;
  boost::asio::io_context ioc{1};
  std::unique_ptr<boost::asio::thread_pool> pool;           // blocking routes
  std::unique_ptr<boost::asio::thread_pool> transfer_pool;  // streamed bodies' disk work (opts.transfer_threads)
  std::optional<boost::asio::ssl::context> tls;             // set: every connection speaks TLS
  std::shared_ptr<reply_gate> gate = std::make_shared<reply_gate>();
  std::unordered_map<uint64_t, std::shared_ptr<session>> sessions;  // every open connection
  size_t counted = 0;                                               // connections within max_connections (refused ones are not)
  size_t buffered = 0;                                              // request bytes held by every connection together
  bool stopping = false;
  // Counted connections not yet authenticated, oldest first (ids grow), and by client group.
  std::set<uint64_t> unauthenticated;
  std::unordered_map<std::string, std::set<uint64_t>> unauthenticated_from;

  // Takes n more bytes from the global budget; false (nothing taken) if that would exceed it.
  bool reserve(size_t n) {
    if (buffered + n > opts.max_buffered_request_bytes) return false;
    buffered += n;
    return true;
  }
  void release(size_t n) { buffered -= n; }
  // Forgets a closed connection; it is destroyed once the handler running now has returned.
  void retire(uint64_t id);

  // Closes the oldest unauthenticated connection (of `group`, or of all) that has no request
  // being handled; false when there is none.
  bool evict_unauthenticated(const std::string* group);
  // Closes unauthenticated connections holding request bytes (but none being handled), oldest
  // first, until n more bytes fit the budget; false (nothing closed) when even that is not enough.
  bool make_room(size_t n, uint64_t except);
};

class session : public std::enable_shared_from_this<session> {
 public:
  session(server_core& core, connection_stream conn, uint64_t id);

  // Takes one of max_connections (and, until authenticated, a place among its address's).
  void count();
  void start();  // reads the first request (after the TLS handshake, if TLS)
  // Answers at once and closes (the connection cap): no request is read.
  void refuse(int status, const std::string& code, const std::string& message);
  // Enforces the deadline of the current state (idle, reading, answer overdue, writing, lingering).
  void tick(steady::time_point now);
  steady::time_point deadline() const { return deadline_; }
  // A request is being handled or its answer written (stop() waits for these).
  bool busy() const {
    return state_ == state::handling || state_ == state::writing || state_ == state::uploading || state_ == state::downloading;
  }
  bool authenticated() const { return authenticated_; }
  const std::string& group() const { return group_; }  // client_group() of its address
  size_t held() const { return charged_; }             // its request bytes in the budget
  void close();
  // The route's answer to request number `request`, on the I/O thread; dropped when that
  // request is no longer the one waiting (answered by the deadline, or the connection closed).
  void deliver(uint64_t request, beast_response res, std::shared_ptr<event_stream> stream,
               std::shared_ptr<body_source> source = nullptr);
  // A stream's connection: writes what its producers pushed (I/O thread).
  void pump();

 private:
  enum class state { handshaking, idle, reading, handling, writing, streaming, lingering, uploading, downloading, closed };

  // Runs next once the connection can carry HTTP: at once for TCP, after the TLS handshake
  // (which must finish within read_timeout_seconds) otherwise.
  template <class Next>
  void when_ready(Next next);

  void read_some();
  void on_read(boost::system::error_code ec, size_t n);
  void parse();
  bool check_head();    // false: rejected, or a 100 Continue is being written (parse() resumes after it)
  bool caller_known();  // the head being parsed carries a valid credential (opts.authenticates)
  void authenticate();
  void leave_unauthenticated();  // out of core_.unauthenticated and unauthenticated_from
  // The unauthenticated get the shorter timeout for everything.
  steady::duration limit(int seconds) const;
  void dispatch();
  respond_fn responder(uint64_t request, std::string route);
  void write(beast_response res, bool keep_alive);
  void on_written(boost::system::error_code ec);
  void reject(int status, const std::string& code, const std::string& message);
  void linger();  // after a last answer: stop sending, read and drop until the client closes
  void discard();
  void start_stream(beast_response& head, std::shared_ptr<event_stream> stream);
  void write_stream(std::vector<event_stream::shared_text> texts);
  void watch_stream_client();  // a streaming client sends nothing: a read ends only when it goes
  // --- streamed bodies (http/body_transfer.hpp): at most two chunks per transfer in memory,
  // one on the handler pool (disk) while the I/O thread fills or drains the other (socket).
  struct chunk {
    std::unique_ptr<char[]> data;
    size_t size = 0;  // bytes in it
  };
  chunk take_chunk();  // a spare chunk, or a new one
  // Runs work() on the handler pool, then done(session, result) back on the I/O thread (not
  // at all once the session or the server is gone).
  template <class Work, class Done>
  void off_thread(Work work, Done done);
  void begin_upload(const router::route& r, request head, bool expect_continue, uint64_t length, bool keep_alive);
  void upload_step();                // moves the body along: socket -> chunk -> sink, then the sink's answer
  void upload_answer(response res);  // the upload's answer (a refusal closes the connection after it)
  void start_download(beast_response& head, std::shared_ptr<body_source> source);
  void download_step();  // source -> chunk -> socket, then the next request
  void write_slice();    // the next slice of writing_chunk_

  bool charge(size_t total);  // grows this request's share of the global budget to total
  void uncharge();
  void secure_headers(beast_response& res) const;  // what every answer carries (nosniff, no-store, HSTS)

  server_core& core_;
  connection_stream conn_;
  uint64_t id_;
  bool counted_ = false;
  bool authenticated_;
  std::string remote_;
  std::string group_;
  state state_ = state::idle;
  steady::time_point deadline_;
  steady::time_point started_;  // the current request's first byte
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool head_checked_ = false;
  size_t consumed_ = 0;   // bytes of the current request the parser has taken so far
  size_t received_ = 0;   // bytes of the current request (and any pipelined after it) read so far
  size_t expected_ = 0;   // head + Content-Length, once the head is parsed
  size_t charged_ = 0;    // taken from core_.buffered for them
  uint64_t request_ = 0;  // number of the request being handled
  bool async_route_ = false;
  bool keep_alive_ = true;
  bool http10_ = false;  // the request was HTTP/1.0: keep-alive must then be said explicitly
  int served_ = 0;
  std::optional<beast_response> out_;
  std::shared_ptr<event_stream> stream_;
  std::vector<event_stream::shared_text> stream_out_;  // the stream's texts being written (held until written)
  bool stream_writing_ = false;
  std::optional<boost::asio::steady_timer> stream_pause_;  // set: the next write waits for it
  bool stream_pausing_ = false;
  // The body being streamed (state uploading or downloading).
  std::shared_ptr<body_sink> sink_;
  std::shared_ptr<body_source> source_;
  std::string transfer_route_;  // the route's name, for the request counters
  uint64_t body_left_ = 0;      // upload: bytes still to read from the socket; download: from the source
  chunk filling_;               // upload: read into from the socket
  chunk ready_;                 // download: read from the source, next to write
  chunk spare_;
  bool pool_busy_ = false;     // a chunk is with the sink or source on the pool
  bool socket_busy_ = false;   // a read (upload) or write (download) of body bytes is in flight
  bool client_gone_ = false;   // upload: the client closed midway (what it sent still goes to the sink)
  std::string download_head_;  // the download's head, while it is written
  chunk writing_chunk_;        // download: being written
  size_t written_ = 0;         // of it, so far
};

}  // namespace baton::http
