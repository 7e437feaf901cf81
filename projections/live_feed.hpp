#pragma once
// The live event feed behind GET /events/stream (Server-Sent Events) and the web dashboard:
// fed from the log like every projection, it hands each event, as a one-line summary, to the
// subscribers allowed to see it. An admin sees every event; a user only the events of their
// own jobs (core::may_see_user_of, the same rule as the API's).
//
// Summaries carry no payload (seq, type, stream, time, actor, job id): a client that wants
// more reads it through the API, which checks the caller again. The last `backlog` events are
// kept, so a client that reconnects with Last-Event-ID gets what it missed; one that missed
// more is told to reload (event "reset").
//
// Events reach the subscribers at the runner's flush (a fifth of a second after a batch,
// runner.cpp), all that came meanwhile in one push per client: while the worker API is busy
// the log hands over a batch every millisecond or so, and a push per client per batch had
// cost the scheduler's threads a lock, a copy and a wake each. Clients that may see the same
// events share one text.
//
// Subscribers are plain sinks (a function that queues text and says whether the client is
// still there), so this knows nothing of HTTP.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/access/access.hpp"
#include "projections/projection.hpp"

namespace baton::projections {

class live_feed : public projection {
 public:
  // owners: job id -> the job's user, for the jobs already in the log; head: the log's last
  // sequence (the feed starts after it).
  live_feed(std::unordered_map<std::string, std::string> owners, uint64_t head, size_t backlog = 4096);

  // Queues text for one client; false once the client is gone (it is then dropped). A flush's
  // text is one object shared by every client it is for: a sink keeps the pointer, not a copy.
  using shared_text = std::shared_ptr<const std::string>;
  using sink = std::function<bool(const shared_text& text)>;
  // Whether the client is still there, asked without sending (none: only a failed push tells).
  using liveness = std::function<bool()>;
  // Starts a subscription: first an "hello" event naming the sequence the feed is at (every
  // later event reaches the sink), preceded, when after > 0, by the events after `after`
  // that who may see (or a "reset" event when they are no longer all kept).
  void subscribe(const core::principal& who, uint64_t after, sink s, liveness alive = {});
  // Clients following now (those known to be gone are not counted).
  size_t subscribers() const;

  // One event as an SSE message: "id: <seq>\ndata: {...}\n\n".
  static std::string message_of(const events::event_envelope& e, const std::string& job_id);

  // Events applied and not yet handed to the subscribers; flush() hands them over.
  bool pending() const override;
  void flush() override;

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  struct kept {
    uint64_t seq;
    std::string owner;  // the job's user; "" for events not of a job (admins only)
    bool of_job;
    std::string text;
  };
  struct subscriber {
    core::principal who;
    sink s;
    liveness alive;
    bool gone() const { return alive && !alive(); }
  };
  static bool sees_all(const core::principal& who) { return who.k != core::principal::kind::operator_ || who.admin; }
  static bool visible(const core::principal& who, const kept& k) {
    return k.of_job ? core::may_see_user_of(who, k.owner) : sees_all(who);
  }
  // Hands the events after sent_ to the subscribers (with mu_ held).
  void deliver();

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> owners_;  // found per event, never iterated
  std::deque<kept> recent_;
  uint64_t sent_ = 0;  // the last event handed to the subscribers (a new one's "hello" names it)
  const size_t backlog_;
  std::vector<subscriber> subscribers_;
};

}  // namespace baton::projections
