#include "http/beast_server.hpp"
#include "actors/thread_name.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "http/beast_session.hpp"

namespace baton::http {

namespace net = boost::asio;
using boost::system::error_code;
using net::ip::tcp;

struct beast_server::impl {
  impl(beast_server_options o, const router& r) : core(std::move(o), r) {
    auto quarter = std::chrono::milliseconds(core.opts.async_reply_deadline_ms / 4);
    tick_every = std::clamp(quarter, std::chrono::milliseconds(10), std::chrono::milliseconds(250));
  }

  server_core core;
  tcp::acceptor acceptor{core.ioc};
  net::steady_timer ticker{core.ioc};
  net::steady_timer accept_retry{core.ioc};
  std::chrono::milliseconds tick_every;
  std::thread io_thread;
  uint64_t next_id = 0;
  bool draining = false;
  steady::time_point drain_deadline;

  void accept() {
    acceptor.async_accept([this](error_code ec, tcp::socket s) { on_accept(ec, std::move(s)); });
  }

  void on_accept(error_code ec, tcp::socket socket) {
    if (core.stopping || !acceptor.is_open()) return;
    if (ec == net::error::no_descriptors || ec == net::error::no_buffer_space || ec == net::error::no_memory) {
      // Out of descriptors: wait a moment instead of spinning on the listening socket.
      spdlog::warn("http: accept failed with {} connections open ({}); pausing 100 ms", core.sessions.size(), ec.message());
      accept_retry.expires_after(std::chrono::milliseconds(100));
      accept_retry.async_wait([this](error_code e) {
        if (!e && !core.stopping) accept();
      });
      return;
    }
    if (!ec) admit(std::move(socket));
    accept();  // also after a connection that died in the backlog
  }

  // A connection that does not fit takes the place of the oldest unauthenticated one, from its
  // own address first: strangers' idle connections never keep out a caller with a credential.
  void admit(tcp::socket socket) {
    error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    auto conn = core.tls ? connection_stream(std::move(socket), *core.tls) : connection_stream(std::move(socket));
    auto s = std::make_shared<session>(core, std::move(conn), ++next_id);
    core.sessions.emplace(next_id, s);
    if (!s->authenticated()) {
      auto mine = core.unauthenticated_from.find(s->group());
      const size_t held = mine == core.unauthenticated_from.end() ? 0 : mine->second.size();
      if (held >= static_cast<size_t>(core.opts.max_unauthenticated_per_address) && !core.evict_unauthenticated(&s->group()))
        return s->refuse(429, "too_many_unauthenticated_connections",
                         "this address already has " + std::to_string(held) +
                             " connections without an authenticated request (http.max_unauthenticated_connections_per_address); "
                             "retry later");
    }
    if (core.counted >= static_cast<size_t>(core.opts.max_connections) && !core.evict_unauthenticated(nullptr))
      return s->refuse(503, "too_many_connections", "the server is at its connection limit; retry later");
    s->count();
    s->start();
  }

  // Every tick: deadlines of every connection (one pass), and the end of a drain.
  void tick() {
    ticker.expires_after(draining ? std::min(tick_every, std::chrono::milliseconds(20)) : tick_every);
    ticker.async_wait([this](error_code ec) {
      if (ec) return;
      auto now = steady::now();
      std::vector<std::shared_ptr<session>> due;  // acted on after the pass: closing edits the map
      for (auto& [id, s] : core.sessions)
        if (s->deadline() <= now) due.push_back(s);
      for (auto& s : due) s->tick(now);
      if (draining && drained(now)) return finish();
      tick();
    });
  }

  void begin_drain() {
    core.stopping = true;
    draining = true;
    drain_deadline = steady::now() + std::chrono::seconds(core.opts.stop_grace_seconds);
    error_code ec;
    acceptor.close(ec);
    accept_retry.cancel();
    if (drained(steady::now())) return finish();
    tick();  // re-armed at the drain's shorter interval (this cancels the wait pending)
  }

  // Closes every connection with nothing in flight; true once none is left in flight (or
  // the grace period is over).
  bool drained(steady::time_point now) {
    std::vector<std::shared_ptr<session>> quiet;
    bool pending = false;
    for (auto& [id, s] : core.sessions) {
      if (s->busy())
        pending = true;
      else
        quiet.push_back(s);
    }
    for (auto& s : quiet) s->close();
    return !pending || now >= drain_deadline;
  }

  void finish() {
    std::vector<std::shared_ptr<session>> all;
    for (auto& [id, s] : core.sessions) all.push_back(s);
    for (auto& s : all) s->close();
    ticker.cancel();
    core.ioc.stop();
  }

