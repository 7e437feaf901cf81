#include "replay/sim/sim_machine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "core/planning/backfill.hpp"
#include "core/policy/decayed_fair_tree.hpp"
#include "core/policy/fair_tree.hpp"
#include "core/policy/lattice.hpp"
#include "core/policy/multifactor.hpp"
#include "core/policy/usage.hpp"

namespace baton::replay {

using core::time_us;

namespace {
constexpr time_us us = 1'000'000;
}  // namespace

// Fair share as the live scheduler keeps it (core/world/priority.cpp), for the trace's associations:
// each group an account under root, each user under its group (one share each unless the
// settings give others); usage is processor-seconds, decayed with the policy's half-life. An
// association joins the tree with its first job, as a site adds a user when they arrive
// (users still to come would otherwise all tie at the top of the ranking); a recalculation
// fills in usage and ranks the tree.
class sim_machine::share_book {
 public:
  using key = std::pair<int64_t, int64_t>;  // group, user

  share_book(time_us half_life, const std::map<int64_t, uint32_t>& group_shares, const std::map<key, uint32_t>& user_shares,
             bool exact)
      : half_life_(half_life), group_shares_(group_shares), user_shares_(user_shares), exact_(exact), decayed_(half_life) {}

  // The association of (group, user), added to the tree if it is new.
  size_t join(int64_t group, int64_t user) {
    auto [it, added] = index_of_.emplace(key{group, user}, closed_.size());
    if (added) {
      closed_.emplace_back();
      usage_.push_back(0);
      shape_changed_ = true;
      auto [g, new_group] = account_of_.emplace(group, 0);
      if (new_group) g->second = decayed_.add_account(shares_of(group_shares_, group));
      decayed_.add_user(g->second, shares_of(user_shares_, key{group, user}));  // (its index is the association's)
    }
    return it->second;
  }

  void close_segment(size_t a, int64_t procs, int64_t start, int64_t end) {
    auto& u = closed_[a];
    time_us e = end * us;
    u.usage = core::decay(u.usage, u.as_of, std::max(u.as_of, e), half_life_) +
              core::decayed_gpu_seconds(static_cast<int>(procs), start * us, e, e, half_life_);
    u.as_of = std::max(u.as_of, e);
    decayed_.set_closed(static_cast<uint32_t>(a), u.usage, u.as_of);
  }

  // Multifactor's factors, of the associations in `wanted` only, into the returned vector (by
  // association): what at() gives them, through core::decayed_fair_tree, which re-ranks only
  // what moved, and through at() itself when that cannot certify its answer (a near tie).
  const std::vector<double>& fair_shares(int64_t now, const std::vector<std::tuple<size_t, int64_t, int64_t>>& open,
                                         const std::vector<uint32_t>& wanted) {
    segments_.clear();
    for (const auto& [a, procs, start] : open) segments_.push_back({static_cast<uint32_t>(a), procs, start * us});
    if (!exact_ && decayed_.fair_shares(now * us, segments_, wanted, fair_share_)) return fair_share_;
    ++full_rankings_;
    fair_share_.resize(closed_.size());
    const auto& figures = at(now, open);
    for (uint32_t a : wanted) fair_share_[a] = figures[a].fair_share;
    return fair_share_;
  }
  uint64_t full_rankings() const { return full_rankings_; }

