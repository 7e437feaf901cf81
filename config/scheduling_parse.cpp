#include "config/scheduling_parse.hpp"

#include <cmath>

#include "config/yaml_read.hpp"

namespace baton::config::detail {
namespace {

constexpr double us_per_second = 1e6;

// A name for a partition, QOS, account or user: what a job may name and a URL may carry.
void check_name(const std::string& key, const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
  if (!ok) throw key_error{key, "expected a name of 1..64 letters, digits, '.', '_' or '-', got '" + name + "'"};
}

uint32_t read_u32(const YAML::Node& map, const std::string& prefix, const std::string& key, int lo, int hi, uint32_t dflt) {
  int v = static_cast<int>(dflt);
  read_int(map, prefix, key, lo, hi, v);
  return static_cast<uint32_t>(v);
}

core::time_us read_seconds_us(const YAML::Node& map, const std::string& prefix, const std::string& key, double lo,
                              double hi, double per_unit, core::time_us dflt) {
  double v = static_cast<double>(dflt) / (per_unit * us_per_second);
  read_double(map, prefix, key, lo, hi, v);
  return static_cast<core::time_us>(std::llround(v * per_unit * us_per_second));
}

}  // namespace

void parse_scheduling(const YAML::Node& n, core::priority_policy& p) {
  const std::string at = "scheduling";
  check_known_keys(n, at,
                   {"policy", "priority_calc_period_seconds", "priority_max_age_days", "decay_half_life_days",
                    "favor_small", "weights", "lattice_weights", "lattice_reference_wait_seconds", "partitions",
                    "default_partition", "qos", "default_qos", "default_account", "max_jobs_per_user",
                    "kill_invalid_dependencies", "energy_prices"});
  if (auto w = n["lattice_weights"]) {
    if (!w.IsSequence() || w.size() != 9)
      throw key_error{at + ".lattice_weights", "expected a list of 9 numbers (w1..w9), got " + describe(w)};
    core::lattice_weights lw{};
    for (size_t i = 0; i < 9; ++i) {
      YAML::Node holder;
      holder["w"] = w[i];
      read_double(holder, at + ".lattice_weights[" + std::to_string(i) + "]", "w", 0, 1e6, lw[i]);
    }
    p.custom_weights = lw;
  }
  std::string policy = core::policy_name(p);
  read_string(n, at, "policy", policy);
  if (!core::set_policy_name(p, policy))
    throw key_error{at + ".policy",
                    "expected fifo, multifactor, lattice:<profile> (balanced, hpc_batch, ml_training, service, "
                    "sensitive, interactive) or lattice:custom, got '" + policy + "'"};
  p.calc_period = read_seconds_us(n, at, "priority_calc_period_seconds", 1, 86400, 1, p.calc_period);
  p.multifactor.max_age = read_seconds_us(n, at, "priority_max_age_days", 0.001, 365, 86400, p.multifactor.max_age);
  p.decay_half_life = read_seconds_us(n, at, "decay_half_life_days", 0, 3650, 86400, p.decay_half_life);
  read_bool(n, at, "favor_small", p.multifactor.favor_small);
  double ref = p.lattice_reference_wait_seconds;
  read_double(n, at, "lattice_reference_wait_seconds", 1, 1e9, ref);
  p.lattice_reference_wait_seconds = ref;
  if (auto w = n["weights"]) {
    std::string wk = at + ".weights";
    check_known_keys(w, wk, {"age", "fairshare", "job_size", "partition", "qos"});
    auto& mw = p.multifactor.weights;
    // Slurm's weights are uint32; the sum of all must stay below 2^32 (the priority's range).
    mw.age = read_u32(w, wk, "age", 0, 1000000000, mw.age);
    mw.fairshare = read_u32(w, wk, "fairshare", 0, 1000000000, mw.fairshare);
    mw.job_size = read_u32(w, wk, "job_size", 0, 1000000000, mw.job_size);
    mw.partition = read_u32(w, wk, "partition", 0, 1000000000, mw.partition);
    mw.qos = read_u32(w, wk, "qos", 0, 1000000000, mw.qos);
  }
  if (auto parts = n["partitions"]) {
    std::string pk = at + ".partitions";
    if (!parts.IsMap() || parts.size() == 0) throw key_error{pk, "expected a map of partition names, got " + describe(parts)};
    p.partitions.clear();
    for (const auto& kv : parts) {
      auto name = kv.first.as<std::string>();
      std::string key = pk + "." + name;
      check_name(key, name);
      core::partition_def d{name, 1, 1};
      if (!kv.second.IsNull()) {
        check_known_keys(kv.second, key, {"priority_tier", "priority_factor"});
        read_int(kv.second, key, "priority_tier", 0, 65533, d.priority_tier);
        read_double(kv.second, key, "priority_factor", 0, 65533, d.priority_factor);
      }
      p.partitions.push_back(d);
    }
    if (!p.partition(p.default_partition)) p.default_partition = p.partitions.front().name;
  }
  read_string(n, at, "default_partition", p.default_partition);
  if (auto qs = n["qos"]) {
    std::string qk = at + ".qos";
    if (!qs.IsMap() || qs.size() == 0) throw key_error{qk, "expected a map of QOS names, got " + describe(qs)};
    p.qos.clear();
    for (const auto& kv : qs) {
      auto name = kv.first.as<std::string>();
      std::string key = qk + "." + name;
      check_name(key, name);
      core::qos_def d{name, 0, 0};
      if (!kv.second.IsNull()) {
        check_known_keys(kv.second, key, {"priority_factor", "max_running_per_user"});
        read_double(kv.second, key, "priority_factor", 0, 1e9, d.priority_factor);
        d.max_running_per_user = read_u32(kv.second, key, "max_running_per_user", 0, 1000000000, 0);
      }
      p.qos.push_back(d);
    }
    if (!p.find_qos(p.default_qos)) p.default_qos = p.qos.front().name;
  }
  read_string(n, at, "default_qos", p.default_qos);
  read_string(n, at, "default_account", p.default_account);
  p.max_jobs_per_user = read_u32(n, at, "max_jobs_per_user", 1, 100000000, p.max_jobs_per_user);
  read_bool(n, at, "kill_invalid_dependencies", p.kill_invalid_dependencies);
  if (auto e = n["energy_prices"]) {
    if (!e.IsSequence() || e.size() != 24)
      throw key_error{at + ".energy_prices", "expected 24 prices, one per hour of the day (UTC), got " + describe(e)};
    p.energy_prices.assign(24, 0);
    for (size_t i = 0; i < 24; ++i) {
      YAML::Node holder;
      holder["price"] = e[i];
      read_double(holder, at + ".energy_prices[" + std::to_string(i) + "]", "price", 0, 1e9, p.energy_prices[i]);
    }
  }
}

void parse_accounts(const YAML::Node& n, core::priority_policy& p) {
  if (!n.IsMap()) throw key_error{"accounts", "expected a map of account names, got " + describe(n)};
  p.accounts.clear();
  for (const auto& kv : n) {
    auto name = kv.first.as<std::string>();
    std::string key = "accounts." + name;
    check_name(key, name);
    core::account_def a;
    a.name = name;
    if (!kv.second.IsNull()) {
      check_known_keys(kv.second, key, {"parent", "shares", "users"});
      read_string(kv.second, key, "parent", a.parent);
      a.shares = read_u32(kv.second, key, "shares", 1, 1000000000, 1);
      if (auto users = kv.second["users"]) {
        std::string uk = key + ".users";
        if (!users.IsMap()) throw key_error{uk, "expected a map of user: shares, got " + describe(users)};
        for (const auto& u : users) {
          auto user = u.first.as<std::string>();
          check_name(uk + "." + user, user);
          YAML::Node holder;
          holder["shares"] = u.second;
          a.users[user] = read_u32(holder, uk + "." + user, "shares", 1, 1000000000, 1);
        }
      }
    }
    if (name == "root" && kv.second["parent"]) throw key_error{key + ".parent", "the root account has no parent"};
    p.accounts.push_back(std::move(a));
  }
  if (auto why = core::check_account_tree(p.accounts); !why.empty()) throw key_error{"accounts", why};
}

void check_scheduling(const core::priority_policy& p) {
  if (!p.partition(p.default_partition))
    throw key_error{"scheduling.default_partition", "names no partition in scheduling.partitions: '" + p.default_partition + "'"};
  if (!p.find_qos(p.default_qos))
    throw key_error{"scheduling.default_qos", "names no QOS in scheduling.qos: '" + p.default_qos + "'"};
  if (p.default_account != "root" && !p.account(p.default_account))
    throw key_error{"scheduling.default_account", "names no account in accounts: '" + p.default_account + "'"};
}

}  // namespace baton::config::detail
