#include "projections/runner.hpp"
#include "actors/thread_name.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "projections/background_priority.hpp"
#include "projections/hold_while_busy.hpp"

namespace baton::projections {
namespace {

using flush_atom = caf::atom_constant<caf::atom("flush")>;
using hold_check_atom = caf::atom_constant<caf::atom("holdcheck")>;
constexpr auto flush_after = std::chrono::milliseconds(200);  // how long applied events may wait for a flush

struct runner_state {
  runner_state() = default;  // user-declared: CAF builds a state constructible from its actor pointer from `this`
  std::shared_ptr<projection> p;
  std::shared_ptr<std::promise<uint64_t>> caught_up;
  std::optional<uint64_t> target;  // the log's last seq when the subscription was made
  bool signalled = false;
  bool background = false;              // its own thread at background priority (background_priority.hpp)
  std::optional<background_mode> mode;  // the thread's, once set
  bool may_leave_idle = false;
  bool flush_scheduled = false;
  // A background projection's batches held while the log is busy (hold_while_busy.hpp).
  hold_policy hold;
  std::vector<actors::event_batch> held;
  held_events held_info;
  bool hold_check_scheduled = false;
  bool hold_check_requeued = false;  // the timer's check, sent again behind what waited in the mailbox
  static inline const char* name = "projection";
};

using self_ptr = caf::stateful_actor<runner_state>*;

void signal_caught_up(self_ptr self) {
  auto& st = self->state;
  if (st.signalled || !st.target || st.p->applied_seq() < *st.target) return;
  st.signalled = true;
  st.caught_up->set_value(st.p->applied_seq());
}

// A flush shortly after a batch, while the projection says it holds something back.
void schedule_flush(self_ptr self) {
  auto& st = self->state;
  if (st.flush_scheduled || !st.p->pending()) return;
  st.flush_scheduled = true;
  self->delayed_send(self, flush_after, flush_atom::value);
}

int64_t steady_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// In a handler, so on the actor's own (detached) thread: idle while the projection keeps up,
// nice once it is far behind (and the process may come back from idle), else nice throughout.
void set_background_mode(self_ptr self, int64_t newest_recorded_at_us) {
  auto& st = self->state;
  const int64_t lag_us = wall_now_us() - newest_recorded_at_us;
  background_mode want = background_mode::nice;
  if (st.may_leave_idle) want = next_background_mode(st.mode.value_or(background_mode::idle), lag_us);
  if (st.mode == want) return;
  if (!enter_background_mode(want))
    spdlog::warn("projection {}: cannot set its thread's priority ({})", st.p->name(),
                 want == background_mode::idle ? "SCHED_IDLE" : "nice");
  st.mode = want;
}

void stop(self_ptr self, const std::string& why) {
  auto& st = self->state;
  spdlog::error("{}: it stops (GET /healthz and /metrics report it until batond restarts)", why);
  st.p->fail(why);
  if (!st.signalled) {
    st.signalled = true;
    st.caught_up->set_exception(std::make_exception_ptr(std::runtime_error(why)));
  }
  self->quit(caf::make_error(caf::sec::runtime_error, why));
}

// Applies a batch on the projection; false once it has failed (the actor is then stopping).
bool apply_now(self_ptr self, const std::vector<events::event_envelope>& batch) {
  if (self->state.background && !batch.empty()) set_background_mode(self, batch.back().recorded_at_us);
  if (!self->state.p->apply_batch(batch)) {
    stop(self, *self->state.p->failure());
    return false;
  }
  return true;
}

// Applies what is held, in order, if it is due; else looks again a little later.
void release_if_due(self_ptr self) {
  auto& st = self->state;
  if (st.held.empty()) return;
  if (!release_held(st.held_info, steady_now_us(), wall_now_us(), st.hold)) {
    if (!st.hold_check_scheduled) {
      st.hold_check_scheduled = true;
      self->delayed_send(self, std::chrono::microseconds(st.hold.quiet_us), hold_check_atom::value);
    }
    return;
  }
  auto held = std::move(st.held);
  st.held.clear();
  st.held_info = {};
  for (const auto& batch : held)
    if (!apply_now(self, *batch)) return;
  schedule_flush(self);
  signal_caught_up(self);
}

void hold(self_ptr self, actors::event_batch&& batch) {
  auto& st = self->state;
  auto& h = st.held_info;
  const int64_t now = steady_now_us();
  if (st.held.empty()) {
    h.first_arrival_us = now;
    h.oldest_recorded_at_us = batch->front().recorded_at_us;
  }
  for (const auto& e : *batch) h.oldest_recorded_at_us = std::min(h.oldest_recorded_at_us, e.recorded_at_us);
  h.last_arrival_us = now;
  h.events += batch->size();
  st.held.push_back(std::move(batch));
  release_if_due(self);
}

caf::behavior runner(self_ptr self, std::shared_ptr<projection> p, actors::log_writer_actor log,
                     std::shared_ptr<std::promise<uint64_t>> caught_up, projection_options o) {
  if (o.own_thread) actors::name_this_thread("proj:" + p->name());  // (else the thread is CAF's, shared)
  auto& st = self->state;
  st.p = std::move(p);
  st.caught_up = std::move(caught_up);
  st.background = o.own_thread && o.background;
  st.may_leave_idle = st.background && may_leave_idle();
  st.hold = o.hold;
  self->monitor(log);
  self->set_down_handler([self](caf::down_msg& msg) {
    stop(self, "projection " + self->state.p->name() + ": the log writer stopped (" + to_string(msg.reason) + ")");
  });
  self->request(log, caf::infinite, actors::subscribe_atom::value, caf::actor_cast<caf::actor>(self), st.p->applied_seq() + 1)
      .then(
          [self](uint64_t last_seq) {
            self->state.target = last_seq;
            signal_caught_up(self);
            schedule_flush(self);  // a store that is behind (a database away at start) catches up by itself
          },
          [self](caf::error& e) {  // without this CAF's default error handler kills the requester silently
            stop(self, "projection " + self->state.p->name() + " cannot subscribe to the log: " + to_string(e));
          });
  return {
      // (The batch is shared with the log's other subscribers: read, never changed.)
      [self](actors::events_atom, actors::event_batch& batch) {
        if (!batch || batch->empty()) return;
        if (self->state.background) {
          hold(self, std::move(batch));
          return;
        }
        if (!apply_now(self, *batch)) return;
        schedule_flush(self);
        signal_caught_up(self);
      },
      [self](hold_check_atom) {
        auto& st = self->state;
        // A batch's arrival is when this thread takes it. The timer's check may come before
        // batches that waited in the mailbox while the thread did not run (a background
        // thread on a busy machine): look again behind them, or a busy log passes for a
        // quiet one (it did, in a burst of polls with 50 live-stream clients).
        if (!st.hold_check_requeued) {
          st.hold_check_requeued = true;
          self->send(self, hold_check_atom::value);
          return;
        }
        st.hold_check_requeued = false;
        st.hold_check_scheduled = false;
        release_if_due(self);
      },
      [self](flush_atom) {
        self->state.flush_scheduled = false;
        try {
          self->state.p->flush();
        } catch (const std::exception& e) {
          self->state.p->fail(std::string("projection ") + self->state.p->name() + ": " + e.what());
          stop(self, *self->state.p->failure());
          return;
        }
        schedule_flush(self);  // still pending (a store that is away): try again
      },
  };
}

}  // namespace

running_projection run_projection(caf::actor_system& sys, actors::log_writer_actor log, std::shared_ptr<projection> p,
                                  projection_options o) {
  auto caught_up = std::make_shared<std::promise<uint64_t>>();
  running_projection r;
  r.caught_up = caught_up->get_future().share();
  if (o.own_thread)
    r.actor = sys.spawn<caf::detached>(runner, std::move(p), std::move(log), caught_up, o);
  else
    r.actor = sys.spawn(runner, std::move(p), std::move(log), caught_up, o);
  return r;
}

std::optional<std::string> wait_caught_up(const running_projection& r, const projection& p,
                                          std::chrono::steady_clock::duration timeout) {
  if (r.caught_up.wait_for(timeout) != std::future_status::ready)
    return "projection " + p.name() + " did not catch up with the log within " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s (applied through " +
           std::to_string(p.applied_seq()) + ")";
  try {
    r.caught_up.get();
  } catch (const std::exception& e) {  // failed, or stopped before catching up (broken promise)
    return p.failure().value_or("projection " + p.name() + " stopped before catching up: " + e.what());
  }
  return std::nullopt;
}

}  // namespace baton::projections
