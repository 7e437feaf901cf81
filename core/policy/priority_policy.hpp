#pragma once
// Who goes first, as configured: the policy (fifo, multifactor, lattice:<profile>), its
// weights, the partitions, QOS and the account tree with shares. The scheduler records the
// policy in each scheduler.priorities_recalculated event, so a log re-derives under the
// policy it was decided with, whatever the config says today.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/events/domain.hpp"
#include "core/policy/lattice.hpp"
#include "core/policy/multifactor.hpp"

namespace baton::core {
namespace ev {
struct policy_record;  // core/events/event_types.hpp
}

// A named queue (Slurm partition): a higher tier is considered first whatever the
// priority; the factor feeds the multifactor partition term.
struct partition_def {
  std::string name;
  int priority_tier = 1;
  double priority_factor = 1;
  // Partitions whose running jobs this partition's jobs may preempt (Palmetto's owner
  // partitions; Slurm's preempt/partition_prio made explicit). Empty: none.
  std::vector<std::string> preempt = {};
};

// A quality of service: a priority factor and per-user limits (0 = none).
struct qos_def {
  std::string name;
  double priority_factor = 0;
  uint32_t max_running_per_user = 0;      // running jobs of one user in this QOS; more wait (reason QOSMaxJobsPerUser)
  std::vector<std::string> preempt = {};  // QOS whose running jobs this QOS's jobs may preempt (Slurm's Preempt=)
};

// An account in the share tree (sacctmgr's associations): its parent, its shares among
// siblings, and the users who may charge it with their own shares. "root" is implicit.
struct account_def {
  std::string name;
  std::string parent = "root";
  uint32_t shares = 1;
  std::map<std::string, uint32_t> users;  // user -> raw shares
};

enum class policy_kind : uint8_t { fifo, multifactor, lattice };

struct priority_policy {
  policy_kind kind = policy_kind::multifactor;
  lattice_profile profile = lattice_profile::balanced;  // with kind lattice
  std::optional<lattice_weights> custom_weights;        // lattice:custom
  double lattice_reference_wait_seconds = 3600;
  multifactor_settings multifactor;
  time_us decay_half_life = 7LL * 24 * 3600 * 1000000;      // PriorityDecayHalfLife
  time_us calc_period = 60LL * 1000000;                     // priority_calc_period
  std::vector<partition_def> partitions{{"normal", 1, 1}};  // config order
  std::string default_partition = "normal";
  std::vector<qos_def> qos{{"normal", 0, 0}};
  std::string default_qos = "normal";
  std::vector<account_def> accounts;  // parents before children is not required
  std::string default_account = "root";
  uint32_t max_jobs_per_user = 3000;  // pending + running; the next submit answers 429
  // The most GPUs one worker of a configured site offers (the clusters' gpu_count): with the
  // largest worker ever registered, what normalises the job-size factor, so that a
  // recalculation made before any worker registered does not take the largest job to be 1 GPU.
  uint32_t offered_gpu_count = 0;
  // The longest wall time any configured site gives one worker, in seconds: 0 when some site
  // gives no limit (Salad, an UNLIMITED partition) or none is configured. A job that does not
  // checkpoint and asks for more can never run (core/world/priority.hpp's cannot_run_reason).
  int64_t offered_wall_seconds = 0;
  // A job whose dependency can never hold is cancelled (dependency_never_satisfied); off, it
  // waits with pending_reason DependencyNeverSatisfied (Slurm's default).
  bool kill_invalid_dependencies = true;
  // Lattice f7: the electricity price for each hour of the day (UTC, any unit, 24 values);
  // empty: no schedule (f7 neutral).
  std::vector<double> energy_prices;
  // Preemption (core/world/preemption.hpp): how long a victim has to leave its worker once told
  // (Slurm's GraceTime), after which batond takes the worker back. At most a week: the config
  // refuses more, and a recorded grace above it (a damaged or hand-made log) reads as the default,
  // since preemption adds it, in microseconds, to a decision's time.
  static constexpr int64_t max_preempt_grace_seconds = 7 * 86400;
  int64_t preempt_grace_seconds = 300;

  const partition_def* partition(const std::string& name) const;
  const qos_def* find_qos(const std::string& name) const;
  const account_def* account(const std::string& name) const;
  double max_partition_factor() const;
  double max_qos_factor() const;
  // The accounts a user may charge (where the tree lists them), in config order.
  std::vector<std::string> accounts_of(const std::string& user) const;
  // Whether a job's first worker fixes the fingerprint of every later one (lattice:sensitive).
  friend bool pins_conformance(const priority_policy& p) {
    return p.kind == policy_kind::lattice && p.profile == lattice_profile::sensitive && !p.custom_weights;
  }
  // Whether any partition or QOS may preempt another.
  bool preemption_configured() const;
  // Whether a job in this partition and QOS may preempt any job at all (a "preemptor": it
  // comes first in the evaluation order).
  bool may_preempt_any(const std::string& partition, const std::string& qos) const;
  // Whether a job in (partition, qos) may preempt a job in (victim_partition, victim_qos).
  bool may_preempt(const std::string& partition, const std::string& qos, const std::string& victim_partition,
                   const std::string& victim_qos) const;
};

// "fifo", "multifactor", "lattice:<profile>" or "lattice:custom".
std::string policy_name(const priority_policy& p);
// Parses a policy name into p (kind and profile); false if it names none.
bool set_policy_name(priority_policy& p, const std::string& name);

// The policy as recorded in events, and back (missing values take the defaults above; a
// record that does not read throws events::payload_error); the JSON is the record's.
ev::policy_record to_record(const priority_policy& p);
priority_policy policy_of(const ev::policy_record& r);
nlohmann::json to_json(const priority_policy& p);
priority_policy policy_from_json(const nlohmann::json& j);

// What is wrong with the tree: an unknown parent, a cycle, a user listed twice under one
// account; "" when it is sound. (The config loader names the key; this names the account.)
std::string check_account_tree(const std::vector<account_def>& accounts);

}  // namespace baton::core
