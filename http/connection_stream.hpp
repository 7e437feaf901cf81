#pragma once
// A client connection's byte stream: plain TCP, or TLS over it when batond serves HTTPS.
// One type for both, so the session (http/beast_session) is written once: every read and
// write goes through async_read_some / async_write_some, which Beast's and Asio's composed
// operations (http::async_write, asio::async_write) accept as an AsyncStream.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <optional>
#include <utility>

namespace baton::http {

class connection_stream {
 public:
  using tcp = boost::asio::ip::tcp;
  using executor_type = tcp::socket::executor_type;

  explicit connection_stream(tcp::socket s) : plain_(std::move(s)) {}
  // TLS: the handshake is still to be done (handshake()).
  connection_stream(tcp::socket s, boost::asio::ssl::context& tls) : tls_(std::in_place, std::move(s), tls) {}

  bool is_tls() const { return tls_.has_value(); }
  executor_type get_executor() { return socket().get_executor(); }
  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }

  // The server side of the TLS handshake; handler(error_code). Only for a TLS stream.
  template <class Handler>
  void handshake(Handler&& h) {
    tls_->async_handshake(boost::asio::ssl::stream_base::server, std::forward<Handler>(h));
  }

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& b, Handler&& h) {
    if (tls_)
      tls_->async_read_some(b, std::forward<Handler>(h));
    else
      plain_->async_read_some(b, std::forward<Handler>(h));
  }

  template <class Buffers, class Handler>
  void async_write_some(const Buffers& b, Handler&& h) {
    if (tls_)
      tls_->async_write_some(b, std::forward<Handler>(h));
    else
      plain_->async_write_some(b, std::forward<Handler>(h));
  }

 private:
  std::optional<tcp::socket> plain_;
  std::optional<boost::asio::ssl::stream<tcp::socket>> tls_;
};

}  // namespace baton::http
