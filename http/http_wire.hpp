#pragma once
// HTTP/1.1 on the wire for event_server: parse a request head from a connection's buffer,
// serialise a response. Pure functions over strings, no sockets.
#include "http/message.hpp"

#include <string>
#include <string_view>

namespace baton::http::wire {

enum class head_state { incomplete, complete, error };

struct request_head {
  head_state state = head_state::incomplete;
  int error_status = 0;         // for error: 400, 411, 413, 417, 431 (bad input is always a 4xx)
  std::string error_message;    // names what was wrong
  size_t head_bytes = 0;        // request line + headers + blank line
  size_t body_bytes = 0;        // from Content-Length
  bool keep_alive = true;       // HTTP/1.1 default; Connection: close / HTTP/1.0 without keep-alive
  bool expect_continue = false; // Expect: 100-continue
  request req;         // method, target, version, path, params, headers (no body yet)
};

// Parses the head at the start of buf once it has fully arrived.
request_head parse_head(std::string_view buf, size_t max_header_bytes, size_t max_body_bytes);

// The full response bytes: status line, headers (Content-Length computed here), body.
std::string serialize(const response& res, bool keep_alive);

// Reason phrase for a status code ("Unknown" for codes it does not know).
const char* reason(int status);

}  // namespace baton::http::wire
