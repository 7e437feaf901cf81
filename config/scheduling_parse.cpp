#include "config/scheduling_parse.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "config/yaml_read.hpp"

namespace baton::config::detail {
namespace {

constexpr double us_per_second = 1e6;

// A name for a partition, QOS, account or user: what a job may name and a URL may carry.
void check_name(const std::string& key, const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 &&
            name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
  if (!ok) throw key_error{key, "expected a name of 1..64 letters, digits, '.', '_' or '-', got '" + name + "'"};
}

// read_int for a field of another integer type: the value read, or dflt when the key is absent.
template <class T>
T read_int_as(const YAML::Node& map, const std::string& prefix, const std::string& key, int lo, int hi, T dflt) {
  int v = static_cast<int>(dflt);
  read_int(map, prefix, key, lo, hi, v);
  return static_cast<T>(v);
}

core::time_us read_seconds_us(const YAML::Node& map, const std::string& prefix, const std::string& key, double lo, double hi,
                              double per_unit, core::time_us dflt) {
  double v = static_cast<double>(dflt) / (per_unit * us_per_second);
  read_double(map, prefix, key, lo, hi, v);
  return static_cast<core::time_us>(std::llround(v * per_unit * us_per_second));
}

// Each entry of a map of names (partitions, QOS, accounts, users): its name checked, then
// fn(name, the entry's dotted key, its value).
template <class Fn>
void for_each_named(const YAML::Node& map, const std::string& key, const std::string& what, bool allow_empty, Fn fn) {
  if (!map.IsMap() || (!allow_empty && map.size() == 0))
    throw key_error{key, "expected a map of " + what + ", got " + describe(map)};
  check_unique_keys(map, key);
  for (const auto& kv : map) {
    auto name = kv.first.as<std::string>();
    std::string entry = key + "." + name;
    check_name(entry, name);
    fn(name, entry, kv.second);
  }
}

// A list of exactly n numbers in lo..hi; an element's error names it as <key>[i].<element>.
std::vector<double> read_numbers(const YAML::Node& list, const std::string& key, size_t n, double lo, double hi,
                                 const std::string& what, const std::string& element) {
  if (!list.IsSequence() || list.size() != n) throw key_error{key, "expected " + what + ", got " + describe(list)};
  std::vector<double> out(n, 0);
  for (size_t i = 0; i < n; ++i) {
    YAML::Node holder;  // read_double reads a key of a map
    holder[element] = list[i];
    read_double(holder, key + "[" + std::to_string(i) + "]", element, lo, hi, out[i]);
  }
  return out;
}

}  // namespace

void parse_scheduling(const YAML::Node& n, core::priority_policy& p) {
  const std::string at = "scheduling";
  check_known_keys(n, at,
                   {"policy",
                    "priority_calc_period_seconds",
                    "priority_max_age_days",
                    "decay_half_life_days",
                    "favor_small",
                    "weights",
                    "lattice_weights",
                    "lattice_reference_wait_seconds",
                    "partitions",
                    "default_partition",
                    "qos",
                    "default_qos",
                    "default_account",
                    "max_jobs_per_user",
                    "kill_invalid_dependencies",
                    "energy_prices",
                    "default_time_limit_seconds",
                    "min_useful_seconds",
                    "backfill",
                    "preempt_grace_seconds"});
  if (auto w = n["lattice_weights"]) {
    auto values = read_numbers(w, at + ".lattice_weights", 9, 0, 1e6, "a list of 9 numbers (w1..w9)", "w");
    core::lattice_weights lw{};
    std::copy(values.begin(), values.end(), lw.begin());
    p.custom_weights = lw;
  }
  std::string policy = core::policy_name(p);
  read_string(n, at, "policy", policy);
  if (!core::set_policy_name(p, policy))
    throw key_error{at + ".policy",
                    "expected fifo, multifactor, lattice:<profile> (balanced, hpc_batch, ml_training, service, "
                    "sensitive, interactive) or lattice:custom, got '" +
                        policy + "'"};
  p.calc_period = read_seconds_us(n, at, "priority_calc_period_seconds", 1, 86400, 1, p.calc_period);
  p.multifactor.max_age = read_seconds_us(n, at, "priority_max_age_days", 0.001, 365, 86400, p.multifactor.max_age);
  p.decay_half_life = read_seconds_us(n, at, "decay_half_life_days", 0, 3650, 86400, p.decay_half_life);
  read_bool(n, at, "favor_small", p.multifactor.favor_small);
  read_double(n, at, "lattice_reference_wait_seconds", 1, 1e9, p.lattice_reference_wait_seconds);
  if (auto w = n["weights"]) {
    std::string wk = at + ".weights";
    check_known_keys(w, wk, {"age", "fairshare", "job_size", "partition", "qos"});
    auto& mw = p.multifactor.weights;
    // Slurm's weights are uint32; the sum of all must stay below 2^32 (the priority's range).
    mw.age = read_int_as(w, wk, "age", 0, 1000000000, mw.age);
    mw.fairshare = read_int_as(w, wk, "fairshare", 0, 1000000000, mw.fairshare);
    mw.job_size = read_int_as(w, wk, "job_size", 0, 1000000000, mw.job_size);
    mw.partition = read_int_as(w, wk, "partition", 0, 1000000000, mw.partition);
    mw.qos = read_int_as(w, wk, "qos", 0, 1000000000, mw.qos);
  }
  if (auto parts = n["partitions"]) {
    p.partitions.clear();
    for_each_named(parts, at + ".partitions", "partition names", false,
                   [&](const std::string& name, const std::string& key, const YAML::Node& v) {
                     core::partition_def d{name, 1, 1};
                     if (!v.IsNull()) {
                       check_known_keys(v, key, {"priority_tier", "priority_factor", "preempt"});
                       read_int(v, key, "priority_tier", 0, 65533, d.priority_tier);
                       read_double(v, key, "priority_factor", 0, 65533, d.priority_factor);
                       read_string_list(v, key, "preempt", d.preempt);
                     }
                     p.partitions.push_back(d);
                   });
    if (!p.partition(p.default_partition)) p.default_partition = p.partitions.front().name;
  }
  read_string(n, at, "default_partition", p.default_partition);
  if (auto qs = n["qos"]) {
    p.qos.clear();
    for_each_named(qs, at + ".qos", "QOS names", false,
                   [&](const std::string& name, const std::string& key, const YAML::Node& v) {
                     core::qos_def d{name, 0, 0};
                     if (!v.IsNull()) {
                       check_known_keys(v, key, {"priority_factor", "max_running_per_user", "preempt"});
                       read_double(v, key, "priority_factor", 0, 1e9, d.priority_factor);
                       d.max_running_per_user = read_int_as<uint32_t>(v, key, "max_running_per_user", 0, 1000000000, 0);
                       read_string_list(v, key, "preempt", d.preempt);
                     }
                     p.qos.push_back(d);
                   });
    if (!p.find_qos(p.default_qos)) p.default_qos = p.qos.front().name;
  }
  read_string(n, at, "default_qos", p.default_qos);
  read_string(n, at, "default_account", p.default_account);
  p.max_jobs_per_user = read_int_as(n, at, "max_jobs_per_user", 1, 100000000, p.max_jobs_per_user);
  read_bool(n, at, "kill_invalid_dependencies", p.kill_invalid_dependencies);
  if (auto e = n["energy_prices"])
    p.energy_prices = read_numbers(e, at + ".energy_prices", 24, 0, 1e9, "24 prices, one per hour of the day (UTC)", "price");
  p.preempt_grace_seconds =
      read_int_as(n, at, "preempt_grace_seconds", 0, core::priority_policy::max_preempt_grace_seconds, p.preempt_grace_seconds);
}

namespace {

// A preempt list names others of its kind (partitions or QOS), never itself.
template <class Defs, class Find>
void check_preempt_lists(const Defs& defs, const std::string& section, const std::string& what, Find find) {
  for (const auto& d : defs)
    for (size_t i = 0; i < d.preempt.size(); ++i) {
      std::string key = "scheduling." + section + "." + d.name + ".preempt[" + std::to_string(i) + "]";
      if (d.preempt[i] == d.name) throw key_error{key, "a " + what + " cannot preempt itself"};
      if (!find(d.preempt[i]))
        throw key_error{key, "names no " + what + " in scheduling." + section + ": '" + d.preempt[i] + "'"};
    }
}

}  // namespace

void parse_deadline_rule(const YAML::Node& n, core::deadline_rule& out) {
  constexpr int max_seconds = 366 * 86400;  // as a job's time_limit_seconds
  out.default_time_limit_seconds =
      read_int_as(n, "scheduling", "default_time_limit_seconds", 1, max_seconds, out.default_time_limit_seconds);
  out.min_useful_seconds = read_int_as(n, "scheduling", "min_useful_seconds", 1, max_seconds, out.min_useful_seconds);
}

void parse_backfill(const YAML::Node& sched, core::backfill_settings& out) {
  auto n = sched["backfill"];
  if (!n) return;
  const std::string at = "scheduling.backfill";
  check_known_keys(n, at,
                   {"bf_interval_seconds", "bf_window_minutes", "bf_max_job_test", "bf_max_job_user", "bf_max_job_part",
                    "bf_max_probes", "placeholder_start_estimate_seconds"});
  constexpr core::time_us second = 1'000'000;
  int interval = static_cast<int>(out.interval / second), window = static_cast<int>(out.limits.bf_window / (60 * second));
  int estimate = static_cast<int>(out.placeholder_start_estimate / second), probes = static_cast<int>(out.limits.work_budget);
  read_int(n, at, "bf_interval_seconds", 1, 86400, interval);
  read_int(n, at, "bf_window_minutes", 1, 525600, window);
  read_int(n, at, "placeholder_start_estimate_seconds", 0, 30 * 86400, estimate);
  read_int(n, at, "bf_max_probes", 0, 2000000000, probes);
  out.interval = interval * second;
  out.limits.bf_window = window * 60 * second;
  out.placeholder_start_estimate = estimate * second;
  out.limits.work_budget = static_cast<uint64_t>(probes);
  out.limits.bf_max_job_test = read_int_as(n, at, "bf_max_job_test", 0, 1000000, out.limits.bf_max_job_test);
  out.limits.bf_max_job_user = read_int_as(n, at, "bf_max_job_user", 0, 1000000, out.limits.bf_max_job_user);
  out.limits.bf_max_job_part = read_int_as(n, at, "bf_max_job_part", 0, 1000000, out.limits.bf_max_job_part);
}

void parse_accounts(const YAML::Node& n, core::priority_policy& p) {
  p.accounts.clear();
  for_each_named(n, "accounts", "account names", true, [&](const std::string& name, const std::string& key, const YAML::Node& v) {
    core::account_def a;
    a.name = name;
    if (!v.IsNull()) {
      check_known_keys(v, key, {"parent", "shares", "users"});
      read_string(v, key, "parent", a.parent);
      a.shares = read_int_as<uint32_t>(v, key, "shares", 1, 1000000000, 1);
      if (auto users = v["users"])
        for_each_named(users, key + ".users", "user: shares", true,
                       [&](const std::string& user, const std::string& user_key, const YAML::Node& shares) {
                         YAML::Node holder;  // read_int reads a key of a map
                         holder["shares"] = shares;
                         a.users[user] = read_int_as<uint32_t>(holder, user_key, "shares", 1, 1000000000, 1);
                       });
    }
    if (name == "root" && v["parent"]) throw key_error{key + ".parent", "the root account has no parent"};
    p.accounts.push_back(std::move(a));
  });
  if (auto why = core::check_account_tree(p.accounts); !why.empty()) throw key_error{"accounts", why};
}

void check_scheduling(const core::priority_policy& p) {
  if (!p.partition(p.default_partition))
    throw key_error{"scheduling.default_partition", "names no partition in scheduling.partitions: '" + p.default_partition + "'"};
  if (!p.find_qos(p.default_qos))
    throw key_error{"scheduling.default_qos", "names no QOS in scheduling.qos: '" + p.default_qos + "'"};
  if (p.default_account != "root" && !p.account(p.default_account))
    throw key_error{"scheduling.default_account", "names no account in accounts: '" + p.default_account + "'"};
  check_preempt_lists(p.partitions, "partitions", "partition", [&](const std::string& n) { return p.partition(n); });
  check_preempt_lists(p.qos, "qos", "QOS", [&](const std::string& n) { return p.find_qos(n); });
}

}  // namespace baton::config::detail