  struct figures {
    double fair_share = 0, target = 0, actual = 0;
  };
  // Every association's figures at `now`; open: the running jobs' (association, procs, start).
  const std::vector<figures>& at(int64_t now, const std::vector<std::tuple<size_t, int64_t, int64_t>>& open) {
    if (shape_changed_) rebuild();
    for (size_t a = 0; a < closed_.size(); ++a)  // (nothing to decay for an association that never ran)
      usage_[a] = closed_[a].usage == 0
                      ? 0
                      : core::decay(closed_[a].usage, closed_[a].as_of, std::max(closed_[a].as_of, now * us), half_life_);
    for (const auto& [a, procs, start] : open)
      usage_[a] += core::decayed_gpu_seconds(static_cast<int>(procs), start * us, now * us, now * us, half_life_);
    double total = 0;
    size_t leaf = 0;  // leaves in tree order
    for (auto& g : root_.children)
      for (auto& u : g.children) {
        u.raw_usage = usage_[leaves_[leaf++]];
        total += u.raw_usage;
      }
    figures_.resize(closed_.size());  // (every association is a leaf: each is written below)
    std::vector<double> path;         // target share down the walk, as core/world/priority.cpp takes it
    ranker_->rank(ranks_);
    for (const auto& r : ranks_) {
      path.resize(static_cast<size_t>(r.depth));
      double target = (r.depth ? path.back() : 1.0) * r.norm_shares;
      path.push_back(target);
      if (!r.user) continue;
      // The leaf's place in tree order, from where it sits: its group's first leaf, plus its index there.
      const size_t position = first_leaf_[static_cast<size_t>(r.parent - root_.children.data())] +
                              static_cast<size_t>(r.node - r.parent->children.data());
      figures_[leaves_[position]] = {r.fair_share, target, total > 0 ? r.raw_usage / total : 0};
    }
    return figures_;
  }

 private:
  // The tree of the associations present, groups and their users in id order. Leaves are named
  // by their place in that order, zero-padded: the names sort as (group, user) do, so Fair
  // Tree's ties (broken on names) fall as they would on the ids. (Eight digits while they
  // suffice: Fair Tree compares names by their first eight bytes before the rest.)
  void rebuild() {
    shape_changed_ = false;
    root_ = core::share_node{};
    root_.name = "root";
    leaves_.clear();
    first_leaf_.clear();
    const int width = index_of_.size() < 100'000'000 ? 8 : 20;
    for (const auto& [k, a] : index_of_) {
      std::string group = "g" + std::to_string(k.first);
      if (root_.children.empty() || root_.children.back().name != group) {
        core::share_node g;
        g.name = group;
        g.raw_shares = shares_of(group_shares_, k.first);
        root_.children.push_back(std::move(g));
        first_leaf_.push_back(leaves_.size());
      }
      char name[32];
      std::snprintf(name, sizeof name, "%0*zu", width, leaves_.size());
      core::share_node leaf;
      leaf.name = name;
      leaf.user = true;
      leaf.raw_shares = shares_of(user_shares_, k);
      root_.children.back().children.push_back(std::move(leaf));
      leaves_.push_back(a);
    }
    ranker_.emplace(root_);  // the tree's shape is settled until the next association joins
  }

  template <class K>
  static uint32_t shares_of(const std::map<K, uint32_t>& m, const K& k) {
    auto it = m.find(k);
    return it == m.end() ? 1 : it->second;
  }

