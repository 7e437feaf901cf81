#pragma once
// Bodies too large to hold in memory (blobs, docs/storage.md): the server moves them chunk by
// chunk between the connection and a sink or source, and never buffers one whole.
//
// - An upload route (router::upload) is opened on the request's head alone, before any body
//   byte is read: it refuses (a response), or answers with a body_sink that takes the body.
// - A download is an ordinary route whose response carries a body_source (response::source).
//
// The server calls a sink's or source's methods on its handler pool, one call at a time per
// transfer and in order (disk I/O never runs on the I/O thread); while one chunk is on the
// pool, the I/O thread already reads (or writes) the next one from (or to) the socket.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "http/message.hpp"

namespace baton::http {

class body_sink {
 public:
  virtual ~body_sink() = default;
  // The next n bytes of the body. Empty: go on; a response: answer it now (e.g. 507), the
  // rest of the body is not read and the connection closes after the answer.
  virtual std::optional<response> write(const char* data, size_t n) = 0;
  // Every byte of Content-Length arrived and was written: the answer.
  virtual response finish() = 0;
  // Destroyed without finish(): the connection dropped or timed out midway (what was written
  // stays written).
};

// What an upload route answers with at its head: a refusal, or the sink for its body.
struct upload_start {
  std::optional<response> refusal;
  std::shared_ptr<body_sink> sink;
};

class body_source {
 public:
  virtual ~body_source() = default;
  // Content-Length of the answer.
  virtual uint64_t size() const = 0;
  // The next bytes into buf (at most max); 0 only once size() bytes were given. Throws (or
  // returns -1) when the rest must not be sent: the connection closes, the client gets fewer
  // bytes than Content-Length.
  virtual int64_t read(char* buf, size_t max) = 0;
};

}  // namespace baton::http
