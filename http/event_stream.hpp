#pragma once
// An answer that does not end: the body of a Server-Sent Events response (GET /events/stream).
// A route answers with a response whose `stream` is set; the server writes the head, then
// whatever producers push, in order, until the client goes away or falls too far behind.
//
// Producers (any thread) push text; the connection takes it on the server's I/O thread. A
// text shared by many streams (the live feed's, one per flush for every client who sees all
// events) is queued by reference and written from where it is: appending it to each
// stream's own buffer had cost a copy per client into memory freshly faulted in (50
// clients: a fifth of the scheduler threads' time during a burst of polls).
// A client that does not read lets its queue grow to `max_queued_bytes`; the next push beyond
// that closes the stream (the client reconnects and, with Last-Event-ID, resumes), so a slow
// browser tab never holds the daemon's memory.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace baton::http {

class event_stream {
 public:
  explicit event_stream(size_t max_queued_bytes = size_t{1} << 20) : max_queued_(max_queued_bytes) {}

  // --- producers, any thread ---
  using shared_text = std::shared_ptr<const std::string>;
  // Queues text for the client. False when the stream is closed (now or before): forget it.
  bool push(shared_text text);
  bool push(const std::string& text) { return push(std::make_shared<const std::string>(text)); }
  bool closed() const;
  // Keeps `held` (a slot of a per-caller cap) until the stream closes, when it is dropped.
  void hold(std::shared_ptr<void> held);

  // --- the server's connection ---
  // Called once the head is written: `wake` (any thread, cheap) asks the connection to take().
  void attach(std::function<void()> wake);
  // Everything queued so far, in order (none: nothing).
  std::vector<shared_text> take();
  // The client went away or the server stops: producers see closed() and drop the stream.
  void close();

 private:
  mutable std::mutex mu_;
  const size_t max_queued_;
  std::vector<shared_text> queued_;
  size_t queued_bytes_ = 0;
  std::function<void()> wake_;
  bool wake_pending_ = false;  // one wake in flight at a time: a burst of pushes costs one post
  bool closed_ = false;
  std::shared_ptr<void> held_;
};

}  // namespace baton::http
