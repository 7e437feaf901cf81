#pragma once
// The scheduler actor: owns the world (every job and worker, rebuilt from the log at
// start-up) and the heartbeat leases, and is the only place decisions are made. One actor
// for all jobs rather than one per job: assignment on poll compares every idle worker
// against every queued job, so it needs one consistent view; serialising commands here
// makes "exactly one worker gets a job" hold without locks and keeps decisions in a
// single, replayable order. A decision is applied to the world at once (later commands
// see it) and answered only when its events are durable.
#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <functional>
#include <future>
#include <memory>
#include <optional>

#include <caf/allowed_unsafe_message_type.hpp>

#include "actors/log_writer.hpp"
#include "core/app/decide.hpp"

namespace baton::actors {

using command_atom = caf::atom_constant<caf::atom("command")>;
using reap_atom = caf::atom_constant<caf::atom("reap")>;
using priority_atom = caf::atom_constant<caf::atom("priority")>;  // to itself: recalculate priorities
using leases_atom = caf::atom_constant<caf::atom("leases")>;
using submit_atom = caf::atom_constant<caf::atom("submit")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using plan_atom = caf::atom_constant<caf::atom("plan")>;        // to itself: the planning cycle
using planned_atom = caf::atom_constant<caf::atom("planned")>;  // the planner's thread: a cycle's answer
using stage_atom = caf::atom_constant<caf::atom("stage")>;      // to itself: the next slice of a staged re-key
using preempt_atom = caf::atom_constant<caf::atom("preempt")>;  // to itself: preemptions and grace ends

// Where a submitted command's reply goes: a callback run once, on the scheduler's thread, when
// the reply is ready (after its events are durable). Cheaper than a request/response, which
// needs an actor on the asking side (one spawn and two hops per call). If the command is
// dropped unanswered (the scheduler is gone), the sink answers 503 when it is destroyed.
class reply_sink {
 public:
  explicit reply_sink(std::function<void(core::reply)> deliver) : deliver_(std::move(deliver)) {}
  reply_sink(const reply_sink&) = delete;
  reply_sink& operator=(const reply_sink&) = delete;
  ~reply_sink();
  void deliver(core::reply r);

 private:
  std::function<void(core::reply)> deliver_;
  bool done_ = false;
};

struct reply_slot {
  std::shared_ptr<reply_sink> sink;
};

// A planning cycle's snapshot and the planner's answer, back from the thread that planned.
struct planned_cycle {
  std::shared_ptr<core::plan_snapshot> snapshot;
  std::shared_ptr<core::plan> result;
  uint64_t generation = 0;  // of the world the snapshot was taken from
};

using scheduler_actor =
    caf::typed_actor<caf::replies_to<command_atom, core::envelope>::with<core::reply>,
                     caf::reacts_to<submit_atom, core::envelope, reply_slot>,
                     caf::replies_to<leases_atom>::with<core::lease_table>,  // for a clean stop
                     caf::reacts_to<reap_atom>, caf::reacts_to<priority_atom>, caf::reacts_to<stage_atom>,
                     caf::reacts_to<plan_atom>, caf::reacts_to<planned_atom, planned_cycle>, caf::reacts_to<preempt_atom>,
                     caf::reacts_to<flush_atom>>;  // to itself: append what this burst decided

// Sends a command and waits for its reply (from a non-actor thread, e.g. an HTTP handler).
// Empty on timeout; the command may still take effect.
std::optional<core::reply> submit(const scheduler_actor& scheduler, core::envelope command, std::chrono::milliseconds deadline);

// Sends a command; on_reply runs once with the reply (on the scheduler's thread, or on this
// one if the scheduler is gone: 503 scheduler_unavailable). Never blocks.
void submit_async(const scheduler_actor& scheduler, core::envelope command, std::function<void(core::reply)> on_reply);

// The reply a caller gets when the scheduler cannot answer (gone, or its log failed).
core::reply unavailable(const std::string& code, const std::string& why);

using clock_fn = std::function<core::time_us()>;

}  // namespace baton::actors
namespace baton::caches {
class idle_poll_view;
class worker_credentials;
class operator_credentials;
class pilot_credential;
}  // namespace baton::caches
namespace baton::actors {

// The caches the scheduler keeps in step with its world (actors/caches/), in the same step that
// changes it and before any reply of that step, for the HTTP threads. Missing ones are made.
struct scheduler_views {
  std::shared_ptr<caches::idle_poll_view> idle;             // answers idle polls without a trip here
  std::shared_ptr<caches::worker_credentials> credentials;  // who a worker token belongs to
  std::shared_ptr<caches::operator_credentials> operators;  // whose a named operator's token is
  std::shared_ptr<caches::pilot_credential> pilot;          // which pilot token is accepted (optional)
};

// What the scheduler needs of the store when it refuses for want of space (events/free_space.hpp):
// the world as the log holds it (to drop decisions whose events were refused) and whether
// the disk is still short. Empty: such a refusal stops the scheduler as any failed write does.
struct scheduler_storage {
  std::function<core::world()> recover;
  std::function<std::optional<std::string>()> short_of_space;
};

// Where a planning cycle's planner runs: given the cycle's work (plan on the snapshot, then
// send `planned` back), it runs it somewhere. Empty (batond): a thread of its own, so polls go
// on meanwhile. A test seam: under CAF's deterministic test coordinator a thread would race
// the test, so tests keep the work and run it when the scenario needs the plan to arrive.
using planner_launcher = std::function<void(std::function<void()> plan)>;

// world: the state recovered from the log. leases: last heartbeats saved by the previous
// clean stop (workers missing from it count from now); see core::liveness_rule::grace_from_us.
scheduler_actor spawn_scheduler(caf::actor_system& sys, log_writer_actor log, core::world world, core::lease_table leases,
                                core::scheduler_settings settings, clock_fn clock, scheduler_views views = {},
                                scheduler_storage storage = {}, planner_launcher launch_planner = {});

}  // namespace baton::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::actors::reply_slot)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::actors::planned_cycle)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::core::envelope)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::core::reply)
