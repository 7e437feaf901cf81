#pragma once
// A read model fed from the event log in global-sequence order (see runner.hpp for the actor
// that feeds it). The base class owns what every projection shares: its name, the last
// sequence it applied (published for readers on other threads) and the rule that events
// arrive without gaps or repeats. Subclasses implement apply() and their own reads.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "events/envelope.hpp"

namespace baton::projections {

class projection {
 public:
  explicit projection(std::string name) : name_(std::move(name)) {}
  virtual ~projection() = default;
  projection(const projection&) = delete;
  projection& operator=(const projection&) = delete;

  const std::string& name() const { return name_; }

  // --- any thread ---
  // The last sequence applied (0 = none yet).
  uint64_t applied_seq() const;
  // Waits until applied_seq() >= seq. False if the deadline passed first or the projection
  // has failed (it will then never advance).
  bool wait_applied(uint64_t seq, std::chrono::steady_clock::time_point deadline) const;
  // Why the projection stopped advancing, if it did.
  std::optional<std::string> failure() const;
  // Events it could not apply as recorded and went past (left out, or, in the SQL views,
  // written with U+FFFD for text that is not UTF-8): no event may stop a projection for good,
  // nor pass unseen. GET /healthz and GET /metrics report them.
  struct skipped_events {
    uint64_t count = 0;
    uint64_t last_seq = 0;
    std::string last_why;
  };
  skipped_events skipped() const;

  // --- the projection's feeder only (one thread at a time) ---
  // Checks that the batch continues exactly where the last one ended (seq = last + 1 for
  // each event), applies it and publishes its last sequence. On a gap or repeat nothing is
  // applied, the projection fails, and this returns false.
  bool apply_batch(const std::vector<events::event_envelope>& batch);
  // Marks the projection failed (e.g. its log went away): waiters stop waiting.
  void fail(const std::string& why);
  // A projection that writes several batches at once (one transaction) holds what it applied
  // until flush(); the runner calls it shortly after a batch when pending() says so, and batond
  // at a clean stop. Thread-safe with respect to apply.
  virtual bool pending() const { return false; }
  virtual void flush() {}
  // The last sequence whose effects the projection's readers can see (a view on disk or in a
  // database may lag the events it has applied while its store is away).
  virtual uint64_t stored_seq() const { return applied_seq(); }
  // Why stored_seq() is not following the log while the projection goes on (a store it
  // cannot write, retried by itself), if so: /healthz says it rather than only a growing lag.
  virtual std::optional<std::string> stalled() const { return std::nullopt; }

 protected:
  // Applies events in order; the base class has checked their sequences. Subclasses guard
  // their own state against concurrent readers.
  virtual void apply(const std::vector<events::event_envelope>& batch) = 0;
  // A persistent projection that resumes from a stored offset sets it before it is run.
  void restore_applied(uint64_t seq);
  // Event `seq` could not be applied as recorded: counted (once per sequence, so a view that
  // writes an event again after a failed write does not count it twice) and logged.
  void skip(uint64_t seq, const std::string& why);

 private:
  const std::string name_;
  mutable std::mutex m_;
  mutable std::condition_variable advanced_;
  uint64_t applied_ = 0;
  std::optional<std::string> failure_;
  skipped_events skipped_;
};

}  // namespace baton::projections
