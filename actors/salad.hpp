#pragma once
// The Salad autoscaler: every interval, asks the scheduler what replica count cloud demand
// calls for (core/provisioning/cloud), reads the container group's count over HTTPS and patches it when
// they differ, then reports what it did (an event). Detached: a slow API never blocks others.
#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include "actors/scheduler.hpp"
#include "config/clusters.hpp"

namespace baton::actors {

using scale_atom = caf::atom_constant<caf::atom("scale")>;
using salad_actor = caf::typed_actor<caf::reacts_to<scale_atom>>;

salad_actor spawn_salad(caf::actor_system& sys, scheduler_actor scheduler, config::salad_config cfg);

}  // namespace baton::actors
