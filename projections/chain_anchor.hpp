#pragma once
// Anchors of the hash chain: at start, at a clean stop and every anchor_interval in between,
// batond appends the chain head (the last durable event's sequence and hash) to
// <data_dir>/anchors.jsonl and to its own log. Whoever
// later rewrites the log, even recomputing every hash after the change, cannot make an
// earlier anchor match again: `baton-replay verify` and `verify-export` check them.
// Fed like any projection, from durable events only, so an anchor never names an event a
// crash could still take back.
#include <functional>
#include <mutex>
#include <string>

#include "projections/projection.hpp"

namespace baton::projections {

class chain_anchor : public projection {
 public:
  static constexpr const char* projection_name = "chain_anchor";

  // interval_us: at least this long between anchors, counted from construction; clock: µs
  // since the epoch.
  chain_anchor(std::string path, int64_t interval_us, std::function<int64_t()> clock);
  // Appends one anchor now (the daemon anchors the head at start and at a clean stop). Safe
  // beside the projection's own anchors.
  void anchor(uint64_t seq, const std::string& hash, int64_t at);
  // Where to resume: the log's end at start (the anchors before it are already in the file).
  void resume_from(uint64_t seq) { restore_applied(seq); }

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  std::string path_;
  int64_t interval_us_;
  std::function<int64_t()> clock_;
  std::mutex m_;
  int64_t last_written_ = 0;
  uint64_t last_seq_ = 0;  // the last anchored
};

}  // namespace baton::projections
