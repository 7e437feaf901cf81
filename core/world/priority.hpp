#pragma once
// Who goes first, applied to baton's world: the fair-share tree built from the accounts and
// the usage in the log, each queued job's priority under the recorded policy, and the
// periodic recalculation as a decision (scheduler.priorities_recalculated) that records the
// policy and the fair-share figures it used, so the queue order re-derives from the log.
#include <map>
#include <string>
#include <vector>

#include "core/policy/fair_tree.hpp"
#include "core/policy/lattice.hpp"
#include "core/policy/multifactor.hpp"
#include "core/world/world.hpp"

namespace baton::core {

// A job's association in the share tree: "account/user".
std::string association_of(const job& j);
std::string association_of(const std::string& account, const std::string& user);

// An association's decayed GPU-seconds at `at`: closed segments plus the open ones so far.
double usage_at(const world& w, const std::string& association, time_us at);

// The share tree for `policy`: its accounts with their users, plus every association that
// has jobs or usage but is not configured (under its account, or under root, with 1 share).
share_node share_tree(const world& w, const priority_policy& policy, time_us at);

// The policy the queue is ordered by: the last recorded one, "fifo" before any was recorded.
std::string policy_in_force(const world& w);

// Every factor of a job's priority under the world's recorded policy, as of the last
// recalculation (what sprio shows).
struct priority_explained {
  std::string policy;
  time_us calculated_at = 0;
  int tier = 0;
  bool preemptor = false;  // its partition or QOS may preempt others (comes first in the order)
  int64_t priority = 0;
  multifactor_result multifactor;  // with policy multifactor
  lattice_result lattice;          // with policy lattice
};
priority_explained explain_priority(const world& w, const job& j);
// The same under another recorded state (a pending recalculation being staged).
priority_explained explain_priority(const world& w, const priority_state& state, const job& j);

// Sets j.preemptor, j.priority_tier and j.priority from the recorded policy (creation, recalculation).
void set_priority(const world& w, job& j);

// The recalculation: the fair-share figures of every association at `now` under `policy`
// (the configured one), and the policy itself, as one event on stream "scheduler". Under the
// policy already recorded it is "deferred": the queue keeps its order until
// scheduler.priorities_applied puts it in force (so the scheduler can build the new order
// between polls, core/world/staged_rekey.hpp); a new policy is in force at once.
decision decide_recalculation(const world& w, const priority_policy& policy, time_us now);
bool is_deferred(const decision& recalculation);
// The event that puts the pending recalculation (decided at calculated_at) in force.
domain_event priorities_applied_event(time_us calculated_at);
decision decide_priorities_applied(const world& w);  // empty when none is pending
// Whether the log's last recalculation recorded exactly this policy (if not, batond records
// it before it serves, so no job is judged by a policy the log does not know).
bool policy_recorded(const world& w, const priority_policy& policy);

// Records it in the world's priority state (world.cpp then re-keys every queued job).
void record_recalculation(priority_state& state, const ev::priorities_recalculated& payload, time_us at);

// Why a queued job waits: JobHeld, Dependency (a parent has not ended yet),
// DependencyNeverSatisfied (one ended so that a condition can never hold, and
// kill_invalid_dependencies is off), Priority (others come first), Resources (it is first in
// line for its image and no worker takes it); "" when it is not queued.
std::string pending_reason(const world& w, const job& j);
// Why no site could ever run the queued job, for people: "gpu_count 4 > largest offered 2"
// (the configured clusters' gpu_count as the policy in force recorded it, and every worker
// ever registered: a Salad site counts once its workers registered), or a time limit over every site's wall time for a job that does not
// checkpoint. "" when some site could, or nothing is known yet of what the sites offer. Its
// pending_reason is then PartitionConfig (Slurm's, for a request no partition can meet).
std::string cannot_run_reason(const world& w, const job& j);

// Every queued job in evaluation order: eligible jobs (tier, priority, submit, id), then
// those held or waiting on a dependency, in the same order.
std::vector<std::string> queue_in_evaluation_order(const world& w);

// Lattice scores are fractions; the queue keys them as integers of this many units per 1.0.
constexpr double lattice_priority_scale = 1e6;

}  // namespace baton::core
