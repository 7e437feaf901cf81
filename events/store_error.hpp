#pragma once
// The log's one exception, apart from the store (event_store.hpp) so that a reader handed a
// narrower view of the log (a projection's, events/log_reader.hpp) can catch it.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace baton::events {

// I/O failure or corruption. seq names the event concerned (0 when none is).
class store_error : public std::runtime_error {
 public:
  store_error(const std::string& what, uint64_t seq = 0) : std::runtime_error(what), seq_(seq) {}
  uint64_t seq() const { return seq_; }

 private:
  uint64_t seq_;
};

}  // namespace baton::events
