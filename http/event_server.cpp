#include "http/event_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "http/http_wire.hpp"
#include "http/json_reply.hpp"
#include "http/task_pool.hpp"

namespace baton::http {
namespace {

using steady = std::chrono::steady_clock;

// A finished response on its way back to the loop. (fd, id) names the connection: the id
// tells a reused fd from the connection that asked.
struct completion {
  int fd;
  uint64_t id;
  std::string bytes;
  bool close;
};

// Where responders from any thread leave finished responses; shared with every responder so
// a reply arriving after stop() finds a closed queue, not a destroyed server.
struct completion_queue {
  std::mutex mu;
  std::vector<completion> items;
  int wake_fd = -1;
  bool open = true;

  void push(completion c) {
    std::lock_guard<std::mutex> g(mu);
    if (!open) return;
    bool was_empty = items.empty();
    items.push_back(std::move(c));
    if (was_empty) {  // the loop drains everything, so one wake-up per batch
      uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
    }
  }
};

struct connection {
  int fd = -1;
  uint64_t id = 0;
  std::string in;
  std::string out;
  size_t out_off = 0;
  bool busy = false;         // a request is being handled; later ones wait in `in`
  bool close_after = false;  // close once `out` is written
  bool peer_closed = false;  // read() returned 0
  bool want_write = false;   // EPOLLOUT registered
  bool sent_continue = false;
  int served = 0;
  steady::time_point last_active;
  std::string remote_addr;
  int remote_port = -1;
};

}  // namespace

struct event_server::impl {
  event_server_options opts;
  const router& routes;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  bool accept_paused = false;
  std::atomic<bool> stopping{false};
  std::thread loop_thread;
  std::unique_ptr<task_pool> pool;
  std::shared_ptr<completion_queue> done = std::make_shared<completion_queue>();
  std::vector<std::unique_ptr<connection>> conns;  // by fd
  size_t open_conns = 0;
  uint64_t next_id = 0;
  steady::time_point last_sweep = steady::now();

  impl(event_server_options o, const router& r) : opts(std::move(o)), routes(r) {}

  // Epoll data names fd and connection id, so an event queued for a connection closed earlier
  // in the same batch never reaches a new connection on the reused fd.
  static uint64_t tag(int fd, uint64_t id) { return (id << 24) | static_cast<uint64_t>(fd); }

