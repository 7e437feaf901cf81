#pragma once
// Pure provisioning decisions for Slurm clusters: how many pilot workers a cluster should
// submit now and for which image, what to do with squeue's answer about placeholders, and
// why a queued job cannot be served. The cluster actors run sbatch/squeue; these decide.
#include <set>
#include <string>
#include <vector>

#include "core/planning/deadline.hpp"
#include "core/world/world.hpp"

namespace baton::core {

struct cluster_spec {
  std::string name;
  std::vector<std::string> images;    // image keys it can start workers for, sorted
  std::string strategy = "reactive";  // reactive | continuous | jit_threshold
  time_us jit_threshold_us = 6 * 3'600'000'000LL;
  int max_pending = 1;
  std::string gpu_type;
  int gpu_count = 0;
  int64_t wall_time_seconds = 0;  // what its allocations ask Slurm for (0: unlimited or unknown)
};

std::string cluster_stream(const std::string& name);
// A Slurm worker's allocation id: its provider id after "<cluster>:" ("" without a colon).
std::string slurm_id_of(const worker& wk);

struct submission_plan {
  std::string image;
  int count = 0;                       // allocations to submit now
  ev::placeholder_plan_record record;  // the inputs, recorded with each placeholder so the choice can be re-derived
};

// Looks at every queued job (not only the oldest: no head-of-line blocking across images).
// stale: workers whose lease ran out (they serve nothing). Images in spec order.
// A job counts for an entry only if the entry's allocations fit it (rule: its time limit
// within the wall time, or a checkpointing job with min_useful_seconds): a long job goes to
// the long partition. With a plan (core/world/plan_cycle.hpp), jobs it already places count for
// nothing: a planned start (an idle worker takes it), or a reservation on a pending
// allocation or starting within `soon` (a new allocation would not be faster); idle workers
// and pending allocations the plan already uses are not counted as free either.
std::vector<submission_plan> plan_submissions(const world& w, const cluster_spec& c, const std::set<std::string>& stale,
                                              const deadline_rule& rule, time_us soon, time_us now);

// Slurm ids ("123") of this cluster's live placeholders, ascending.
std::vector<std::string> placeholder_slurm_ids(const world& w, const std::string& cluster);

// registration_sha256: the hash of the one-time credential the pilot registers with ("" none:
// older logs, and RelayMD-style pilots on the shared token), recorded with the placeholder.
decision decide_placeholder(const world& w, const cluster_spec& c, const std::string& worker_id, const std::string& image,
                            const std::string& slurm_id, const std::optional<ev::placeholder_plan_record>& plan, time_us now,
                            const std::string& registration_sha256 = "");
// checked: the ids squeue was asked about; alive: those it listed. Placeholders among checked
// that are not alive (and not adopted meanwhile) are removed.
decision decide_placeholders_checked(const world& w, const std::string& cluster, const std::vector<std::string>& checked,
                                     const std::set<std::string>& alive, time_us now);
// Placeholders of clusters no longer in the config: nothing will ever check them again.
decision decide_unconfigured_placeholders(const world& w, const std::vector<cluster_spec>& clusters);
decision decide_submission_failed(const std::string& cluster, const std::string& image, ev::cluster_submission_failed failure);
// No event when nothing changes.
decision decide_cluster_enabled(const world& w, const std::string& cluster, bool enabled, const std::string& reason);

// RelayMD's queue_blocked_reason, or "" when some enabled cluster can start a worker for it.
std::string queue_blocked_reason(const world& w, const std::vector<cluster_spec>& clusters, const job& j);

}  // namespace baton::core