  void run() {
    for (;;) {
      try {
        core.ioc.run();
        return;
      } catch (const std::exception& e) {  // one connection's failure must not end the server
        spdlog::error("http: {}", e.what());
      }
    }
  }
};

namespace {

// TLS 1.2's suites with forward secrecy (ECDHE) and an AEAD cipher; OpenSSL's defaults also
// offered CBC with SHA-1 MACs. TLS 1.3's suites are all AEAD and keep OpenSSL's list.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// A private key others on the host can read is no longer private (a login node has many
// users); refused as ssh refuses such a key, rather than served with.
void check_key_mode(const std::string& key_file) {
  struct stat st {};
  if (::stat(key_file.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return;  // (a missing file: the load says so)
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  throw std::runtime_error("tls.key_file: " + key_file + " is open to its group or others (mode " + mode +
                           "); make it readable by batond's account only (chmod 600 " + key_file + ")");
}

// The server's TLS settings: the versions and suites above, the certificate chain and its key,
// which must match and be private.
net::ssl::context tls_context(const std::string& cert_file, const std::string& key_file) {
  net::ssl::context ctx(net::ssl::context::tls_server);
  ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 | net::ssl::context::no_sslv3 |
                  net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use |
                  SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  if (SSL_CTX_set_cipher_list(ctx.native_handle(), tls12_ciphers) != 1)
    throw std::runtime_error("TLS: this OpenSSL offers none of batond's TLS 1.2 cipher suites");
  error_code ec;
  ctx.use_certificate_chain_file(cert_file, ec);
  if (ec) throw std::runtime_error("tls.cert_file: cannot load " + cert_file + " (" + ec.message() + ")");
  check_key_mode(key_file);
  ctx.use_private_key_file(key_file, net::ssl::context::pem, ec);
  // OpenSSL checks the pair as it loads the key ("key values mismatch"); checked again after,
  // so a mismatch gets the same clear line whichever step notices it.
  if ((ec && ec.message().find("mismatch") != std::string::npos) || (!ec && SSL_CTX_check_private_key(ctx.native_handle()) != 1))
    throw std::runtime_error("tls.key_file: " + key_file + " is not the key of the certificate in " + cert_file);
  if (ec) throw std::runtime_error("tls.key_file: cannot load " + key_file + " (" + ec.message() + ")");
  return ctx;
}

// A pool of max(1, wanted) threads, each named `name` (asio's pool offers no start hook): one
// task per thread, each holding its thread until all have started, so no thread takes two.
std::unique_ptr<net::thread_pool> named_pool(int wanted, const char* name, int nice = 0) {
  const size_t threads = static_cast<size_t>(std::max(1, wanted));
  auto pool = std::make_unique<net::thread_pool>(threads);
  struct gate {
    std::mutex mu;
    std::condition_variable cv;
    size_t started = 0;
  };
  auto g = std::make_shared<gate>();
  for (size_t i = 0; i < threads; ++i)
    net::post(*pool, [g, threads, name, nice] {
      actors::name_this_thread(name);
      if (nice != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);  // (this thread only, on Linux)
      std::unique_lock<std::mutex> lock(g->mu);
      if (++g->started == threads) g->cv.notify_all();
      g->cv.wait(lock, [&] { return g->started == threads; });
    });
  std::unique_lock<std::mutex> lock(g->mu);
  g->cv.wait(lock, [&] { return g->started == threads; });
  return pool;
}

}  // namespace

beast_server::beast_server(beast_server_options opts) : opts_(std::move(opts)) {}

beast_server::~beast_server() { stop(); }

int beast_server::start() {
  // A login node may carry thousands of pilots' keep-alive connections.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  auto p = std::make_unique<impl>(opts_, router_);
  if (!opts_.tls_cert_file.empty()) p->core.tls.emplace(tls_context(opts_.tls_cert_file, opts_.tls_key_file));
  auto where = opts_.host + ":" + std::to_string(opts_.port);
  error_code ec;
  tcp::resolver resolver(p->core.ioc);
  auto found = resolver.resolve(opts_.host, std::to_string(opts_.port), tcp::resolver::passive, ec);
  if (ec || found.empty()) throw std::runtime_error("cannot listen on " + where + " (cannot resolve the host)");
  std::string why = "address in use or not local";
  for (const auto& entry : found) {
    error_code e;
    p->acceptor.open(entry.endpoint().protocol(), e);
    if (e) continue;
    // SO_REUSEADDR for a quick restart; not SO_REUSEPORT, which would let a second daemon
    // bind the same port and silently take half the connections.
    p->acceptor.set_option(tcp::acceptor::reuse_address(true), e);
    p->acceptor.bind(entry.endpoint(), e);
    if (!e) p->acceptor.listen(1024, e);
    if (!e) break;
    why = e.message();
    p->acceptor.close(e);
  }
  if (!p->acceptor.is_open()) throw std::runtime_error("cannot listen on " + where + " (" + why + ")");
  int port = p->acceptor.local_endpoint(ec).port();
  p->core.pool = named_pool(opts_.handler_threads, "http_pool");
  p->core.transfer_pool = named_pool(opts_.transfer_threads, "http_transfer", opts_.transfer_nice);
  {
    std::lock_guard<std::mutex> g(p->core.gate->mu);
    p->core.gate->ioc = &p->core.ioc;
  }
  p->accept();
  p->tick();
  // Named before start() returns: whoever learns the port may already look at the threads.
  std::promise<void> named;
  auto named_now = named.get_future();
  p->io_thread = std::thread([raw = p.get(), &named] {
    actors::name_this_thread("http_io");
    named.set_value();
    raw->run();
  });
  named_now.wait();
  impl_ = std::move(p);
  return port;
}

void beast_server::stop() {
  if (!impl_) return;
  net::post(impl_->core.ioc, [raw = impl_.get()] { raw->begin_drain(); });
  impl_->io_thread.join();  // after up to stop_grace_seconds of answering requests in flight
  {
    std::lock_guard<std::mutex> g(impl_->core.gate->mu);
    impl_->core.gate->ioc = nullptr;  // answers from now on are dropped
  }
  impl_->core.pool->stop();  // blocking handlers still running finish; queued ones are dropped
  impl_->core.transfer_pool->stop();
  impl_->core.pool->join();
  impl_->core.transfer_pool->join();
  impl_->core.sessions.clear();
  impl_.reset();
}

}  // namespace baton::http