  void set_interest(connection& c) {
    epoll_event ev{};
    ev.events = (c.peer_closed ? 0u : static_cast<uint32_t>(EPOLLIN)) | (c.want_write ? static_cast<uint32_t>(EPOLLOUT) : 0u);
    ev.data.u64 = tag(c.fd, c.id);
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void close_conn(connection& c) {
    int fd = c.fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    conns[fd].reset();
    --open_conns;
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          // Out of descriptors: stop listening for a moment instead of spinning on the event.
          spdlog::warn("http: out of file descriptors with {} connections open; pausing accept", open_conns);
          epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          accept_paused = true;
        }
        return;  // EAGAIN, or a connection that died in the backlog
      }
      if (open_conns >= static_cast<size_t>(opts.max_connections)) {
        ::close(fd);
        continue;
      }
      int yes = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      if (static_cast<size_t>(fd) >= conns.size()) conns.resize(static_cast<size_t>(fd) * 2 + 16);
      auto c = std::make_unique<connection>();
      c->fd = fd;
      c->id = ++next_id;
      c->last_active = steady::now();
      char host[INET6_ADDRSTRLEN] = "";
      if (addr.ss_family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&addr);
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        c->remote_port = ntohs(a->sin_port);
      } else if (addr.ss_family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        c->remote_port = ntohs(a->sin6_port);
      }
      c->remote_addr = host;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = tag(fd, c->id);
      if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ::close(fd);
        continue;
      }
      conns[fd] = std::move(c);
      ++open_conns;
    }
  }

  // Writes what it can; false if the connection was closed.
  bool flush(connection& c) {
    while (c.out_off < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!c.want_write) {
          c.want_write = true;
          set_interest(c);
        }
        return true;
      }
      close_conn(c);
      return false;
    }
    c.out.clear();
    c.out_off = 0;
    if (c.want_write) {
      c.want_write = false;
      set_interest(c);
    }
    if (c.close_after || (c.peer_closed && !c.busy && c.in.empty())) {
      close_conn(c);
      return false;
    }
    return true;
  }

  // Answers a request that never reached a handler (malformed) and closes after it.
  void reject(connection& c, int status, const std::string& message) {
    response res;
    res.status = status;
    std::string code = status == 413 ? "body_too_large" : status == 431 ? "headers_too_large" : status == 411 ? "length_required"
                       : status == 417 ? "expectation_failed" : "bad_request";
    reply_json(res, status, {{"detail", message}, {"error", code}, {"message", message}});
    c.out += wire::serialize(res, false);
    c.close_after = true;
    c.in.clear();
    flush(c);
  }

  respond_fn responder(const connection& c, bool keep_alive) {
    return [q = done, fd = c.fd, id = c.id, keep_alive](response res) {
      q->push(completion{fd, id, wire::serialize(res, keep_alive), !keep_alive});
    };
  }

  // Starts the next request waiting in the connection's buffer, if it has fully arrived.
  void next_request(connection& c) {
    if (c.busy || c.close_after || c.in.empty()) return;
    auto head = wire::parse_head(c.in, opts.max_header_bytes, opts.max_body_bytes);
    if (head.state == wire::head_state::incomplete) return;
    if (head.state == wire::head_state::error) return reject(c, head.error_status, head.error_message);
    if (c.in.size() < head.head_bytes + head.body_bytes) {
      if (head.expect_continue && !c.sent_continue) {
        c.sent_continue = true;
        c.out += "HTTP/1.1 100 Continue\r\n\r\n";
        flush(c);
      }
      return;
    }
    auto& req = head.req;
    req.body = c.in.substr(head.head_bytes, head.body_bytes);
    c.in.erase(0, head.head_bytes + head.body_bytes);
    c.sent_continue = false;
    req.remote_addr = c.remote_addr;
    c.busy = true;
    ++c.served;
    bool keep_alive = head.keep_alive && c.served < opts.max_requests_per_connection && !stopping.load();
    auto respond = responder(c, keep_alive);
    try {
      const router::route* r = routes.match(req);
      if (!r) {
        respond(routes.not_found(req));
      } else if (r->async) {
        routes.run_async(*r, req, respond);
      } else {
        pool->post([this, r, req = std::move(req), respond]() mutable {
          response res;
          routes.run_blocking(*r, req, res);
          respond(std::move(res));
        });
      }
    } catch (const std::exception& e) {  // a bug in routing must cost one request, not the daemon
      spdlog::error("http: {} {}: {}", head.req.method, head.req.target, e.what());
      response res;
      reply_error(res, 500, "internal_error", "the server failed to route this request");
      respond(std::move(res));
    }
  }

  void on_readable(connection& c) {
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        c.last_active = steady::now();
        if (static_cast<size_t>(n) < sizeof buf) break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0) return close_conn(c);
      // n == 0: the client finished sending. Answer what it asked, then close.
      if (!c.busy && c.out.empty() && c.in.empty()) return close_conn(c);
      c.peer_closed = true;
      set_interest(c);
      break;
    }
    // A client piling up requests while one is in flight, beyond any sane pipeline.
    if (c.in.size() > opts.max_header_bytes + opts.max_body_bytes) return close_conn(c);
    next_request_or_close(c);
  }

  // Starts the next buffered request; once the client has finished sending and nothing is
  // left to answer (at most an incomplete request that can never complete), closes.
  void next_request_or_close(connection& c) {
    int fd = c.fd;
    next_request(c);  // may close c (a malformed request)
    if (conns[fd] && c.peer_closed && !c.busy && c.out.empty()) close_conn(c);
  }

  void drain_completions() {
    std::vector<completion> items;
    {
      std::lock_guard<std::mutex> g(done->mu);
      items.swap(done->items);
    }
    for (auto& item : items) {
      if (item.fd < 0 || static_cast<size_t>(item.fd) >= conns.size()) continue;
      connection* c = conns[item.fd].get();
      if (!c || c->id != item.id) continue;  // closed while its request was in flight
      c->busy = false;
      c->last_active = steady::now();
      c->out += item.bytes;
      if (item.close) c->close_after = true;
      if (flush(*c)) next_request_or_close(*c);
    }
  }

  // Closes connections idle past the keep-alive timeout and ones stuck mid-request or
  // mid-reply past the read timeout; resumes accepting after a descriptor shortage.
  void sweep() {
    auto now = steady::now();
    if (now - last_sweep < std::chrono::seconds(1)) return;
    last_sweep = now;
    auto idle = std::chrono::seconds(opts.idle_timeout_seconds), stalled = std::chrono::seconds(opts.read_timeout_seconds);
    for (auto& slot : conns) {
      if (!slot || slot->busy) continue;
      auto quiet = now - slot->last_active;
      bool mid_transfer = !slot->in.empty() || !slot->out.empty();
      if ((mid_transfer && quiet > stalled) || (!mid_transfer && quiet > idle)) close_conn(*slot);
    }
    if (accept_paused) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = tag(listen_fd, 0);
      if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) == 0) accept_paused = false;
    }
  }

  void run() {
    std::vector<epoll_event> events(256);
    bool draining = false;
    steady::time_point drain_deadline;
    for (;;) {
      if (stopping.load() && !draining) {
        // Stop accepting; let requests in flight get their answers (bounded), then close.
        draining = true;
        drain_deadline = steady::now() + std::chrono::seconds(5);
        if (!accept_paused) epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
        accept_paused = false;
      }
      if (draining) {
        bool pending = false;
        for (auto& slot : conns) {
          if (!slot) continue;
          if (slot->busy || !slot->out.empty()) pending = true;
          else close_conn(*slot);
        }
        if (!pending || steady::now() > drain_deadline) break;
      }
      int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), draining ? 20 : 1000);
      for (int i = 0; i < n; ++i) {
        uint64_t data = events[i].data.u64;
        int fd = static_cast<int>(data & 0xffffff);
        uint64_t id = data >> 24;
        if (id == 0) {
          if (fd == listen_fd && !draining) accept_all();
          if (fd == wake_fd) {
            uint64_t count;
            [[maybe_unused]] auto r = ::read(wake_fd, &count, sizeof count);
          }
          continue;
        }
        if (static_cast<size_t>(fd) >= conns.size() || !conns[fd] || conns[fd]->id != id) continue;
        connection& c = *conns[fd];
        if (events[i].events & (EPOLLERR | EPOLLHUP)) {
          close_conn(c);
          continue;
        }
        if ((events[i].events & EPOLLOUT) && !flush(c)) continue;
        if (events[i].events & EPOLLIN) on_readable(c);
      }
      drain_completions();
      if (!draining) sweep();
    }
  }
};

