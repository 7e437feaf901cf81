#pragma once
// batond's own HTTP request and response, independent of the server that reads the bytes
// (Boost.Beast) and of any client library. Everything a route sees is owned here: the path
// parameters are copies, never iterators into a buffer that may move.
#include <map>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::http {

class event_stream;  // http/event_stream.hpp
class body_source;   // http/body_transfer.hpp

struct request {
  std::string method;
  std::string target;                                        // as sent: path and query
  std::string path;                                          // percent-decoded path
  std::multimap<std::string, std::string> params;            // decoded query parameters
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent
  std::string body;
  std::vector<std::string> path_params;  // the route pattern's groups, filled by the router
  std::string remote_addr;

  // Header names compare case-insensitively; the first value, or "" when absent.
  std::string get_header_value(std::string_view name) const;
  bool has_param(const std::string& name) const { return params.count(name) > 0; }
  // The i-th value of a query parameter, "" when there is none.
  std::string get_param_value(const std::string& name, size_t i = 0) const;
  size_t get_param_value_count(const std::string& name) const { return params.count(name); }
};

struct response {
  int status = -1;  // -1: not answered yet (the router makes it 200)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string content_type;
  // Set by a route that answers with a stream (Server-Sent Events): the server writes the
  // head, then what is pushed to it, and the connection ends with the stream.
  std::shared_ptr<event_stream> stream;
  // Set by a route whose body is read from disk chunk by chunk (a blob download): the server
  // sends Content-Length = source->size() and then what the source gives, never all at once.
  std::shared_ptr<body_source> source;
  // Set by a route answered from a typed reply delivered on another thread (the scheduler's):
  // the server calls it on the connection's I/O thread, which fills the status, headers and
  // body there, once.
  std::function<void(response&)> render;

  void set_header(const std::string& name, const std::string& value);
  void set_content(std::string b, std::string type) {
    body = std::move(b);
    content_type = std::move(type);
  }
};

// Splits a request target into its decoded path and query parameters ('+' is a space in
// the query only). Invalid percent escapes are kept as they are.
void parse_target(const std::string& target, std::string& path, std::multimap<std::string, std::string>& params);

bool iequals(std::string_view a, std::string_view b);

// The client that per-address limits count by: an IPv4 address as it is (also when it comes
// IPv4-mapped), an IPv6 address by its /64, which one host usually holds whole (counted one
// address at a time, a single host could pass for millions of clients). Anything else as is.
std::string client_group(const std::string& address);

}  // namespace baton::http
