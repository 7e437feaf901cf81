#include "core/policy/priority_policy.hpp"
#include "core/events/event_types.hpp"

#include <algorithm>
#include <set>

namespace baton::core {

using json = nlohmann::json;

const partition_def* priority_policy::partition(const std::string& name) const { return find_named(partitions, name); }
const qos_def* priority_policy::find_qos(const std::string& name) const { return find_named(qos, name); }
const account_def* priority_policy::account(const std::string& name) const { return find_named(accounts, name); }

double priority_policy::max_partition_factor() const {
  double m = 0;
  for (const auto& p : partitions) m = std::max(m, p.priority_factor);
  return m;
}

double priority_policy::max_qos_factor() const {
  double m = 0;
  for (const auto& q : qos) m = std::max(m, q.priority_factor);
  return m;
}

std::vector<std::string> priority_policy::accounts_of(const std::string& user) const {
  std::vector<std::string> out;
  for (const auto& a : accounts)
    if (a.users.count(user)) out.push_back(a.name);
  return out;
}

bool priority_policy::preemption_configured() const {
  for (const auto& p : partitions)
    if (!p.preempt.empty()) return true;
  for (const auto& q : qos)
    if (!q.preempt.empty()) return true;
  return false;
}

bool priority_policy::may_preempt_any(const std::string& part, const std::string& q) const {
  const partition_def* pd = partition(part);
  const qos_def* qd = find_qos(q);
  return (pd && !pd->preempt.empty()) || (qd && !qd->preempt.empty());
}

bool priority_policy::may_preempt(const std::string& part, const std::string& q, const std::string& victim_partition,
                                  const std::string& victim_qos) const {
  auto lists = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  const partition_def* pd = partition(part);
  const qos_def* qd = find_qos(q);
  return (pd && lists(pd->preempt, victim_partition)) || (qd && lists(qd->preempt, victim_qos));
}

std::string policy_name(const priority_policy& p) {
  switch (p.kind) {
    case policy_kind::fifo:
      return "fifo";
    case policy_kind::multifactor:
      return "multifactor";
    case policy_kind::lattice:
      return p.custom_weights ? "lattice:custom" : std::string("lattice:") + to_string(p.profile);
  }
  return "multifactor";
}

bool set_policy_name(priority_policy& p, const std::string& name) {
  if (name == "fifo" || name == "multifactor") {
    p.kind = name == "fifo" ? policy_kind::fifo : policy_kind::multifactor;
    return true;
  }
  if (name.rfind("lattice:", 0) != 0) return false;
  auto profile = name.substr(8);
  if (profile == "custom") {
    p.kind = policy_kind::lattice;
    if (!p.custom_weights) p.custom_weights = weights_of(lattice_profile::balanced);
    return true;
  }
  auto parsed = lattice_profile_from(profile);
  if (!parsed) return false;
  p.kind = policy_kind::lattice;
  p.profile = *parsed;
  p.custom_weights.reset();
  return true;
}

ev::policy_record to_record(const priority_policy& p) {
  ev::policy_record r;
  r.policy = policy_name(p);
  if (p.custom_weights) r.lattice_weights = std::vector<double>(p.custom_weights->begin(), p.custom_weights->end());
  r.lattice_reference_wait_seconds = p.lattice_reference_wait_seconds;
  const auto& w = p.multifactor.weights;
  r.weights = ev::policy_weights_record{w.age, w.fairshare, w.job_size, w.partition, w.qos};
  r.max_age_us = p.multifactor.max_age;
  r.favor_small = p.multifactor.favor_small;
  r.decay_half_life_us = p.decay_half_life;
  r.calc_period_us = p.calc_period;
  r.partitions.emplace();
  for (const auto& x : p.partitions) r.partitions->push_back({x.name, x.preempt, x.priority_factor, x.priority_tier});
  r.default_partition = p.default_partition;
  r.qos.emplace();
  for (const auto& q : p.qos) r.qos->push_back({q.max_running_per_user, q.name, q.preempt, q.priority_factor});
  r.default_qos = p.default_qos;
  r.accounts.emplace();
  for (const auto& a : p.accounts) r.accounts->push_back({a.name, a.parent, a.shares, a.users});
  r.default_account = p.default_account;
  r.max_jobs_per_user = p.max_jobs_per_user;
  // Only when off, when set, when configured: records made before these existed stay equal.
  if (!p.kill_invalid_dependencies) r.kill_invalid_dependencies = false;
  r.energy_prices = p.energy_prices;
  if (p.preemption_configured()) r.preempt_grace_seconds = p.preempt_grace_seconds;
  if (p.offered_gpu_count) r.offered_gpu_count = p.offered_gpu_count;
  if (p.offered_wall_seconds) r.offered_wall_seconds = p.offered_wall_seconds;
  return r;
}

priority_policy policy_of(const ev::policy_record& r) {
  priority_policy p;
  if (r.lattice_weights) {
    if (r.lattice_weights->size() != lattice_weights{}.size())
      throw events::payload_error("lattice_weights", "lattice_weights: nine numbers (w1..w9)");
    p.custom_weights.emplace();
    std::copy(r.lattice_weights->begin(), r.lattice_weights->end(), p.custom_weights->begin());
  }
  set_policy_name(p, r.policy.value_or("multifactor"));
  p.lattice_reference_wait_seconds = r.lattice_reference_wait_seconds.value_or(p.lattice_reference_wait_seconds);
  if (r.weights) {
    auto& w = p.multifactor.weights;
    w.age = r.weights->age.value_or(w.age);
    w.fairshare = r.weights->fairshare.value_or(w.fairshare);
    w.job_size = r.weights->job_size.value_or(w.job_size);
    w.partition = r.weights->partition.value_or(w.partition);
    w.qos = r.weights->qos.value_or(w.qos);
  }
  p.multifactor.max_age = r.max_age_us.value_or(p.multifactor.max_age);
  p.multifactor.favor_small = r.favor_small.value_or(p.multifactor.favor_small);
  p.decay_half_life = r.decay_half_life_us.value_or(p.decay_half_life);
  p.calc_period = r.calc_period_us.value_or(p.calc_period);
  if (r.partitions) {
    p.partitions.clear();
    for (const auto& x : *r.partitions) {
      partition_def d{x.name};
      d.priority_tier = x.priority_tier.value_or(d.priority_tier);
      d.priority_factor = x.priority_factor.value_or(d.priority_factor);
      d.preempt = x.preempt;
      p.partitions.push_back(std::move(d));
    }
  }
  p.default_partition = r.default_partition.value_or(p.default_partition);
  if (r.qos) {
    p.qos.clear();
    for (const auto& x : *r.qos) {
      qos_def d{x.name};
      d.priority_factor = x.priority_factor.value_or(d.priority_factor);
      d.max_running_per_user = x.max_running_per_user.value_or(d.max_running_per_user);
      d.preempt = x.preempt;
      p.qos.push_back(std::move(d));
    }
  }
  p.default_qos = r.default_qos.value_or(p.default_qos);
  if (r.accounts)
    for (const auto& x : *r.accounts) {
      account_def d{x.name};
      d.parent = x.parent.value_or(d.parent);
      d.shares = x.shares.value_or(d.shares);
      d.users = x.users;
      p.accounts.push_back(std::move(d));
    }
  p.default_account = r.default_account.value_or(p.default_account);
  p.max_jobs_per_user = r.max_jobs_per_user.value_or(p.max_jobs_per_user);
  p.kill_invalid_dependencies = r.kill_invalid_dependencies.value_or(p.kill_invalid_dependencies);
  p.energy_prices = r.energy_prices;
  if (r.preempt_grace_seconds && *r.preempt_grace_seconds >= 0 &&
      *r.preempt_grace_seconds <= priority_policy::max_preempt_grace_seconds)
    p.preempt_grace_seconds = *r.preempt_grace_seconds;
  p.offered_gpu_count = r.offered_gpu_count.value_or(0);
  p.offered_wall_seconds = r.offered_wall_seconds.value_or(0);
  return p;
}

json to_json(const priority_policy& p) { return events::to_json(to_record(p)); }

priority_policy policy_from_json(const json& j) { return policy_of(events::from_json<ev::policy_record>(j)); }

std::string check_account_tree(const std::vector<account_def>& accounts) {
  std::map<std::string, std::string> parent;
  for (const auto& a : accounts) {
    if (a.name == "root") {
      if (a.parent != "root" && !a.parent.empty()) return "account 'root' cannot have a parent";
      continue;
    }
    if (!parent.emplace(a.name, a.parent).second) return "account '" + a.name + "' is defined twice";
  }
  for (const auto& [name, up] : parent) {
    if (up != "root" && !parent.count(up)) return "account '" + name + "' names unknown parent '" + up + "'";
    std::set<std::string> seen{name};
    for (std::string at = up; at != "root"; at = parent.at(at))
      if (!seen.insert(at).second) return "account '" + name + "' is part of a cycle";
  }
  return "";
}

}  // namespace baton::core
