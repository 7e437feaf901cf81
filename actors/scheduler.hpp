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
#include <memory>

#include "actors/api_command.hpp"
#include "actors/log_writer.hpp"
#include "actors/scheduler_commands.hpp"

namespace baton::actors {

using command_atom = caf::atom_constant<caf::atom("command")>;
using reap_atom = caf::atom_constant<caf::atom("reap")>;
using leases_atom = caf::atom_constant<caf::atom("leases")>;

using scheduler_actor = caf::typed_actor<caf::replies_to<command_atom, api_command>::with<api_reply>,
                                         caf::replies_to<leases_atom>::with<lease_table>,  // for a clean stop
                                         caf::reacts_to<reap_atom>>;

using clock_fn = std::function<core::time_us()>;

// world: the state recovered from the log. leases: last heartbeats saved by the previous
// clean stop (workers missing from it count from now); see lease_grace_from_us.
scheduler_actor spawn_scheduler(caf::actor_system& sys, log_writer_actor log, core::world world, lease_table leases,
                                scheduler_settings settings, clock_fn clock);

}  // namespace baton::actors
