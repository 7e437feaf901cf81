#include "http/beast_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/write.hpp>

#include <spdlog/spdlog.h>

#include <limits>
#include <optional>

namespace baton::http {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

namespace {
// The interim answer that invites an Expect: 100-continue request's body.
constexpr std::string_view continue_100 = "HTTP/1.1 100 Continue\r\n\r\n";

// A head written by hand (streams, downloads): the status line and the route's headers, less framing.
std::string raw_head(const beast_response& head) {
  std::string text = "HTTP/1.1 " + std::to_string(head.result_int()) + " " + std::string(to_std(head.reason())) + "\r\n";
  for (const auto& f : head) {
    auto name = to_std(f.name_string());
    if (iequals(name, "Content-Length") || iequals(name, "Connection") || iequals(name, "Transfer-Encoding")) continue;
    text.append(name).append(": ").append(to_std(f.value())).append("\r\n");
  }
  return text;
}
}  // namespace

void server_core::retire(uint64_t id) {
  auto it = sessions.find(id);
  if (it == sessions.end()) return;
  // Keep the session alive until the handler that closed it has unwound.
  net::post(ioc, [keep = std::move(it->second)] {});
  sessions.erase(it);
}

bool server_core::evict_unauthenticated(const std::string* group) {
  const std::set<uint64_t>* among = &unauthenticated;
  if (group) {
    auto it = unauthenticated_from.find(*group);
    if (it == unauthenticated_from.end()) return false;
    among = &it->second;
  }
  for (uint64_t id : *among) {
    auto s = sessions.at(id);
    if (s->busy()) continue;  // its answer is on its way: it frees its place by itself
    spdlog::debug("http: closing the unauthenticated connection from {} to make room", s->group());
    s->close();  // (edits *among: nothing more is read from it)
    return true;
  }
  return false;
}

bool server_core::make_room(size_t n, uint64_t except) {
  std::vector<std::shared_ptr<session>> victims;
  size_t freed = 0;
  for (uint64_t id : unauthenticated) {
    if (buffered - freed + n <= opts.max_buffered_request_bytes) break;
    const auto& s = sessions.at(id);
    if (id == except || s->busy() || s->held() == 0) continue;
    freed += s->held();
    victims.push_back(s);
  }
  if (buffered - freed + n > opts.max_buffered_request_bytes) return false;
  for (auto& s : victims) s->close();
  if (!victims.empty())
    spdlog::debug("http: closed {} unauthenticated connections to make room for request bytes", victims.size());
  return true;
}

session::session(server_core& core, connection_stream conn, uint64_t id)
    : core_(core), conn_(std::move(conn)), id_(id), authenticated_(!core.opts.authenticates) {
  error_code ec;
  auto peer = conn_.socket().remote_endpoint(ec);
  if (!ec) remote_ = peer.address().to_string(ec);
  group_ = client_group(remote_);
  deadline_ = steady::now() + limit(core_.opts.idle_timeout_seconds);
}

void session::count() {
  counted_ = true;
  ++core_.counted;
  if (authenticated_) return;
  core_.unauthenticated.insert(id_);
  core_.unauthenticated_from[group_].insert(id_);
}

steady::duration session::limit(int seconds) const {
  if (!authenticated_) seconds = std::min(seconds, core_.opts.unauthenticated_timeout_seconds);
  return std::chrono::seconds(seconds);
}

void session::authenticate() {
  if (authenticated_) return;
  authenticated_ = true;
  if (state_ == state::reading) deadline_ = started_ + std::chrono::seconds(core_.opts.read_timeout_seconds);
  leave_unauthenticated();
}

void session::leave_unauthenticated() {
  if (!counted_) return;
  core_.unauthenticated.erase(id_);
  auto it = core_.unauthenticated_from.find(group_);
  if (it != core_.unauthenticated_from.end() && it->second.erase(id_) && it->second.empty()) core_.unauthenticated_from.erase(it);
}

template <class Next>
void session::when_ready(Next next) {
  if (!conn_.is_tls()) return next();
  state_ = state::handshaking;
  deadline_ = steady::now() + limit(core_.opts.read_timeout_seconds);
  conn_.handshake([self = shared_from_this(), next = std::move(next)](error_code ec) {
    if (self->state_ != state::handshaking) return;  // closed by its deadline meanwhile
    if (ec) {                                        // not TLS, an untrusted client, a scanner: one line at debug, nothing else
      spdlog::debug("http: TLS handshake with {} failed: {}", self->remote_, ec.message());
      return self->close();
    }
    self->state_ = state::idle;
    next();
  });
}

void session::start() {
  when_ready([this] { parse(); });
}

void session::refuse(int status, const std::string& code, const std::string& message) {
  when_ready([this, status, code, message] { write(error_reply(status, code, message), false); });
}

void session::read_some() {
  size_t want = 8192;
  if (expected_ > received_) want = std::min<size_t>(std::max<size_t>(expected_ - received_, want), 65536);
  conn_.async_read_some(buffer_.prepare(want), [self = shared_from_this()](error_code ec, size_t n) { self->on_read(ec, n); });
}

void session::on_read(error_code ec, size_t n) {
  if (state_ != state::idle && state_ != state::reading) return;  // closed meanwhile
  if (ec) return close();                                         // EOF or reset: a request cut short goes with the connection
  buffer_.commit(n);
  received_ += n;
  if (!charge(std::max(received_, expected_)))
    return reject(503, "request_memory_exhausted", "the server holds too many request bytes; retry later");
  parse();
}

// Feeds buffered bytes to the parser: dispatches a complete request, or reads more.
void session::parse() {
  if (state_ != state::idle && state_ != state::reading) return;
  auto now = steady::now();
  if (!parser_ && buffer_.size() == 0) {
    if (core_.stopping) return close();
    state_ = state::idle;
    deadline_ = now + limit(core_.opts.idle_timeout_seconds);
    return read_some();
  }
  if (state_ == state::idle) {  // the first bytes of a request: its whole-request deadline starts
    state_ = state::reading;
    started_ = now;
    deadline_ = now + limit(core_.opts.read_timeout_seconds);
  }
  if (!parser_) {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(core_.opts.max_header_bytes));
    // The body's limit is checked on the head (check_head), where an upload route, which
    // takes larger bodies, is known; Beast's own check would refuse it before that. (Not
    // boost::none: Boost 1.74 compares a Content-Length against an unset limit as larger.)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    head_checked_ = false;
    consumed_ = 0;
  }
  while (buffer_.size() > 0) {
    error_code ec;
    size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    consumed_ += used;
    if (ec == bhttp::error::need_more) break;
    if (ec == bhttp::error::header_limit)
      return reject(431, "headers_too_large",
                    "request line and headers exceed " + std::to_string(core_.opts.max_header_bytes) + " bytes");
    if (ec == bhttp::error::body_limit)
      return reject(413, "body_too_large", "request body exceeds " + std::to_string(core_.opts.max_body_bytes) + " bytes");
    if (ec) return reject(400, "bad_request", "malformed request: " + ec.message());
    if (!head_checked_ && parser_->is_header_done() && !check_head()) return;
    if (parser_->is_done()) return dispatch();
    if (used == 0) break;  // nothing more to take from what is buffered
  }
  read_some();
}

