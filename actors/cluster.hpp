#pragma once
// One actor per configured Slurm partition. Each cycle: ask squeue about this cluster's
// placeholders and report the dead ones, then ask the scheduler what to submit (the pure
// plan in core/provisioning/provisioning), run sbatch for it and report each outcome. The scheduler
// turns the reports into events; this actor only does the slow, blocking I/O, on its own
// thread (detached), so a hung ssh never stalls the scheduler or another cluster.
#include "actors/labelled_counters.hpp"
#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "actors/scheduler.hpp"
#include "config/clusters.hpp"
#include "core/access/rate_limit.hpp"

namespace baton::actors {

using cycle_atom = caf::atom_constant<caf::atom("cycle")>;
using cluster_actor = caf::typed_actor<caf::reacts_to<cycle_atom>>;

// baton's budget of sbatch/squeue calls against one Slurm controller, shared by the cluster
// actors (partitions) that reach it: a token bucket under a lock.
class slurm_call_budget {
 public:
  explicit slurm_call_budget(core::bucket_rule rule) : rule_(rule) {}
  bool take(core::time_us now);  // false: spent, try next cycle

 private:
  std::mutex mutex_;
  core::bucket_rule rule_;
  core::token_bucket bucket_;
};

struct cluster_options {
  config::cluster_config cluster;
  std::string daemon_url;  // what the pilot workers call
  std::string
      api_token_file;  // accept_shared_token: the file holding the shared token the pilots use (the script names only the file)
  // Where each pilot's one-time registration credential goes ("" = none: the shared token of
  // api_token_file, for RelayMD workers); the cluster's own pilot_credential_dir comes first.
  std::string pilot_credential_dir;
  std::string scripts_dir;  // redacted copies of every submitted script
  std::chrono::seconds interval{60};
  int heartbeat_seconds = 60;
  std::function<std::string()> new_id;             // placeholder worker ids
  std::function<std::string()> new_secret;         // one-time credentials' secrets (random hex)
  std::function<int64_t()> clock;                  // µs since the epoch, for file names and the call budget
  std::shared_ptr<slurm_call_budget> budget;       // shared with the other partitions of the same controller
  std::shared_ptr<slurm_call_counters> calls;      // every sbatch/squeue and how it went, for GET /metrics (none: not counted)
  std::shared_ptr<cluster_cycle_counters> cycles;  // every cycle ended, for GET /metrics (none: not counted)
};

cluster_actor spawn_cluster(caf::actor_system& sys, scheduler_actor scheduler, cluster_options opts);

// The cluster as the pure core sees it.
core::cluster_spec spec_of(const config::cluster_config& c);

}  // namespace baton::actors