  struct closed_usage {
    double usage = 0;
    time_us as_of = 0;
  };
  time_us half_life_;
  std::map<int64_t, uint32_t> group_shares_;
  std::map<key, uint32_t> user_shares_;
  std::map<key, size_t> index_of_;  // (group, user) -> association, in the tree's order
  bool shape_changed_ = true;
  core::share_node root_;
  std::vector<size_t> leaves_;      // association of each leaf, in tree order
  std::vector<size_t> first_leaf_;  // each group's first leaf, in tree order
  std::vector<closed_usage> closed_;
  std::vector<double> usage_;
  std::vector<figures> figures_;
  std::optional<core::fair_tree_ranker> ranker_;  // over root_, laid out at each rebuild
  std::vector<core::fair_share_rank> ranks_;      // the last ranking, its storage reused
  bool exact_;                                    // every recalculation through at() (tests)
  core::decayed_fair_tree decayed_;               // its users are the associations, by index
  std::map<int64_t, uint32_t> account_of_;        // group -> decayed_'s account
  std::vector<core::decayed_fair_tree::open_segment> segments_;
  std::vector<double> fair_share_;
  uint64_t full_rankings_ = 0;
};

sim_machine::sim_machine(sim_settings s)
    : s_(std::move(s)),
      shares_(std::make_unique<share_book>(s_.policy.decay_half_life, s_.group_shares, s_.user_shares, s_.exact_fair_share)),
      calculated_at_(std::numeric_limits<int64_t>::min()) {}

sim_machine::~sim_machine() = default;

uint64_t sim_machine::full_rankings() const { return shares_->full_rankings(); }

bool sim_machine::running(uint32_t i) const { return i < is_running_.size() && is_running_[i]; }

core::capacity_profile& sim_machine::occupied_at(int64_t now) {
  if (occupied_.empty())
    occupied_.emplace_back(now * us, s_.capacity);
  else
    occupied_.front().advance(now * us);
  return occupied_.front();
}

template <class F>
void sim_machine::for_each_waiting(F&& f) const {
  for (size_t k = pending_head_; k < pending_.size(); ++k)
    if (start_[pending_[k]] < 0 && !f(pending_[k])) return;
}

void sim_machine::reserve(size_t jobs) {
  jobs_.reserve(jobs);
  start_.reserve(jobs);
  procs_.reserve(jobs);
  is_running_.reserve(jobs);
  running_at_.reserve(jobs);
  if (s_.order != sim_order::fifo) {
    priority_.reserve(jobs);
    association_.reserve(jobs);
  }
  pending_.reserve(jobs);
  pending_procs_at_.reserve(jobs);
  pending_pos_.reserve(jobs);
}

std::optional<uint32_t> sim_machine::arrive(const sim_job& j) {
  if (j.procs > s_.capacity) return std::nullopt;
  owned_.push_back(j);
  return arrive_kept(owned_.back());
}

std::optional<uint32_t> sim_machine::arrive_kept(const sim_job& j) {
  if (j.procs > s_.capacity) return std::nullopt;
  auto i = static_cast<uint32_t>(jobs_.size());
  jobs_.push_back(&j);
  start_.push_back(-1);
  procs_.push_back(j.procs);
  is_running_.push_back(false);
  running_at_.push_back(0);
  if (s_.order != sim_order::fifo) {  // (a FIFO queue needs neither: 3 MB of pages in a 200k-job trace)
    priority_.push_back(0);
    association_.push_back(static_cast<uint32_t>(shares_->join(j.group, j.user)));
  }
  pending_pos_.push_back(static_cast<uint32_t>(pending_.size()));
  pending_.push_back(i);
  pending_procs_at_.push_back(j.procs);
  ++pending_live_;
  pending_procs_.insert(j.procs);
  return i;
}

bool sim_machine::end(uint32_t job, int64_t now) {
  if (!running(job)) return false;
  is_running_[job] = false;
  used_ -= jobs_[job]->procs;
  // (Order in running_ does not matter: it feeds sums and the usage of associations.)
  const size_t at = running_at_[job];
  running_[at] = running_.back();
  running_at_[running_[at]] = static_cast<uint32_t>(at);
  running_.pop_back();
  // What is left of its planned span, from now (nothing when it ends at its expected end).
  occupied_at(now).release(jobs_[job]->procs, now * us, (start_[job] + jobs_[job]->estimate) * us);
  if (s_.order != sim_order::fifo) shares_->close_segment(association_[job], jobs_[job]->procs, start_[job], now);
  return true;
}

void sim_machine::recalculate(int64_t now) {
  ++recalculations_;
  calculated_at_ = now;
  calculated_ = true;
  open_.clear();
  for (uint32_t r : running_) open_.emplace_back(association_[r], jobs_[r]->procs, start_[r]);
  if (s_.order == sim_order::multifactor) {
    // Only the waiting jobs' associations need a factor.
    wanted_.clear();
    for_each_waiting([&](uint32_t p) {
      const size_t a = association_[p];
      if (a >= association_stamp_.size()) association_stamp_.resize(a + 1, 0);
      if (association_stamp_[a] != recalculations_)
        association_stamp_[a] = recalculations_, wanted_.push_back(static_cast<uint32_t>(a));
      return true;
    });
    const auto& fair_share = shares_->fair_shares(now, open_, wanted_);
    for_each_waiting([&](uint32_t p) {
      const auto& j = *jobs_[p];
      core::multifactor_inputs in;
      in.accrued_age = (now - j.submit) * us;
      in.fair_share = fair_share[association_[p]];
      in.gpu_count = static_cast<uint32_t>(std::max<int64_t>(j.procs, 0));
      in.max_gpu_count = static_cast<uint32_t>(s_.capacity);
      in.partition_factor = in.max_partition_factor = 1;
      priority_[p] = core::multifactor_priority(in, s_.policy.multifactor).priority;
      return true;
    });
    return;
  }
  double running_hours = 0, queued_hours = 0;
  for (uint32_t r : running_) running_hours += static_cast<double>(jobs_[r]->procs * jobs_[r]->estimate) / 3600;
  for_each_waiting([&](uint32_t p) {
    queued_hours += static_cast<double>(jobs_[p]->procs * jobs_[p]->estimate) / 3600;
    return true;
  });
  const auto& figures = shares_->at(now, open_);  // Lattice: every figure, from the whole ranking
  const auto weights = s_.policy.custom_weights ? *s_.policy.custom_weights : core::weights_of(s_.policy.profile);
  for_each_waiting([&](uint32_t p) {
    const auto& j = *jobs_[p];
    const auto& f = figures[association_[p]];
    core::lattice_inputs in;
    in.wait_seconds = static_cast<double>(now - j.submit);
    in.reference_wait_seconds = s_.policy.lattice_reference_wait_seconds;
    in.target_share = f.target;
    in.actual_share = f.actual;
    in.topology_fitness = static_cast<double>(j.procs) / static_cast<double>(s_.capacity);
    in.queued_gpu_hours = queued_hours;
    in.running_gpu_hours = running_hours;
    priority_[p] = std::llround(core::lattice_score(in, weights).score * 1e6);
    return true;
  });
}

std::optional<sim_pass> sim_machine::decide_pass(int64_t now) {
  if (const sim_pass* p = next_pass(now)) return *p;
  return std::nullopt;
}

const sim_pass* sim_machine::next_pass(int64_t now) {
  if (pending_live_ == 0) return nullptr;
  const int64_t free = s_.capacity - used_;
  if (*pending_procs_.begin() > free) return nullptr;  // nothing could start: the plan would start nothing
  sim_pass& pass = pass_;
  pass.at = now;
  pass.recalculated = false;
  pass.starts.clear();
  pass.reservations.clear();
  // The queue in evaluation order: arrival order (FIFO: submit time, then id) or priorities.
  const bool fifo = s_.order == sim_order::fifo;
  if (!fifo) {
    const int64_t period = std::max<int64_t>(1, s_.policy.calc_period / us);
    // A lone waiting job needs no order: its priority is computed when it has company.
    if (pending_live_ > 1 && (!calculated_ || now >= calculated_at_ + period)) {
      recalculate(now);
      pass.recalculated = true;
    }
    keyed_.clear();
    for_each_waiting([&](uint32_t j) {
      keyed_.emplace_back(-priority_[j], jobs_[j]->submit, jobs_[j]->id, j);
      return true;
    });
    std::sort(keyed_.begin(), keyed_.end());
    order_.clear();
    for (const auto& k : keyed_) order_.push_back(std::get<3>(k));
  }
  auto in_order = [&](auto&& f) {
    if (fifo)
      for_each_waiting(f);
    else
      for (uint32_t j : order_)
        if (!f(j)) return;
  };
  // The planner's input: only jobs whose place in it can change what starts now (see
  // simulator.hpp); the plan's starts are those of the whole queue.
  subset_.clear();
  if (s_.backfill == sim_backfill::none) {
    int64_t left = free;
    in_order([&](uint32_t j) {
      subset_.push_back(j);
      if (procs_[j] > left) return false;  // the head: it blocks the machine, nothing after it starts
      left -= procs_[j];
      return true;
    });
  } else if (s_.backfill == sim_backfill::easy && fifo && !s_.plain_queue_walk) {
    // As below, in arrival order, through the packed processor counts alone.
    bool head = false;
    for (size_t k = pending_head_; k < pending_.size(); ++k) {
      const int64_t procs = pending_procs_at_[k];
      if (procs < 0 || (procs > free && head)) continue;
      head |= procs > free;
      subset_.push_back(pending_[k]);
    }
  } else if (s_.backfill == sim_backfill::easy) {
    bool head = false;
    in_order([&](uint32_t j) {
      if (procs_[j] <= free) {
        subset_.push_back(j);
      } else if (!head) {  // the first that cannot start now is reserved for, if nothing before is
        subset_.push_back(j);
        head = true;
      }
      return true;
    });
  } else {
    in_order([&](uint32_t j) {
      if (s_.bf_max_job_test && subset_.size() >= s_.bf_max_job_test) return false;
      subset_.push_back(j);
      return true;
    });
  }
  core::plan_input& in = plan_in_;
  in.now = now * us;
  // One node, unnamed: there are no ties between nodes to break, and no name to copy into each start.
  if (in.nodes.empty()) in.nodes = {core::plan_node{"", s_.capacity, 0, core::time_never}};
  // Pending entries are reused from pass to pass. They go unnamed: the plan is read by index
  // (plan_start::job), and a name would be copied into every start, reservation and skip.
  in.pending.resize(subset_.size());
  for (size_t k = 0; k < subset_.size(); ++k) {
    in.pending[k].units = jobs_[subset_[k]]->procs;
    in.pending[k].duration = jobs_[subset_[k]]->estimate * us;
  }
  // The kept profile, unless a running job is past its expected end (the planner's own rule
  // for it, from the list of running jobs; the kept profile has it gone) or the machine's
  // facts went back in time (a damaged log): then the planner builds the profile itself.
  const bool kept = occupied_at(now).now() == now * us;
  while (!due_.empty() && !is_running_[due_.top().second]) due_.pop();
  const bool overdue = !kept || (!due_.empty() && due_.top().first <= now);
  in.running.clear();
  if (overdue)
    for (uint32_t r : running_) in.running.push_back({"", 0, jobs_[r]->procs, (start_[r] + jobs_[r]->estimate) * us});
  // (An overdue pass, rare, plans from the list of running jobs without the workspace.)
  core::plan fresh;
  const core::plan* p = &fresh;
  if (s_.backfill == sim_backfill::none) {
    const core::main_limits limits{0, 0};
    if (overdue)
      fresh = core::main_loop(in, limits);
    else
      p = &core::main_loop(in, occupied_, limits, plan_ws_);
  } else {
    core::backfill_limits limits;
    limits.bf_window = core::time_never;
    limits.bf_max_job_test = 0;
    limits.max_reservations = s_.backfill == sim_backfill::easy ? 1 : 0;
    if (overdue)
      fresh = core::backfill(in, limits);
    else
      p = &core::backfill(in, occupied_, limits, plan_ws_);
  }
  for (const auto& st : p->starts) pass.starts.push_back(subset_[st.job]);
  for (const auto& r : p->reservations) pass.reservations.push_back({subset_[r.job], r.start / us});
  return &pass;
}

void sim_machine::apply_pass(const sim_pass& p) {
  if (p.starts.empty()) return;
  core::capacity_profile& occupied = occupied_at(p.at);
  for (uint32_t j : p.starts) {
    start_[j] = p.at;
    is_running_[j] = true;
    used_ += jobs_[j]->procs;
    running_at_[j] = static_cast<uint32_t>(running_.size());
    running_.push_back(j);
    pending_procs_.erase(pending_procs_.find(jobs_[j]->procs));
    occupied.occupy(jobs_[j]->procs, p.at * us, (p.at + jobs_[j]->estimate) * us);
    due_.emplace(p.at + jobs_[j]->estimate, j);
  }
  for (uint32_t j : p.starts) pending_procs_at_[pending_pos_[j]] = -1;
  pending_live_ -= p.starts.size();
  while (pending_head_ < pending_.size() && start_[pending_[pending_head_]] >= 0) ++pending_head_;
  // Started jobs left behind the head are dropped once they are as many as the waiting ones.
  if (pending_.size() - pending_head_ > 2 * pending_live_ + 64) {
    size_t kept = 0;
    for (size_t k = 0; k < pending_.size(); ++k)
      if (start_[pending_[k]] < 0) {
        pending_[kept] = pending_[k];
        pending_procs_at_[kept] = pending_procs_at_[k];
        pending_pos_[pending_[kept]] = static_cast<uint32_t>(kept);
        ++kept;
      }
    pending_.resize(kept);
    pending_procs_at_.resize(kept);
    pending_head_ = 0;
  }
}

}  // namespace baton::replay
