#pragma once
// The application layer: one typed command in, its events and typed result out.
// Deterministic given (world, leases, settings, envelope, now): no clock, no I/O, no CAF.
// The scheduler actor calls it; so do the tests and (later) replay and simulation.
#include <set>
#include <string>
#include <vector>

#include "core/app/commands.hpp"
#include "core/planning/deadline.hpp"
#include "core/workers/liveness.hpp"
#include "core/app/outcome.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/world/world.hpp"

namespace baton::core {

struct scheduler_settings {
  liveness_rule liveness;               // when a worker is stale (and the start-up grace)
  int heartbeat_interval_seconds = 60;  // told to workers at registration
  time_us reap_interval_us = 60'000'000;
  uint32_t max_attempts = 5;
  std::string default_worker_image = "default";
  std::vector<std::string> extra_worker_images;  // jobs.worker_images
  // Worker-side calls must carry the worker's own credential (X-Worker-Token); off, the
  // shared token is accepted too, as RelayMD's workers send only that.
  bool worker_credentials_required = true;
  std::vector<cluster_spec> clusters;  // configured Slurm partitions, config order
  // A stale worker on a configured Slurm cluster is reaped only when squeue says its
  // allocation is gone (the cluster actor asks), or after this long without a heartbeat.
  time_us hpc_silent_cap_us = 600'000'000;
  bool salad_enabled = false;
  std::string salad_image;  // the image Salad containers run
  int salad_max_replicas = 0;
  priority_policy priority;    // as configured; recorded by each recalculation
  backfill_settings backfill;  // the planning cycle (core/world/plan_cycle.hpp)
  deadline_rule deadlines;     // which jobs fit a pilot's remaining allocation (recorded by each assignment it shaped)
  storage_rules storage;       // quotas and retention (core/storage/storage.hpp)
};

// Every image key batond knows from its config: the default, jobs.worker_images, the
// clusters' and Salad's.
std::set<std::string> known_images(const scheduler_settings& s);

outcome decide(const world& w, const lease_book& leases, const scheduler_settings& s, const envelope& e, time_us now);

// Loop work: workers whose lease ran out are reaped with their jobs; jobs held by a worker
// that is gone are requeued (orphans). One decision for everything found. Workers of a
// configured Slurm cluster wait for squeue's word (or hpc_silent_cap_us) before being reaped.
decision reap(const world& w, const lease_book& leases, const scheduler_settings& s, time_us now);

// Decides a recorded reap (worker.reaped's payload) again from the lease facts it recorded:
// the worker must be stale under the recorded rule (past the silent cap for a Slurm worker
// reaped without squeue's word; unlisted by squeue for one reaped on its word). Then the same
// events, the job's loss included, as they were decided; empty when the facts do not hold.
decision rereap(const world& w, const std::string& worker_id, const ev::worker_reaped& recorded, time_us now);

// Loop work: the planning cycle (core/world/plan_cycle.hpp) over the workers whose lease holds.
decision plan_cycle(const world& w, const lease_book& leases, const scheduler_settings& s, time_us now);

// Loop work: preemptions and ended grace periods (core/world/preemption.hpp), workers whose lease
// ran out left out.
decision preemption_check(const world& w, const lease_book& leases, const scheduler_settings& s, time_us now);

}  // namespace baton::core