bool session::check_head() {
  head_checked_ = true;
  const auto& m = parser_->get();
  if (m.version() != 10 && m.version() != 11) {
    reject(400, "bad_request", "only HTTP/1.0 and HTTP/1.1 are served");
    return false;
  }
  if (m.target().empty() || m.target().front() != '/') {
    reject(400, "bad_request", "request target must be a path starting with '/'");
    return false;
  }
  if (m.count(bhttp::field::transfer_encoding)) {
    reject(411, "length_required", "Transfer-Encoding request bodies are not supported; send Content-Length");
    return false;
  }
  bool expect_continue = false;
  if (auto e = m.find(bhttp::field::expect); e != m.end()) {
    if (!iequals(to_std(e->value()), "100-continue")) {
      reject(417, "expectation_failed", "only Expect: 100-continue is supported");
      return false;
    }
    expect_continue = true;
  }
  const size_t body = static_cast<size_t>(parser_->content_length().value_or(0));
  // A route that streams its body (router::upload) is looked for only for the methods some
  // such route has: other requests (worker polls) cost nothing more.
  const router::route* upload = nullptr;
  std::optional<request> head;
  if (core_.routes.has_upload(std::string(to_std(m.method_string())))) {
    head = head_of(m, remote_);
    upload = core_.routes.match(*head);
    if (upload && !upload->upload) upload = nullptr;
  }
  if (!upload && body > core_.opts.max_body_bytes) {
    reject(413, "body_too_large", "request body exceeds " + std::to_string(core_.opts.max_body_bytes) + " bytes");
    return false;
  }
  if (upload && !parser_->content_length()) {
    reject(411, "length_required", "this upload needs a Content-Length header");
    return false;
  }
  // The budget is reserved from Content-Length, and a 100 Continue invites the body: both
  // only for a caller known by this head. Others may send a small body (a dashboard login).
  const bool needs_caller = expect_continue || body > core_.opts.max_unauthenticated_body_bytes;
  if (!authenticated_ || needs_caller) {
    if (caller_known()) {
      authenticate();
    } else if (needs_caller) {
      reject(401, "credential_required",
             "a request with a body over " + std::to_string(core_.opts.max_unauthenticated_body_bytes) +
                 " bytes, or with Expect: 100-continue, needs a valid credential (X-API-Token, X-Worker-Token or a "
                 "dashboard session)");
      return false;
    }
  }
  if (upload) {
    http10_ = m.version() == 10;
    const bool keep_alive = m.keep_alive() && ++served_ < core_.opts.max_requests_per_connection && !core_.stopping;
    begin_upload(*upload, std::move(*head), expect_continue, body, keep_alive);
    return false;
  }
  expected_ = consumed_ + body;
  if (!charge(std::max(received_, expected_))) {
    reject(503, "request_memory_exhausted", "the server holds too many request bytes; retry later");
    return false;
  }
  parser_->eager(true);  // from here on, one put() takes all the body bytes at hand
  if (expect_continue && !parser_->is_done() && buffer_.size() == 0) {
    net::async_write(conn_, net::buffer(continue_100), [self = shared_from_this()](error_code ec, size_t) {
      if (ec) return self->close();
      self->parse();
    });
    return false;
  }
  return true;
}

