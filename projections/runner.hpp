#pragma once
// Runs a projection as a CAF actor subscribed to the log writer: the writer sends it every
// event after the projection's applied_seq() in sequence order, first a catch-up read from
// the store, then each batch as it becomes durable. The actor hands them to
// projection::apply_batch(), which refuses a gap or a repeat.
//
// "Caught up" means: every event that was in the log when the subscription was made has
// been applied. A daemon waits for it (with a deadline) before it serves reads, so a read
// after a restart never sees an older state than the log's.
#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "actors/log_writer.hpp"
#include "projections/hold_while_busy.hpp"
#include "projections/projection.hpp"

namespace baton::projections {

struct running_projection {
  caf::actor actor;  // send it an exit message to stop it
  // Ready with the log's last sequence at subscription once that much is applied; holds an
  // error if the projection failed or stopped first.
  std::shared_future<uint64_t> caught_up;
};

// Subscribes from p->applied_seq() + 1. The actor stops (and p fails) if the log writer
// goes away or the log hands it anything out of order.
// A projection that writes to disk or keeps a world of its own (the SQL views, the state
// snapshots) gets a thread of its own, so its work never holds a scheduler thread, at
// background priority (background_priority.hpp), and holds what the log hands it while the
// log is busy (hold_while_busy.hpp), so that on a busy machine it falls behind (and catches
// up later) rather than slowing the worker API.
struct projection_options {
  bool own_thread = false;
  bool background = false;  // with own_thread
  hold_policy hold = {};    // when background
};
running_projection run_projection(caf::actor_system& sys, actors::log_writer_actor log, std::shared_ptr<projection> p,
                                  projection_options o = {});

// Waits for r.caught_up. Empty when caught up in time, else why not (for a start-up error).
std::optional<std::string> wait_caught_up(const running_projection& r, const projection& p,
                                          std::chrono::steady_clock::duration timeout);

}  // namespace baton::projections
