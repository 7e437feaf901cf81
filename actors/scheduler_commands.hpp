#pragma once
// Turns one API command into a decision over the world: which pure core function to call,
// with what, and what to answer. Also the read-only queries (lists, one job, control).
// Deterministic given (world, leases, command, now); the scheduler actor calls it.
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <string>

#include "actors/api_command.hpp"
#include "core/cloud.hpp"
#include "core/liveness.hpp"
#include "core/provisioning.hpp"
#include "core/world.hpp"

namespace baton::actors {

struct scheduler_settings {
  core::liveness_rule liveness;                 // when a worker is stale (and the start-up grace)
  int heartbeat_interval_seconds = 60;          // told to workers at registration
  core::time_us reap_interval_us = 60'000'000;
  uint32_t max_attempts = 5;
  std::string default_worker_image = "default";
  std::vector<std::string> extra_worker_images;  // jobs.worker_images
  // Worker-side calls must carry the worker's own credential (X-Worker-Token); off, the
  // shared token is accepted too, as RelayMD's workers send only that.
  bool worker_credentials_required = true;
  std::vector<core::cluster_spec> clusters;  // configured Slurm partitions, config order
  // A stale worker on a configured Slurm cluster is reaped only when squeue says its
  // allocation is gone (the cluster actor asks), or after this long without a heartbeat.
  core::time_us hpc_silent_cap_us = 600'000'000;
  bool salad_enabled = false;
  std::string salad_image;  // the image Salad containers run
  int salad_max_replicas = 0;
};

using core::lease_book;
using core::lease_table;

struct handled {
  core::decision decision;
  api_reply reply;      // sent once the decision's events are durable
  bool again = false;   // apply and call again (a poll that first closed a cancelled job)
};

handled handle(const core::world& w, const lease_book& leases, const scheduler_settings& s, const api_command& c,
               core::time_us now);

// Loop work: workers whose lease ran out are reaped with their jobs; jobs held by a worker
// that is gone are requeued (orphans). One decision for everything found. Workers of a
// configured Slurm cluster wait for squeue's word (or hpc_silent_cap_us) before being reaped.
core::decision reap(const core::world& w, const lease_book& leases, const scheduler_settings& s, core::time_us now);

}  // namespace baton::actors