bool session::caller_known() {
  if (!core_.opts.authenticates) return true;
  try {
    return core_.opts.authenticates(head_of(parser_->get(), remote_));
  } catch (const std::exception& e) {  // a failing check must not take the I/O thread down
    spdlog::error("http: checking the credential of a request from {}: {}", remote_, e.what());
    return false;
  }
}

void session::dispatch() {
  auto msg = parser_->release();
  parser_.reset();
  bool keep_alive = msg.keep_alive() && ++served_ < core_.opts.max_requests_per_connection && !core_.stopping;
  http10_ = msg.version() == 10;
  request req = from_beast(std::move(msg), remote_);
  keep_alive_ = keep_alive;
  state_ = state::handling;
  async_route_ = false;
  deadline_ = steady::time_point::max();
  const uint64_t id = ++request_;
  try {
    const router::route* r = core_.routes.match(req);
    if (r && r->upload) r = nullptr;  // (check_head sends those bodies to their sink)
    auto respond = responder(id, r ? r->method + " " + r->pattern : "unmatched");
    if (!r) {
      respond(core_.routes.not_found(req));
    } else if (r->async) {
      async_route_ = true;
      deadline_ = steady::now() + std::chrono::milliseconds(core_.opts.async_reply_deadline_ms);
      core_.routes.run_async(*r, req, respond);
    } else {
      net::post(*core_.pool, [&routes = core_.routes, r, req = std::move(req), respond]() mutable {
        response res;
        routes.run_blocking(*r, req, res);
        respond(std::move(res));
      });
    }
  } catch (const std::exception& e) {  // a bug in routing must cost one request, not the daemon
    spdlog::error("http: {} {}: {}", req.method, req.target, e.what());
    response res;
    res.status = 500;
    res.set_content(R"({"error":"internal_error","message":"the server failed to route this request"})", "application/json");
    responder(id, "unmatched")(std::move(res));
  }
}

