#include "core/world/priority.hpp"
#include "core/util/time.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/world/dag.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/events/streams.hpp"
#include "core/policy/usage.hpp"

namespace baton::core {

namespace {

constexpr int64_t default_estimate_seconds = 3600;  // a job without a time limit counts as one hour of backlog

double ratio(double x, double of) { return of > 0 ? x / of : 0; }

// The recorded fair-share figures of the job's association, if any (its key read from the
// job's slots when a world holds it, else built).
auto share_of(const priority_state& st, const job& j) {
  return j.slots.group ? st.shares.find(*j.slots.group->association) : st.shares.find(association_of(j));
}

lattice_inputs lattice_inputs_of(const world& w, const priority_state& st, const job& j) {
  const auto& pol = st.policy;
  lattice_inputs in;
  const qos_def* q = pol.find_qos(j.qos);
  // f1: the QOS is the priority class a user picks; its factor relative to the highest, on 0..10.
  in.priority_class = 10 * ratio(q ? q->priority_factor : 0, pol.max_qos_factor());
  in.wait_seconds = accrued_at(j, st.calculated_at) / 1e6;
  in.reference_wait_seconds = pol.lattice_reference_wait_seconds;
  if (auto it = share_of(st, j); it != st.shares.end()) {
    in.target_share = it->second.target;
    in.actual_share = it->second.actual;
  }
  // f4: how tightly the request fits the smallest worker of its image able to hold it.
  in.topology_fitness = 0;
  if (auto g = w.worker_gpus_by_image.find(j.worker_image_key); g != w.worker_gpus_by_image.end()) {
    auto fit = g->second.lower_bound(static_cast<int>(j.gpu_count));
    if (fit != g->second.end() && *fit > 0) in.topology_fitness = static_cast<double>(j.gpu_count) / *fit;
  }
  // f5: a job with a checkpoint resumes warm; one without is unknown (neutral).
  in.data_readiness = j.latest_checkpoint_manifest_path.empty() ? 0.5 : 1.0;
  in.queued_gpu_hours = st.backlog;  // f6 is global: the ratio was taken at the recalculation
  in.running_gpu_hours = 1;
  // f7: the price in the hour of the recalculation (UTC) over the day's highest; neutral without a schedule.
  in.normalized_energy_price = 0.5;
  if (pol.energy_prices.size() == 24) {
    double top = *std::max_element(pol.energy_prices.begin(), pol.energy_prices.end());
    auto hour = static_cast<size_t>((st.calculated_at / 3'600'000'000LL) % 24);
    in.normalized_energy_price = top > 0 ? pol.energy_prices[hour] / top : 0;
  }
  // f8: the last checkpoint its worker measured; unknown (0.5) before its first.
  if (j.checkpoint_seconds) in.checkpoint_minutes = *j.checkpoint_seconds / 60;
  // f9: a job runs on one worker at a time, and its workers over time conform by the hard
  // filter (core/world/scheduling.cpp's can_run): always 1.
  in.conformance = 1;
  return in;
}

}  // namespace

std::string association_of(const std::string& account, const std::string& user) {
  return (account.empty() ? "root" : account) + "/" + (user.empty() ? "admin" : user);
}

std::string association_of(const job& j) { return association_of(j.account, j.user); }

double usage_at(const world& w, const std::string& association, time_us at) {
  auto it = w.usage.find(association);
  if (it == w.usage.end()) return 0;
  const auto& u = it->second;
  time_us half_life = w.priority.policy.decay_half_life;
  double total = decay(u.closed, u.as_of, std::max(at, u.as_of), half_life);
  for (const auto& [id, open] : u.running) total += decayed_gpu_seconds(open.gpus, open.started_at, at, at, half_life);
  return total;
}

share_node share_tree(const world& w, const priority_policy& policy, time_us at) {
  std::map<std::string, share_node> accounts;  // every account but root
  std::map<std::string, std::string> parent_of;
  share_node root;
  root.name = "root";
  for (const auto& a : policy.accounts) {
    if (a.name != "root") {
      auto& n = accounts[a.name];
      n.name = a.name;
      n.raw_shares = a.shares;
      parent_of[a.name] = a.parent.empty() ? "root" : a.parent;
    }
    auto& holder = a.name == "root" ? root : accounts[a.name];
    for (const auto& [user, shares] : a.users) {
      share_node leaf;
      leaf.name = user;
      leaf.user = true;
      leaf.raw_shares = shares;
      leaf.raw_usage = usage_at(w, association_of(a.name, user), at);
      holder.children.push_back(std::move(leaf));
    }
  }
  // Associations seen in jobs but not configured: under their account (or root), 1 share.
  for (const auto& [assoc, u] : w.usage) {
    auto slash = assoc.find('/');
    std::string account = assoc.substr(0, slash), user = assoc.substr(slash + 1);
    const account_def* def = policy.account(account);
    if (def && def->users.count(user)) continue;
    if (account != "root" && !accounts.count(account)) {
      accounts[account].name = account;
      parent_of[account] = "root";
    }
    share_node leaf;
    leaf.name = user;
    leaf.user = true;
    leaf.raw_usage = usage_at(w, assoc, at);
    (account == "root" ? root : accounts[account]).children.push_back(std::move(leaf));
  }
  // Assemble children before parents: deepest first, by walking each account's depth.
  auto depth = [&](std::string name) {
    int d = 0;
    while (name != "root" && d <= static_cast<int>(parent_of.size())) name = parent_of[name], ++d;
    return d;
  };
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [name, n] : accounts) order.push_back({-depth(name), name});
  std::sort(order.begin(), order.end());
  for (const auto& [d, name] : order) {
    const std::string& up = parent_of[name];
    auto& target = up == "root" ? root : accounts[up];
    target.children.push_back(std::move(accounts[name]));
  }
  return root;
}

std::string policy_in_force(const world& w) { return w.priority.recorded ? policy_name(w.priority.policy) : "fifo"; }

priority_explained explain_priority(const world& w, const job& j) { return explain_priority(w, w.priority, j); }

namespace {

// explain_priority, and set_priority without the policy's name (a string built for every new
// job and every queued job at a recalculation, which only an explanation shows).
priority_explained explained(const world& w, const priority_state& st, const job& j, bool with_policy_name) {
  const auto& pol = st.policy;
  priority_explained out;
  out.calculated_at = st.calculated_at;
  if (with_policy_name) out.policy = st.recorded ? policy_name(pol) : "fifo";
  if (!st.recorded) return out;
  const partition_def* part = pol.partition(j.partition);
  out.tier = part ? part->priority_tier : 0;
  out.preemptor = pol.may_preempt_any(j.partition, j.qos);
  if (pol.kind == policy_kind::fifo) return out;
  if (pol.kind == policy_kind::multifactor) {
    multifactor_inputs in;
    in.accrued_age = accrued_at(j, st.calculated_at);
    if (auto it = share_of(st, j); it != st.shares.end()) in.fair_share = it->second.fair_share;
    in.gpu_count = j.gpu_count;
    in.max_gpu_count = std::max(st.max_gpu_count, 1u);
    in.partition_factor = part ? part->priority_factor : 0;
    in.max_partition_factor = pol.max_partition_factor();
    const qos_def* q = pol.find_qos(j.qos);
    in.qos_factor = q ? q->priority_factor : 0;
    in.max_qos_factor = pol.max_qos_factor();
    in.nice = j.nice;
    out.multifactor = multifactor_priority(in, pol.multifactor);
    out.priority = out.multifactor.priority;
  } else {
    const auto& weights = pol.custom_weights ? *pol.custom_weights : weights_of(pol.profile);
    out.lattice = lattice_score(lattice_inputs_of(w, st, j), weights);
    out.priority = std::llround(out.lattice.score * lattice_priority_scale);
  }
  return out;
}

}  // namespace

priority_explained explain_priority(const world& w, const priority_state& st, const job& j) { return explained(w, st, j, true); }

void set_priority(const world& w, job& j) {
  auto e = explained(w, w.priority, j, false);
  j.priority_tier = e.tier;
  j.preemptor = e.preemptor;
  j.priority = e.priority;
}

decision decide_recalculation(const world& w, const priority_policy& policy, time_us now) {
  // Figures are recorded as changes against the latest recalculation, in force or pending.
  const priority_state& base = w.priority_pending ? *w.priority_pending : w.priority;
  auto rows = fair_tree(share_tree(w, policy, now));
  // Target share of a user: the product of normalised shares down its path; actual: its
  // share of all usage. The path is the policy's account tree: the rows' order cannot give it,
  // since tied sibling accounts list their rows first and their merged children after.
  double total_usage = 0;
  std::map<std::string, double> account_norm;
  for (const auto& r : rows) {
    if (r.depth == 0) total_usage += r.raw_usage;
    if (r.user.empty()) account_norm[r.account] = r.norm_shares;
  }
  std::map<std::string, std::string> parent_of;
  for (const auto& a : policy.accounts) parent_of[a.name] = a.parent;
  std::map<std::string, double> account_target{{"root", 1.0}};
  std::function<double(const std::string&, int)> target_of = [&](const std::string& account, int depth) -> double {
    if (auto it = account_target.find(account); it != account_target.end()) return it->second;
    auto parent = parent_of.find(account);
    const double above = depth > 64 || parent == parent_of.end()
                             ? 1.0
                             : target_of(parent->second, depth + 1);  // (a cycle is refused by the config)
    auto norm = account_norm.find(account);
    return account_target[account] = above * (norm == account_norm.end() ? 0.0 : norm->second);
  };
  ev::priorities_recalculated e;
  std::set<std::string> present;
  for (const auto& r : rows) {
    if (r.user.empty()) continue;
    const double target = target_of(r.depth == 0 ? "root" : r.account, 0) * r.norm_shares;
    auto assoc = association_of(r.depth == 0 ? "root" : r.account, r.user);
    present.insert(assoc);
    priority_state::share s{r.fair_share, r.level_fs, target, ratio(r.raw_usage, total_usage), r.raw_usage};
    auto old = base.shares.find(assoc);
    bool same = old != base.shares.end() && old->second.fair_share == s.fair_share && old->second.target == s.target &&
                old->second.actual == s.actual && old->second.usage == s.usage &&
                (old->second.level_fs == s.level_fs || (std::isinf(old->second.level_fs) && std::isinf(s.level_fs)));
    if (!same) {
      ev::share_row row;
      row.actual = s.actual;
      row.fair_share = s.fair_share;
      if (std::isfinite(s.level_fs)) row.level_fs = s.level_fs;  // null: infinite
      row.target = s.target;
      row.usage = s.usage;
      e.shares.insert_or_assign(std::move(assoc), row);
    }
  }
  for (const auto& [assoc, s] : base.shares)
    if (!present.count(assoc)) e.removed.push_back(assoc);
  // Job size is normalised by the largest worker the sites offer: the configured clusters'
  // (recorded with the policy) and every worker ever registered, gone ones too (workers stay
  // in the world), not only those registered at this instant (none, at start-up).
  uint32_t max_gpus = std::max<uint32_t>(1, policy.offered_gpu_count);
  for (const auto& [id, wk] : w.workers)
    if (!wk.placeholder && wk.gpu_count > 0) max_gpus = std::max<uint32_t>(max_gpus, static_cast<uint32_t>(wk.gpu_count));
  // Lattice f6: queued GPU-hours (time limits, one hour when absent) over running GPU-hours.
  // Only Lattice reads it (a walk over the whole queue).
  double queued_h = 0, running_h = 0;
  auto gpu_hours = [](const job& j) {
    return j.gpu_count * static_cast<double>(j.time_limit_seconds.value_or(default_estimate_seconds)) / 3600;
  };
  if (policy.kind == policy_kind::lattice) {
    for (const auto& [image, keys] : w.queued_by_image)
      for (const auto& k : keys) queued_h += gpu_hours(*k.owner);
    w.job_of_worker.for_each([&](const std::string&, const std::string& job_id) { running_h += gpu_hours(*w.find_job(job_id)); });
  }
  double backlog = running_h > 0 ? std::min(1.0, queued_h / running_h) : (queued_h > 0 ? 1.0 : 0.0);
  // Under an unchanged policy the queue can keep its order while the new one is built:
  // deferred until scheduler.priorities_applied. A new policy is in force at once.
  e.policy = to_record(policy);
  std::string policy_bytes = events::to_cbor(*e.policy);
  e.deferred = base.recorded && base.policy_cbor == policy_bytes;
  e.max_gpu_count = max_gpus;
  e.backlog = backlog;
  return decision::of(scheduler_stream, std::move(e));
}

bool is_deferred(const decision& recalculation) {
  if (recalculation.events.size() != 1) return false;
  const auto* r = std::get_if<ev::priorities_recalculated>(&recalculation.events[0].payload);
  return r && r->deferred;
}

domain_event priorities_applied_event(time_us calculated_at) {
  return {scheduler_stream, ev::priorities_applied{util::format_time_us(calculated_at)}};
}

decision decide_priorities_applied(const world& w) {
  decision d;
  if (w.priority_pending) d.events.push_back(priorities_applied_event(w.priority_pending->calculated_at));
  return d;
}

bool policy_recorded(const world& w, const priority_policy& policy) {
  return w.priority.recorded && w.priority.policy_cbor == events::to_cbor(to_record(policy));
}

void record_recalculation(priority_state& st, const ev::priorities_recalculated& p, time_us at) {
  st.recorded = true;
  static const ev::policy_record no_policy;
  const ev::policy_record& policy = p.policy ? *p.policy : no_policy;
  std::string bytes = events::to_cbor(policy);
  if (bytes != st.policy_cbor) {  // usually the same one again: read only when it changed
    st.policy = policy_of(policy);
    st.policy_cbor = std::move(bytes);
  }
  st.calculated_at = at;
  // (level FS is infinite for an association without usage; JSON has no infinity: null)
  for (const auto& [assoc, s] : p.shares)
    st.shares[assoc] = {s.fair_share, s.level_fs.value_or(std::numeric_limits<double>::infinity()), s.target, s.actual, s.usage};
  for (const auto& assoc : p.removed) st.shares.erase(assoc);
  st.max_gpu_count = p.max_gpu_count;
  st.backlog = p.backlog;
}

std::string pending_reason(const world& w, const job& j) {
  if (j.status != job_status::queued) return "";
  if (j.held) return "JobHeld";
  // Asked of the parents, not j.blocked: a job about to be created is not in the world yet.
  switch (dependencies_state(w, j)) {
    case dependency_state::waiting:
      return "Dependency";
    case dependency_state::never:
      return "DependencyNeverSatisfied";
    case dependency_state::satisfied:
      break;
  }
  if (j.over_limit) return "QOSMaxJobsPerUserLimit";
  if (!cannot_run_reason(w, j).empty()) return "PartitionConfig";
  auto it = w.queued_by_image.find(j.worker_image_key);
  if (it == w.queued_by_image.end() || it->second.order_of_key(queue_key_of(j)) == 0) return "Resources";
  // Behind others, but the last plan found it a place (core/world/plan_cycle.hpp).
  return reservation_of(w, j.id) ? "Reservation" : "Priority";
}

std::string cannot_run_reason(const world& w, const job& j) {
  if (j.status != job_status::queued) return "";
  const auto& offered = w.priority.policy;
  // The largest worker a site offers: as configured, or as ever registered (gone ones too).
  uint32_t largest = std::max(offered.offered_gpu_count, w.largest_worker_gpus);
  if (largest > 0 && j.gpu_count > largest)
    return "gpu_count " + std::to_string(j.gpu_count) + " > largest offered " + std::to_string(largest);
  if (!j.checkpoints && j.time_limit_seconds && offered.offered_wall_seconds > 0 &&
      *j.time_limit_seconds > offered.offered_wall_seconds)
    return "time_limit_seconds " + std::to_string(*j.time_limit_seconds) + " > longest wall time " +
           std::to_string(offered.offered_wall_seconds) + " and the job does not checkpoint";
  return "";
}

std::vector<std::string> queue_in_evaluation_order(const world& w) {
  std::vector<queue_key> eligible, waiting;  // waiting: held or blocked by a dependency
  for (const auto& [key, owner] : w.queued) {
    const job& j = *owner;
    (j.held || j.blocked ? waiting : eligible).push_back(queue_key_of(j));
  }
  std::sort(eligible.begin(), eligible.end());
  std::sort(waiting.begin(), waiting.end());
  std::vector<std::string> out;
  out.reserve(eligible.size() + waiting.size());
  for (const auto* v : {&eligible, &waiting})
    for (const auto& k : *v) out.emplace_back(k.id);
  return out;
}

}  // namespace baton::core
