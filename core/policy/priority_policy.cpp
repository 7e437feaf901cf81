#include "core/policy/priority_policy.hpp"
#include "core/events/payload_numbers.hpp"

#include <algorithm>
#include <set>

namespace baton::core {

using json = nlohmann::json;

const partition_def* priority_policy::partition(const std::string& name) const {
  for (const auto& p : partitions)
    if (p.name == name) return &p;
  return nullptr;
}

const qos_def* priority_policy::find_qos(const std::string& name) const {
  for (const auto& q : qos)
    if (q.name == name) return &q;
  return nullptr;
}

const account_def* priority_policy::account(const std::string& name) const {
  for (const auto& a : accounts)
    if (a.name == name) return &a;
  return nullptr;
}

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

json to_json(const priority_policy& p) {
  json j;
  j["policy"] = policy_name(p);
  if (p.custom_weights) j["lattice_weights"] = *p.custom_weights;
  j["lattice_reference_wait_seconds"] = p.lattice_reference_wait_seconds;
  const auto& w = p.multifactor.weights;
  j["weights"] = {
      {"age", w.age}, {"fairshare", w.fairshare}, {"job_size", w.job_size}, {"partition", w.partition}, {"qos", w.qos}};
  j["max_age_us"] = p.multifactor.max_age;
  j["favor_small"] = p.multifactor.favor_small;
  j["decay_half_life_us"] = p.decay_half_life;
  j["calc_period_us"] = p.calc_period;
  json parts = json::array();
  for (const auto& x : p.partitions) {
    parts.push_back({{"name", x.name}, {"priority_tier", x.priority_tier}, {"priority_factor", x.priority_factor}});
    if (!x.preempt.empty()) parts.back()["preempt"] = x.preempt;  // only when set: older records stay equal
  }
  j["partitions"] = std::move(parts);
  j["default_partition"] = p.default_partition;
  json qs = json::array();
  for (const auto& q : p.qos) {
    qs.push_back({{"name", q.name}, {"priority_factor", q.priority_factor}, {"max_running_per_user", q.max_running_per_user}});
    if (!q.preempt.empty()) qs.back()["preempt"] = q.preempt;
  }
  j["qos"] = std::move(qs);
  j["default_qos"] = p.default_qos;
  json accts = json::array();
  for (const auto& a : p.accounts)
    accts.push_back({{"name", a.name}, {"parent", a.parent}, {"shares", a.shares}, {"users", a.users}});
  j["accounts"] = std::move(accts);
  j["default_account"] = p.default_account;
  j["max_jobs_per_user"] = p.max_jobs_per_user;
  // Only when off: policies recorded before the key existed must re-derive byte for byte.
  if (!p.kill_invalid_dependencies) j["kill_invalid_dependencies"] = false;
  if (!p.energy_prices.empty()) j["energy_prices"] = p.energy_prices;  // only when set: older records stay equal
  if (p.preemption_configured()) j["preempt_grace_seconds"] = p.preempt_grace_seconds;
  if (p.offered_gpu_count) j["offered_gpu_count"] = p.offered_gpu_count;           // only when set: older records stay equal
  if (p.offered_wall_seconds) j["offered_wall_seconds"] = p.offered_wall_seconds;  // likewise
  return j;
}

priority_policy policy_from_json(const json& j) {
  priority_policy p;
  if (j.contains("lattice_weights")) p.custom_weights = j["lattice_weights"].get<lattice_weights>();
  set_policy_name(p, j.value("policy", "multifactor"));
  p.lattice_reference_wait_seconds = number_or(j, "lattice_reference_wait_seconds", p.lattice_reference_wait_seconds);
  if (auto it = j.find("weights"); it != j.end()) {
    auto& w = p.multifactor.weights;
    w.age = number_or(*it, "age", w.age);
    w.fairshare = number_or(*it, "fairshare", w.fairshare);
    w.job_size = number_or(*it, "job_size", w.job_size);
    w.partition = number_or(*it, "partition", w.partition);
    w.qos = number_or(*it, "qos", w.qos);
  }
  p.multifactor.max_age = number_or(j, "max_age_us", p.multifactor.max_age);
  p.multifactor.favor_small = j.value("favor_small", p.multifactor.favor_small);
  p.decay_half_life = number_or(j, "decay_half_life_us", p.decay_half_life);
  p.calc_period = number_or(j, "calc_period_us", p.calc_period);
  if (auto it = j.find("partitions"); it != j.end()) {
    p.partitions.clear();
    for (const auto& x : *it)
      p.partitions.push_back({x.value("name", ""), number_or(x, "priority_tier", 1), x.value("priority_factor", 1.0),
                              x.value("preempt", std::vector<std::string>{})});
  }
  p.default_partition = j.value("default_partition", p.default_partition);
  if (auto it = j.find("qos"); it != j.end()) {
    p.qos.clear();
    for (const auto& q : *it)
      p.qos.push_back({q.value("name", ""), q.value("priority_factor", 0.0), number_or(q, "max_running_per_user", 0u),
                       q.value("preempt", std::vector<std::string>{})});
  }
  p.default_qos = j.value("default_qos", p.default_qos);
  if (auto it = j.find("accounts"); it != j.end())
    for (const auto& a : *it)
      p.accounts.push_back({a.value("name", ""), a.value("parent", "root"), number_or(a, "shares", 1u),
                            a.value("users", std::map<std::string, uint32_t>{})});
  p.default_account = j.value("default_account", p.default_account);
  p.max_jobs_per_user = number_or(j, "max_jobs_per_user", p.max_jobs_per_user);
  p.kill_invalid_dependencies = j.value("kill_invalid_dependencies", p.kill_invalid_dependencies);
  p.energy_prices = j.value("energy_prices", std::vector<double>{});
  p.preempt_grace_seconds = number_or(j, "preempt_grace_seconds", p.preempt_grace_seconds);
  p.offered_gpu_count = number_or(j, "offered_gpu_count", 0u);
  p.offered_wall_seconds = number_or(j, "offered_wall_seconds", int64_t{0});
  return p;
}

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