// Called once per request from any thread, now or later. Only the gate's lock is taken here;
// the answer is checked against the connection on the I/O thread.
respond_fn session::responder(uint64_t request, std::string route) {
  // (A response to render is carried to the I/O thread as it is and finished there.)
  auto finish = [weak = weak_from_this(), request, counters = core_.opts.counters, route = std::move(route)](response res) {
    if (counters) counters->count(route, res.status);
    auto stream = std::move(res.stream);
    auto source = std::move(res.source);
    return [weak, request, out = to_beast(std::move(res)), stream = std::move(stream), source = std::move(source)]() mutable {
      if (auto self = weak.lock()) return self->deliver(request, std::move(out), std::move(stream), std::move(source));
      if (stream) stream->close();
    };
  };
  return [gate = core_.gate, finish = std::move(finish)](response res) {
    auto render = std::move(res.render);
    auto stream = res.stream;  // (closed here if the server has stopped)
    std::optional<decltype(finish(response{}))> done;
    if (!render) done.emplace(finish(std::move(res)));
    std::lock_guard<std::mutex> g(gate->mu);
    if (!gate->ioc) {  // the server has stopped
      if (stream) stream->close();
      return;
    }
    if (done) return net::post(*gate->ioc, std::move(*done));
    net::post(*gate->ioc, [finish, render = std::move(render), res = std::move(res)]() mutable {
      render(res);
      finish(std::move(res))();
    });
  };
}

void session::deliver(uint64_t request, beast_response res, std::shared_ptr<event_stream> stream,
                      std::shared_ptr<body_source> source) {
  if (state_ != state::handling || request != request_) {  // answered by the deadline, or closed
    if (stream) stream->close();
    return;
  }
  if (stream && res.result_int() == 200) return start_stream(res, std::move(stream));
  if (source && (res.result_int() == 200 || res.result_int() == 206)) return start_download(res, std::move(source));
  if (stream) stream->close();
  write(std::move(res), keep_alive_);
}

// Every answer, unless its route said otherwise: not to be sniffed into another type (an
// error echoing input must not become a page), not to be kept by a browser or a proxy (an
// answer may carry a new token), and over TLS, HTTPS only from now on for this host.
void session::secure_headers(beast_response& res) const {
  if (res.find("X-Content-Type-Options") == res.end()) res.set("X-Content-Type-Options", "nosniff");
  if (res.find(bhttp::field::cache_control) == res.end()) res.set(bhttp::field::cache_control, "no-store");
  if (conn_.is_tls()) res.set(bhttp::field::strict_transport_security, "max-age=31536000");
}

// --- streams (Server-Sent Events) ---
// The head has no Content-Length: the body ends when the connection does. Nothing more is
// read as a request on this connection; a read stays open only to learn that the client left.
void session::start_stream(beast_response& head, std::shared_ptr<event_stream> stream) {
  secure_headers(head);
  state_ = state::streaming;
  keep_alive_ = false;
  uncharge();
  parser_.reset();
  buffer_.clear();
  stream_ = std::move(stream);
  std::string text = raw_head(head) + "X-Accel-Buffering: no\r\nConnection: close\r\n\r\n";
  stream_->attach([gate = core_.gate, weak = weak_from_this()] {
    std::lock_guard<std::mutex> g(gate->mu);
    if (!gate->ioc) return;
    net::post(*gate->ioc, [weak] {
      if (auto self = weak.lock()) self->pump();
    });
  });
  watch_stream_client();
  write_stream({std::make_shared<const std::string>(std::move(text))});
}

void session::pump() {
  if (state_ != state::streaming || stream_writing_ || stream_pausing_) return;
  auto texts = stream_->take();
  if (stream_->closed()) return close();  // too slow a reader, or the server stops
  if (texts.empty()) return;
  write_stream(std::move(texts));
}

