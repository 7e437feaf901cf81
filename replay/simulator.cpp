#include "replay/simulator.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <tuple>

#include "core/backfill.hpp"
#include "core/fair_tree.hpp"
#include "core/lattice.hpp"
#include "core/multifactor.hpp"
#include "core/usage.hpp"

namespace baton::replay {

using core::time_us;

namespace {

constexpr time_us us = 1'000'000;

// Fair share as the live scheduler keeps it (core/priority.cpp), for the trace's associations:
// each group an account of one share under root, each user one share under its group; usage is
// processor-seconds, decayed with the policy's half-life. An association joins the tree with
// its first job, as a site adds a user when they arrive (users still to come would otherwise
// all tie at the top of the ranking); a recalculation fills in usage and ranks the tree.
class share_book {
 public:
  using key = std::pair<int64_t, int64_t>;  // group, user

  share_book(const std::vector<sim_job>& jobs, time_us half_life, const std::map<int64_t, uint32_t>& group_shares,
             const std::map<key, uint32_t>& user_shares)
      : half_life_(half_life), group_shares_(group_shares), user_shares_(user_shares) {
    std::set<key> all;
    for (const auto& j : jobs) all.insert({j.group, j.user});
    for (const auto& k : all) index_of_.emplace(k, keys_.size()), keys_.push_back(k);  // (group, user) order
    closed_.resize(keys_.size());
    usage_.resize(keys_.size());
    present_.assign(keys_.size(), false);
  }

  size_t index(int64_t group, int64_t user) const { return index_of_.at({group, user}); }

  void join(size_t a) {
    if (present_[a]) return;
    present_[a] = true;
    shape_changed_ = true;
  }

  void close_segment(size_t a, int64_t procs, int64_t start, int64_t end) {
    auto& u = closed_[a];
    time_us e = end * us;
    u.usage = core::decay(u.usage, u.as_of, std::max(u.as_of, e), half_life_) +
              core::decayed_gpu_seconds(static_cast<int>(procs), start * us, e, e, half_life_);
    u.as_of = std::max(u.as_of, e);
  }

  struct figures {
    double fair_share = 0, target = 0, actual = 0;
  };
  // Every association's figures at `now`; open: the running jobs' (association, procs, start).
  const std::vector<figures>& at(int64_t now, const std::vector<std::tuple<size_t, int64_t, int64_t>>& open) {
    if (shape_changed_) rebuild();
    for (size_t a = 0; a < closed_.size(); ++a)
      usage_[a] = core::decay(closed_[a].usage, closed_[a].as_of, std::max(closed_[a].as_of, now * us), half_life_);
    for (const auto& [a, procs, start] : open)
      usage_[a] += core::decayed_gpu_seconds(static_cast<int>(procs), start * us, now * us, now * us, half_life_);
    double total = 0;
    size_t leaf = 0;  // leaves in tree order
    for (auto& g : root_.children)
      for (auto& u : g.children) {
        u.raw_usage = usage_[leaves_[leaf++]];
        total += u.raw_usage;
      }
    figures_.assign(closed_.size(), figures{});
    std::vector<double> path;  // target share down the walk, as core/priority.cpp takes it
    for (const auto& r : core::fair_tree(root_)) {
      path.resize(static_cast<size_t>(r.depth));
      double target = (r.depth ? path.back() : 1.0) * r.norm_shares;
      path.push_back(target);
      if (r.user.empty()) continue;
      size_t a = 0;
      for (char c : r.user) a = a * 10 + static_cast<size_t>(c - '0');  // the leaf's name is its index
      figures_[a] = {r.fair_share, target, total > 0 ? r.raw_usage / total : 0};
    }
    return figures_;
  }

 private:
  // The tree of the associations present, groups and their users in id order. Leaves are named
  // by their index, zero-padded: the names sort as (group, user) do, so Fair Tree's ties
  // (broken on names) fall as they would on user ids, and a row maps back at once.
  void rebuild() {
    shape_changed_ = false;
    root_ = core::share_node{};
    root_.name = "root";
    leaves_.clear();
    for (size_t a = 0; a < keys_.size(); ++a) {
      if (!present_[a]) continue;
      std::string group = "g" + std::to_string(keys_[a].first);
      if (root_.children.empty() || root_.children.back().name != group) {
        core::share_node g;
        g.name = group;
        if (auto it = group_shares_.find(keys_[a].first); it != group_shares_.end()) g.raw_shares = it->second;
        root_.children.push_back(std::move(g));
      }
      char name[24];
      std::snprintf(name, sizeof name, "%012zu", a);
      core::share_node leaf;
      leaf.name = name;
      leaf.user = true;
      if (auto it = user_shares_.find(keys_[a]); it != user_shares_.end()) leaf.raw_shares = it->second;
      root_.children.back().children.push_back(std::move(leaf));
      leaves_.push_back(a);
    }
  }