event_server::event_server(event_server_options opts) : opts_(std::move(opts)) {}

event_server::~event_server() { stop(); }

int event_server::start() {
  // A login node may carry thousands of pilots' keep-alive connections.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  auto where = opts_.host + ":" + std::to_string(opts_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(opts_.host.c_str(), std::to_string(opts_.port).c_str(), &hints, &found) != 0 || !found)
    throw std::runtime_error("cannot listen on " + where + " (cannot resolve the host)");
  int fd = -1;
  std::string why = "address in use or not local";
  for (auto* a = found; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR for a quick restart; not SO_REUSEPORT, which would let a second daemon
    // bind the same port and silently take half the connections.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) break;
    why = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) throw std::runtime_error("cannot listen on " + where + " (" + why + ")");
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

  impl_ = std::make_unique<impl>(opts_, router_);
  impl_->listen_fd = fd;
  impl_->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl_->done->wake_fd = impl_->wake_fd;
  for (int watched : {fd, impl_->wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(watched);  // id 0
    epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, watched, &ev);
  }
  impl_->pool = std::make_unique<task_pool>(opts_.handler_threads);
  impl_->loop_thread = std::thread([p = impl_.get()] { p->run(); });
  return port;
}

void event_server::stop() {
  if (!impl_) return;
  impl_->stopping = true;
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(impl_->wake_fd, &one, sizeof one);
  impl_->loop_thread.join();  // after up to 5 s of answering requests already in flight
  ::close(impl_->listen_fd);
  impl_->pool->stop();  // running handlers finish; their replies find the queue closed below
  {
    std::lock_guard<std::mutex> g(impl_->done->mu);
    impl_->done->open = false;
    impl_->done->items.clear();
  }
  for (auto& c : impl_->conns)
    if (c) ::close(c->fd);
  ::close(impl_->wake_fd);
  ::close(impl_->epoll_fd);
  impl_.reset();
}

}  // namespace baton::http