void session::write_stream(std::vector<event_stream::shared_text> texts) {
  stream_writing_ = true;
  stream_out_ = std::move(texts);
  // One gathered write (async_write keeps its own copy of the buffer list; the texts stay in stream_out_).
  std::vector<net::const_buffer> buffers;
  for (const auto& t : stream_out_) buffers.push_back(net::buffer(*t));
  deadline_ = steady::now() + std::chrono::seconds(core_.opts.read_timeout_seconds);  // a client that stops reading
  net::async_write(conn_, buffers, [self = shared_from_this()](error_code ec, size_t) {
    if (self->state_ != state::streaming) return;
    self->stream_writing_ = false;
    self->stream_out_.clear();
    if (ec) return self->close();
    // Quiet streams get a comment line now and then, so proxies and clients see it alive.
    self->deadline_ = steady::now() + std::chrono::seconds(self->core_.opts.stream_keepalive_seconds);
    if (self->core_.opts.stream_write_interval_ms <= 0) return self->pump();
    // What comes meanwhile waits, and goes in one write (event_stream wakes once per take()).
    if (!self->stream_pause_) self->stream_pause_.emplace(self->core_.ioc);
    self->stream_pausing_ = true;
    self->stream_pause_->expires_after(std::chrono::milliseconds(self->core_.opts.stream_write_interval_ms));
    self->stream_pause_->async_wait([self](error_code) {
      self->stream_pausing_ = false;
      self->pump();  // (nothing if the connection closed meanwhile)
    });
  });
}

void session::watch_stream_client() {
  conn_.async_read_some(buffer_.prepare(1024), [self = shared_from_this()](error_code ec, size_t) {
    if (self->state_ != state::streaming) return;
    if (ec) return self->close();
    self->buffer_.clear();  // a streaming client has nothing to say: dropped
    self->watch_stream_client();
  });
}

void session::write(beast_response res, bool keep_alive) {
  state_ = state::writing;
  deadline_ = steady::now() + limit(core_.opts.read_timeout_seconds);
  secure_headers(res);
  keep_alive_ = keep_alive && !core_.stopping;
  if (!keep_alive_)
    res.keep_alive(false);
  else if (http10_)
    res.set(bhttp::field::connection, "keep-alive");
  out_.emplace(std::move(res));
  bhttp::async_write(conn_, *out_, [self = shared_from_this()](error_code ec, size_t) { self->on_written(ec); });
}

void session::on_written(error_code ec) {
  out_.reset();
  if (state_ != state::writing) return;
  if (ec) return close();
  uncharge();
  if (!keep_alive_) return linger();
  // Bytes already buffered belong to the next (pipelined) request.
  received_ = buffer_.size();
  expected_ = 0;
  if (buffer_.capacity() > 65536 && buffer_.size() == 0) buffer_.shrink_to_fit();
  if (received_ > 0 && !charge(received_))
    return reject(503, "request_memory_exhausted", "the server holds too many request bytes; retry later");
  state_ = state::idle;
  parse();
}

void session::reject(int status, const std::string& code, const std::string& message) {
  parser_.reset();
  http10_ = false;
  buffer_.consume(buffer_.size());
  uncharge();
  write(error_reply(status, code, message), false);
}

// Closing at once with unread request bytes would reset the connection, and a reset can
// destroy the answer before the client reads it. So: half-close, drop what still comes.
void session::linger() {
  state_ = state::lingering;
  deadline_ = steady::now() + std::chrono::seconds(2);
  error_code ec;
  conn_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  if (ec) return close();
  buffer_.clear();
  discard();
}

void session::discard() {
  conn_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](error_code ec, size_t) {
    if (self->state_ != state::lingering) return;
    if (ec) return self->close();  // the client has closed too
    self->discard();
  });
}

// --- streamed bodies (http/body_transfer.hpp) ---
// The I/O thread only moves buffers: the sink's writes and the source's reads (disk) run on
// the transfer pool, one chunk at a time per transfer, while the I/O thread reads the next
// chunk from the socket (upload) or writes the last one to it (download). A transfer holds at
// most two chunks; while the pool holds one and the other is full, the socket waits (TCP's
// window holds the client back), so a fast client cannot fill batond's memory.

namespace {
response failed_sink(const std::exception& e) {
  spdlog::error("http: an upload's sink failed: {}", e.what());
  response res;
  res.status = 500;
  res.set_content(R"({"error":"internal_error","message":"the upload failed on the server; retry from the offset batond holds"})",
                  "application/json");
  return res;
}
}  // namespace

session::chunk session::take_chunk() {
  if (spare_.data) {
    chunk c = std::move(spare_);
    spare_ = chunk{};
    c.size = 0;
    return c;
  }
  return chunk{std::unique_ptr<char[]>(new char[core_.opts.transfer_chunk_bytes]), 0};
}