  struct closed_usage {
    double usage = 0;
    time_us as_of = 0;
  };
  time_us half_life_;
  std::map<int64_t, uint32_t> group_shares_;
  std::map<key, uint32_t> user_shares_;
  std::vector<key> keys_;
  std::map<key, size_t> index_of_;
  std::vector<bool> present_;
  bool shape_changed_ = true;
  core::share_node root_;
  std::vector<size_t> leaves_;  // association of each leaf, in tree order
  std::vector<closed_usage> closed_;
  std::vector<double> usage_;
  std::vector<figures> figures_;
};

struct running_job {
  int64_t end;
  uint32_t index;
  bool operator>(const running_job& o) const { return std::tie(end, index) > std::tie(o.end, o.index); }
};

}  // namespace

const char* to_string(sim_backfill b) {
  switch (b) {
    case sim_backfill::none: return "none";
    case sim_backfill::easy: return "easy";
    case sim_backfill::conservative: return "conservative";
  }
  return "none";
}

bool sim_policy_from(const std::string& name, sim_settings& s) {
  if (name == "fifo") return s.order = sim_order::fifo, s.backfill = sim_backfill::none, true;
  if (name == "easy") return s.order = sim_order::fifo, s.backfill = sim_backfill::easy, true;
  if (name == "conservative") return s.order = sim_order::fifo, s.backfill = sim_backfill::conservative, true;
  if (!core::set_policy_name(s.policy, name) || s.policy.kind == core::policy_kind::fifo) return false;
  s.order = s.policy.kind == core::policy_kind::lattice ? sim_order::lattice : sim_order::multifactor;
  s.backfill = sim_backfill::easy;
  return true;
}

sim_result simulate(const std::vector<sim_job>& jobs, const sim_settings& s) {
  const size_t n = jobs.size();
  sim_result out;
  out.jobs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& j = jobs[i];
    out.jobs[i] = {j.id, j.submit, -1, -1, j.procs, j.run, j.estimate, j.user, j.group};
  }
  std::vector<uint32_t> arrival(n);
  std::iota(arrival.begin(), arrival.end(), 0u);
  std::stable_sort(arrival.begin(), arrival.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(jobs[a].submit, jobs[a].id) < std::tie(jobs[b].submit, jobs[b].id);
  });

  std::priority_queue<running_job, std::vector<running_job>, std::greater<>> completions;
  std::vector<uint32_t> running;   // for the planner's input
  std::vector<uint32_t> pending;   // waiting jobs in arrival order
  std::multiset<int64_t> pending_procs;
  int64_t used = 0;
  size_t next = 0;

  const bool by_priority = s.order != sim_order::fifo;
  share_book shares(jobs, s.policy.decay_half_life, s.group_shares, s.user_shares);
  std::vector<size_t> association(n);
  if (by_priority)
    for (size_t i = 0; i < n; ++i) association[i] = shares.index(jobs[i].group, jobs[i].user);
  std::vector<int64_t> priority(n, 0);
  int64_t calculated_at = std::numeric_limits<int64_t>::min();
  const int64_t period = std::max<int64_t>(1, s.policy.calc_period / us);
  const auto weights = s.policy.custom_weights ? *s.policy.custom_weights : core::weights_of(s.policy.profile);

  std::vector<std::tuple<size_t, int64_t, int64_t>> open;
  auto recalculate = [&](int64_t now) {
    ++out.recalculations;
    calculated_at = now;
    open.clear();
    double running_hours = 0, queued_hours = 0;
    for (uint32_t r : running) {
      open.emplace_back(association[r], jobs[r].procs, out.jobs[r].start);
      running_hours += static_cast<double>(jobs[r].procs * jobs[r].estimate) / 3600;
    }
    for (uint32_t p : pending) queued_hours += static_cast<double>(jobs[p].procs * jobs[p].estimate) / 3600;
    const auto& figures = shares.at(now, open);
    for (uint32_t p : pending) {
      const auto& j = jobs[p];
      const auto& f = figures[association[p]];
      double fair_share = f.fair_share;
      if (s.order == sim_order::multifactor) {
        core::multifactor_inputs in;
        in.accrued_age = (now - j.submit) * us;
        in.fair_share = fair_share;
        in.gpu_count = static_cast<uint32_t>(std::max<int64_t>(j.procs, 0));
        in.max_gpu_count = static_cast<uint32_t>(s.capacity);
        in.partition_factor = in.max_partition_factor = 1;
        priority[p] = core::multifactor_priority(in, s.policy.multifactor).priority;
      } else {
        core::lattice_inputs in;
        in.wait_seconds = static_cast<double>(now - j.submit);
        in.reference_wait_seconds = s.policy.lattice_reference_wait_seconds;
        in.target_share = f.target;
        in.actual_share = f.actual;
        in.topology_fitness = static_cast<double>(j.procs) / static_cast<double>(s.capacity);
        in.queued_gpu_hours = queued_hours;
        in.running_gpu_hours = running_hours;
        priority[p] = std::llround(core::lattice_score(in, weights).score * 1e6);
      }
    }
  };

  auto start = [&](uint32_t j, int64_t now) {
    out.jobs[j].start = now;
    out.jobs[j].end = now + jobs[j].run;
    used += jobs[j].procs;
    completions.push({out.jobs[j].end, j});
    running.push_back(j);
    pending_procs.erase(pending_procs.find(jobs[j].procs));
  };

  std::vector<uint32_t> order, subset;
  std::vector<std::tuple<int64_t, int64_t, int64_t, uint32_t>> keyed;  // (-priority, submit, id, job)
  auto pass = [&](int64_t now) {
    if (pending.empty()) return;
    const int64_t free = s.capacity - used;
    if (*pending_procs.begin() > free) return;  // nothing could start: the plan would start nothing
    order = pending;
    if (by_priority) {
      // A lone waiting job needs no order: its priority is computed when it has company.
      if (pending.size() > 1 && (now >= calculated_at + period || calculated_at == std::numeric_limits<int64_t>::min()))
        recalculate(now);
      keyed.clear();
      for (uint32_t j : order) keyed.push_back({-priority[j], jobs[j].submit, jobs[j].id, j});
      std::sort(keyed.begin(), keyed.end());
      for (size_t k = 0; k < keyed.size(); ++k) order[k] = std::get<3>(keyed[k]);
    }
    // The planner's input: only jobs whose place in it can change what starts now (see the
    // header); the plan's starts are those of the whole queue.
    subset.clear();
    if (s.backfill == sim_backfill::none) {
      int64_t left = free;
      for (uint32_t j : order) {
        subset.push_back(j);
        if (jobs[j].procs > left) break;  // the head: it blocks the machine, nothing after it starts
        left -= jobs[j].procs;
      }
    } else if (s.backfill == sim_backfill::easy) {
      bool head = false;
      for (uint32_t j : order)
        if (jobs[j].procs <= free) {
          subset.push_back(j);
        } else if (!head) {  // the first that cannot start now is reserved for, if nothing before is
          subset.push_back(j);
          head = true;
        }
    } else {
      for (uint32_t j : order) {
        if (s.bf_max_job_test && subset.size() >= s.bf_max_job_test) break;
        subset.push_back(j);
      }
    }
    core::plan_input in;
    in.now = now * us;
    in.nodes = {core::plan_node{"m", s.capacity, 0, core::time_never}};
    in.running.reserve(running.size());
    for (uint32_t r : running)
      in.running.push_back({"", 0, jobs[r].procs, (out.jobs[r].start + jobs[r].estimate) * us});
    in.pending.reserve(subset.size());
    for (size_t k = 0; k < subset.size(); ++k) {
      core::plan_job pj;
      pj.id = std::to_string(k);
      pj.units = jobs[subset[k]].procs;
      pj.duration = jobs[subset[k]].estimate * us;
      in.pending.push_back(std::move(pj));
    }
    ++out.passes;
    core::plan p;
    if (s.backfill == sim_backfill::none) {
      p = core::main_loop(in, core::main_limits{0, 0});
    } else {
      core::backfill_limits limits;
      limits.bf_window = core::time_never;
      limits.bf_max_job_test = 0;
      limits.max_reservations = s.backfill == sim_backfill::easy ? 1 : 0;
      p = core::backfill(in, limits);
    }
    if (p.starts.empty()) return;
    for (const auto& st : p.starts) start(subset[st.job], now);
    pending.erase(std::remove_if(pending.begin(), pending.end(), [&](uint32_t j) { return out.jobs[j].start >= 0; }),
                  pending.end());
  };

  while (next < n || !completions.empty()) {
    int64_t now = std::numeric_limits<int64_t>::max();
    if (next < n) now = jobs[arrival[next]].submit;
    if (!completions.empty()) now = std::min(now, completions.top().end);
    while (!completions.empty() && completions.top().end == now) {  // completions first
      uint32_t j = completions.top().index;
      completions.pop();
      used -= jobs[j].procs;
      running.erase(std::find(running.begin(), running.end(), j));
      if (by_priority) shares.close_segment(association[j], jobs[j].procs, out.jobs[j].start, out.jobs[j].end);
    }
    while (next < n && jobs[arrival[next]].submit == now) {  // then arrivals
      uint32_t j = arrival[next++];
      if (jobs[j].procs > s.capacity) {
        out.notes.push_back("job " + std::to_string(jobs[j].id) + " asks for " + std::to_string(jobs[j].procs) +
                            " processors, more than the machine's " + std::to_string(s.capacity) + ": never runs");
        continue;
      }
      pending.push_back(j);
      pending_procs.insert(jobs[j].procs);
      if (by_priority) shares.join(association[j]);
    }
    pass(now);  // then one scheduling pass
  }
  return out;
}

}  // namespace baton::replay