template <class Work, class Done>
void session::off_thread(Work work, Done done) {
  net::post(*core_.transfer_pool, [gate = core_.gate, weak = weak_from_this(), work = std::optional<Work>(std::move(work)),
                                   done = std::move(done)]() mutable {
    auto result = (*work)();
    work.reset();  // what it holds (a sink, a source) goes before the answer can be seen
    std::lock_guard<std::mutex> g(gate->mu);
    if (!gate->ioc) return;  // the server has stopped
    net::post(*gate->ioc, [weak, done = std::move(done), result = std::move(result)]() mutable {
      if (auto self = weak.lock()) done(*self, std::move(result));
    });
  });
}

// The head is whole and no body byte has been taken: the route decides on the head alone (on
// the transfer pool: it may look at the disk, e.g. re-hash what an interrupted upload left).
void session::begin_upload(const router::route& r, request head, bool expect_continue, uint64_t length, bool keep_alive) {
  parser_.reset();  // the body goes to the sink, never to the parser; what follows it is the next request
  keep_alive_ = keep_alive;
  state_ = state::handling;
  async_route_ = false;
  deadline_ = steady::time_point::max();
  const uint64_t id = ++request_;
  transfer_route_ = r.method + " " + r.pattern;
  body_left_ = length;
  client_gone_ = false;
  // The request's share of the budget: its two chunks, not its Content-Length.
  uncharge();
  if (!charge(2 * core_.opts.transfer_chunk_bytes)) {
    reject(503, "request_memory_exhausted", "the server holds too many request bytes; retry later");
    return;
  }
  off_thread([&routes = core_.routes, &r, head = std::move(head)] { return routes.run_upload(r, head); },
             [id, expect_continue](session& self, upload_start start) {
               if (self.state_ != state::handling || self.request_ != id) return;
               if (start.refusal) return self.upload_answer(std::move(*start.refusal));
               self.sink_ = std::move(start.sink);
               self.state_ = state::uploading;
               if (!expect_continue || self.buffer_.size() > 0 || self.body_left_ == 0) return self.upload_step();
               self.socket_busy_ = true;
               self.deadline_ = steady::now() + self.limit(self.core_.opts.read_timeout_seconds);
               net::async_write(self.conn_, net::buffer(continue_100), [s = self.shared_from_this()](error_code ec, size_t) {
                 if (s->state_ != state::uploading) return;
                 s->socket_busy_ = false;
                 if (ec) return s->close();
                 s->upload_step();
               });
             });
}

void session::upload_step() {
  if (state_ != state::uploading) return;
  const size_t cap = core_.opts.transfer_chunk_bytes;
  if (!filling_.data) filling_ = take_chunk();
  // Body bytes that came with the head (or with an earlier read) first.
  if (!socket_busy_ && buffer_.size() > 0 && body_left_ > 0 && filling_.size < cap) {
    size_t n = static_cast<size_t>(std::min<uint64_t>({buffer_.size(), body_left_, cap - filling_.size}));
    net::buffer_copy(net::buffer(filling_.data.get() + filling_.size, n), buffer_.data(), n);
    buffer_.consume(n);
    filling_.size += n;
    body_left_ -= n;
  }
  const bool full = filling_.size == cap || ((body_left_ == 0 || client_gone_) && filling_.size > 0);
  if (full && !pool_busy_) {
    pool_busy_ = true;
    off_thread(
        [sink = sink_, c = std::move(filling_)]() mutable {
          std::optional<response> stop;
          try {
            stop = sink->write(c.data.get(), c.size);
          } catch (const std::exception& e) {  // (a pool thread must not end on a sink's failure)
            stop = failed_sink(e);
          }
          return std::make_pair(std::move(stop), std::move(c));
        },
        [](session& self, std::pair<std::optional<response>, chunk> done) {
          if (self.state_ != state::uploading) return;
          self.pool_busy_ = false;
          self.spare_ = std::move(done.second);
          if (done.first) return self.client_gone_ ? self.close() : self.upload_answer(std::move(*done.first));
          self.upload_step();
        });
    filling_ = take_chunk();
  }
  if (client_gone_) {  // what it sent is written; then the connection goes
    if (!pool_busy_ && filling_.size == 0) close();
    return;
  }
  if (body_left_ == 0) {
    if (filling_.size == 0 && !pool_busy_) {  // every byte is with the sink: its answer (on the pool: it may fsync)
      state_ = state::handling;
      deadline_ = steady::time_point::max();
      filling_ = chunk{};
      spare_ = chunk{};
      off_thread(
          [sink = std::move(sink_)] {
            try {
              return sink->finish();
            } catch (const std::exception& e) {
              return failed_sink(e);
            }
          },
          [id = request_](session& self, response res) {
            if (self.state_ != state::handling || self.request_ != id) return;
            self.upload_answer(std::move(res));
          });
    }
    return;
  }
  if (filling_.size == cap) {  // both chunks taken: the socket waits for the disk
    if (!socket_busy_) deadline_ = steady::time_point::max();
    return;
  }
  if (socket_busy_) return;
  if (buffer_.size() > 0) return upload_step();  // (bytes read with the head, not yet taken)
  socket_busy_ = true;
  deadline_ = steady::now() + limit(core_.opts.read_timeout_seconds);
  const size_t want = static_cast<size_t>(std::min<uint64_t>({body_left_, cap - filling_.size, core_.opts.transfer_io_bytes}));
  conn_.async_read_some(net::buffer(filling_.data.get() + filling_.size, want),
                        [self = shared_from_this()](error_code ec, size_t n) {
                          if (self->state_ != state::uploading) return;
                          self->socket_busy_ = false;
                          if (ec) {  // the client went: the bytes it sent are written first, for a resume
                            self->client_gone_ = true;
                            self->deadline_ = steady::time_point::max();
                            return self->upload_step();
                          }
                          self->filling_.size += n;
                          self->body_left_ -= n;
                          self->upload_step();
                        });
}

void session::upload_answer(response res) {
  const bool whole = body_left_ == 0 && filling_.size == 0 && !pool_busy_;
  sink_.reset();
  filling_ = chunk{};
  spare_ = chunk{};
  if (res.status == -1) res.status = 200;
  if (!whole) keep_alive_ = false;  // the rest of the body is still coming: answer, then close
  state_ = state::handling;
  if (core_.opts.counters) core_.opts.counters->count(transfer_route_, res.status);
  write(to_beast(std::move(res)), keep_alive_);
}

// The head goes as the route made it, with the source's size as Content-Length.
void session::start_download(beast_response& head, std::shared_ptr<body_source> source) {
  if (!charge(charged_ + 2 * core_.opts.transfer_chunk_bytes))
    return write(error_reply(503, "request_memory_exhausted", "the server holds too many transfer buffers; retry later"), false);
  secure_headers(head);
  keep_alive_ = keep_alive_ && !core_.stopping;
  source_ = std::move(source);
  body_left_ = source_->size();
  state_ = state::downloading;
  std::string text = raw_head(head);
  text += "Content-Length: " + std::to_string(body_left_) + "\r\n";
  if (!keep_alive_)
    text += "Connection: close\r\n";
  else if (http10_)
    text += "Connection: keep-alive\r\n";
  text += "\r\n";
  download_head_ = std::move(text);
  socket_busy_ = true;
  deadline_ = steady::now() + limit(core_.opts.read_timeout_seconds);
  net::async_write(conn_, net::buffer(download_head_), [self = shared_from_this()](error_code ec, size_t) {
    if (self->state_ != state::downloading) return;
    self->socket_busy_ = false;
    if (ec) return self->close();
    self->download_step();
  });
  download_step();  // the first chunk is read while the head goes
}

// A chunk goes in slices of transfer_io_bytes, each its own turn of the I/O thread: a poll
// waits behind one slice's copy into the socket, never behind a whole chunk's.
void session::write_slice() {
  deadline_ = steady::now() + limit(core_.opts.read_timeout_seconds);  // a client that stops reading
  const size_t n = std::min(core_.opts.transfer_io_bytes, writing_chunk_.size - written_);
  net::async_write(conn_, net::buffer(writing_chunk_.data.get() + written_, n),
                   [self = shared_from_this()](error_code ec, size_t done) {
                     if (self->state_ != state::downloading) return;
                     if (ec) return self->close();
                     self->written_ += done;
                     if (self->written_ < self->writing_chunk_.size) return self->write_slice();
                     self->socket_busy_ = false;
                     self->spare_ = std::move(self->writing_chunk_);
                     self->writing_chunk_ = chunk{};
                     self->download_step();
                   });
}

void session::download_step() {
  if (state_ != state::downloading) return;
  // Write what is ready.
  if (!socket_busy_ && ready_.data) {
    writing_chunk_ = std::move(ready_);
    ready_ = chunk{};
    written_ = 0;
    socket_busy_ = true;
    write_slice();
  }
  // Read the next chunk while that one goes.
  if (!pool_busy_ && !ready_.data && body_left_ > 0) {
    pool_busy_ = true;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(body_left_, core_.opts.transfer_chunk_bytes));
    off_thread(
        [source = source_, c = take_chunk(), want]() mutable {
          int64_t n = -1;
          try {
            n = source->read(c.data.get(), want);
          } catch (const std::exception& e) {
            spdlog::warn("http: a download stops: {}", e.what());
          }
          c.size = n > 0 ? static_cast<size_t>(n) : 0;
          return std::make_pair(n, std::move(c));
        },
        [](session& self, std::pair<int64_t, chunk> done) {
          if (self.state_ != state::downloading) return;
          self.pool_busy_ = false;
          // Nothing more may go (a damaged blob, a read error, a file cut short): the client
          // gets fewer bytes than Content-Length and a closed connection.
          if (done.first <= 0) return self.close();
          self.body_left_ -= std::min<uint64_t>(self.body_left_, static_cast<uint64_t>(done.first));
          self.ready_ = std::move(done.second);
          self.download_step();
        });
  }
  if (body_left_ == 0 && !pool_busy_ && !socket_busy_ && !ready_.data) {  // all sent: the next request
    source_.reset();
    ready_ = chunk{};
    spare_ = chunk{};
    download_head_.clear();
    download_head_.shrink_to_fit();
    state_ = state::writing;
    on_written(error_code{});
    return;
  }
  if (!socket_busy_) deadline_ = steady::time_point::max();  // waiting for the disk, not the client
}

void session::tick(steady::time_point now) {
  if (now < deadline_) return;
  if (state_ == state::streaming) {
    if (stream_writing_ || core_.stopping) return close();  // the client stopped reading
    static const event_stream::shared_text keep_alive = std::make_shared<const std::string>(":\n\n");
    return write_stream({keep_alive});  // a quiet stream's keep-alive
  }
  if (state_ == state::handling) {
    if (!async_route_) return;
    // The route (typically waiting for its events to be fsynced) missed the deadline: the
    // client hears so now, the connection goes on in order, and the late answer is dropped.
    auto res =
        error_reply(503, "not_durable_yet",
                    "the answer was not durable within " + std::to_string(core_.opts.async_reply_deadline_ms) + " ms; retry");
    res.set(bhttp::field::retry_after, "1");
    return write(std::move(res), keep_alive_);
  }
  close();  // idle past the keep-alive timeout, a request not whole in time, a client not reading
}

bool session::charge(size_t total) {
  if (total <= charged_) return true;
  const size_t more = total - charged_;
  if (!core_.reserve(more) && !(core_.make_room(more, id_) && core_.reserve(more))) return false;
  charged_ = total;
  return true;
}

void session::uncharge() {
  core_.release(charged_);
  charged_ = 0;
  received_ = 0;
  expected_ = 0;
}

void session::close() {
  if (state_ == state::closed) return;
  state_ = state::closed;
  // A transfer's sink or source goes once the chunk on the pool (if any) is back: an upload
  // keeps what was written, for a resume.
  sink_.reset();
  source_.reset();
  if (stream_) stream_->close();
  if (stream_pause_) stream_pause_->cancel();
  error_code ec;
  conn_.socket().close(ec);
  uncharge();
  parser_.reset();
  if (!authenticated_) leave_unauthenticated();
  if (counted_) --core_.counted;
  counted_ = false;
  core_.retire(id_);
}

}  // namespace baton::http
