#include "core/planning/backfill.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <unordered_map>

namespace baton::core {

const char* to_string(start_why w) { return w == start_why::main ? "main" : "backfill"; }

const char* to_string(skip_reason r) {
  switch (r) {
    case skip_reason::priority:
      return "priority";
    case skip_reason::queue_depth:
      return "default_queue_depth";
    case skip_reason::bf_max_job_test:
      return "bf_max_job_test";
    case skip_reason::bf_max_job_user:
      return "bf_max_job_user";
    case skip_reason::bf_max_job_part:
      return "bf_max_job_part";
    case skip_reason::bf_window:
      return "bf_window";
    case skip_reason::work_budget:
      return "work_budget";
    case skip_reason::no_eligible_node:
      return "no_eligible_node";
    case skip_reason::max_reservations:
      return "max_reservations";
  }
  return "unknown";
}

bool plan_start::operator==(const plan_start& o) const {
  return job_id == o.job_id && job == o.job && node_id == o.node_id && node == o.node && start == o.start && end == o.end &&
         why == o.why;
}

bool plan_reservation::operator==(const plan_reservation& o) const {
  return job_id == o.job_id && job == o.job && node_id == o.node_id && node == o.node && start == o.start && end == o.end;
}

bool plan_skip::operator==(const plan_skip& o) const {
  return job_id == o.job_id && job == o.job && reason == o.reason && blocked_by == o.blocked_by;
}

bool plan::operator==(const plan& o) const {
  return starts == o.starts && reservations == o.reservations && skipped == o.skipped && counters == o.counters;
}

namespace {

struct choice {
  uint32_t node = 0;
  time_slot slot;
};

slot_request request_of(const plan_job& j) { return {j.units, std::max<time_us>(j.duration, 1), j.checkpoints, j.min_useful}; }

// What both loops share: one profile per node, each class's nodes in id order, the plan.
class planner {
 public:
  // occupied: each node's profile with its running jobs already in (then in.running is not read).
  // Everything it builds goes into `ws`, whatever was there before (its capacity is reused).
  planner(const plan_input& in, time_us resolution, const std::vector<capacity_profile>* occupied, plan_workspace& ws)
      : out(ws.out), in_(in), profiles_(ws.profiles), class_nodes_(ws.class_nodes) {
    out.starts.clear();
    out.reservations.clear();
    out.skipped.clear();
    out.counters = {};
    const uint32_t n = static_cast<uint32_t>(in.nodes.size());
    std::vector<uint32_t>& by_id = ws.by_id;
    by_id.resize(n);
    std::iota(by_id.begin(), by_id.end(), 0u);
    if (n > 1)  // (stable_sort takes a buffer even for one node: the trace simulator plans one, often)
      std::stable_sort(by_id.begin(), by_id.end(), [&](uint32_t a, uint32_t b) { return in.nodes[a].id < in.nodes[b].id; });

    if (occupied) {
      if (occupied->size() != n) throw std::invalid_argument("planner: one occupied profile per node expected");
      for (const auto& p : *occupied)
        if (p.now() != in.now) throw std::invalid_argument("planner: an occupied profile is not at the plan's now");
      profiles_ = *occupied;  // copied: the plan's starts and reservations go into the copy
    } else {
      profiles_.clear();
      profiles_.reserve(n);
      for (const auto& node : in.nodes)
        profiles_.emplace_back(in.now, node.capacity, node.available_from, node.available_until, resolution);
      for (const auto& r : in.running) {
        if (r.node >= n) continue;
        profiles_[r.node].occupy(r.units, in.now, std::max(r.expected_end, in.now + 1));
      }
    }

    // Every pending job lands in one of the lists, most often in skipped: room for all at once
    // rather than a regrowth (and a move of every entry) at each doubling.
    out.skipped.reserve(in.pending.size());
    if (in.classes.empty()) {
      class_nodes_.resize(1);
      class_nodes_[0].assign(by_id.begin(), by_id.end());
    } else {
      std::vector<uint32_t> rank(n);
      for (uint32_t r = 0; r < n; ++r) rank[by_id[r]] = r;
      class_nodes_.resize(in.classes.size());
      for (size_t k = 0; k < in.classes.size(); ++k) {
        std::vector<uint32_t>& nodes = class_nodes_[k];
        nodes.clear();
        for (uint32_t x : in.classes[k].nodes)
          if (x < n) nodes.push_back(x);
        std::sort(nodes.begin(), nodes.end(), [&](uint32_t a, uint32_t b) { return rank[a] < rank[b]; });
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
      }
    }
  }

  // The class a job's nodes come from; an unknown class index has no nodes.
  size_t class_of(const plan_job& j) const { return in_.classes.empty() ? 0 : j.resource_class; }
  const std::vector<uint32_t>& nodes_of(const plan_job& j) const {
    size_t c = class_of(j);
    return c < class_nodes_.size() ? class_nodes_[c] : no_nodes_;
  }
  size_t class_count() const { return class_nodes_.size(); }

  // The earliest slot over the job's nodes starting no later than not_after. Nodes are
  // probed in id order and each only for a start strictly before the best so far, so the
  // first node to reach a start wins ties, and a start of now ends the search.
  std::optional<choice> earliest(const plan_job& j, time_us not_after) {
    std::optional<choice> best;
    const slot_request req = request_of(j);
    for (uint32_t node : nodes_of(j)) {
      time_us limit = best ? best->slot.start - 1 : not_after;
      if (limit < in_.now) break;
      ++out.counters.probes;
      if (auto s = profiles_[node].earliest(req, in_.now, limit)) {
        best = choice{node, *s};
        if (s->start == in_.now) break;
      }
    }
    return best;
  }

  // Whether some node of the class could hold the job on its own (capacity, window length),
  // whatever else runs there: tells "no node" from "not within the window".
  bool could_ever_hold(const plan_job& j) const {
    const slot_request r = request_of(j);
    const time_us need = r.checkpoints ? std::clamp<time_us>(r.min_useful, 1, r.duration) : r.duration;
    for (uint32_t node : nodes_of(j)) {
      const auto& p = profiles_[node];
      time_us open = std::max(in_.now, p.available_from());
      if (p.capacity() >= r.units && (p.available_until() == time_never || p.available_until() - open >= need)) return true;
    }
    return false;
  }

  // Entries are built where they go, not as temporaries moved in: a simulation's plans make
  // millions of them, and each temporary's strings were built and destroyed again.
  void place(uint32_t i, const choice& c, std::optional<start_why> why) {
    const plan_job& j = in_.pending[i];
    profiles_[c.node].occupy(j.units, c.slot.start, c.slot.end);
    auto fill = [&](auto& e) {  // (a start is a reservation's fields plus why)
      if (!j.id.empty()) e.job_id = j.id;
      e.job = i;
      if (!in_.nodes[c.node].id.empty()) e.node_id = in_.nodes[c.node].id;
      e.node = c.node;
      e.start = c.slot.start;
      e.end = c.slot.end;
    };
    if (why) {
      fill(out.starts.emplace_back());
      out.starts.back().why = *why;
    } else {
      fill(out.reservations.emplace_back());
    }
  }

  void skip(uint32_t i, skip_reason why) {
    auto& s = out.skipped.emplace_back();
    if (!in_.pending[i].id.empty()) s.job_id = in_.pending[i].id;
    s.job = i;
    s.reason = why;
  }
  void skip(uint32_t i, skip_reason why, const std::string& blocked_by) {
    skip(i, why);
    out.skipped.back().blocked_by = blocked_by;
  }
  void skip_rest(uint32_t from, skip_reason why) {
    for (uint32_t i = from; i < in_.pending.size(); ++i) skip(i, why);
  }

  plan& out;

 private:
  const plan_input& in_;
  std::vector<capacity_profile>& profiles_;
  std::vector<std::vector<uint32_t>>& class_nodes_;
  const std::vector<uint32_t> no_nodes_;
};

void run_main_loop(planner& p, const plan_input& in, const main_limits& limits, plan_workspace& ws) {
  const uint32_t jobs = static_cast<uint32_t>(in.pending.size());
  // A node is blocked by the first job that waits for it; a class is blocked once any of its
  // nodes is. Blocking only grows, so a class found blocked stays so, and a class found
  // clear is looked at again only after some node was blocked since (`epoch`).
  std::vector<int64_t>& node_blocker = ws.node_blocker;
  std::vector<int64_t>& class_blocker = ws.class_blocker;
  std::vector<uint64_t>& class_seen = ws.class_seen;
  node_blocker.assign(in.nodes.size(), -1);
  class_blocker.assign(p.class_count(), -1);
  class_seen.assign(p.class_count(), 0);
  uint64_t epoch = 1;
  for (uint32_t i = 0; i < jobs; ++i) {
    if (limits.max_jobs && i >= limits.max_jobs) {
      p.skip_rest(i, skip_reason::queue_depth);
      break;
    }
    if (limits.work_budget && p.out.counters.probes >= limits.work_budget) {
      p.skip_rest(i, skip_reason::work_budget);
      break;
    }
    const plan_job& j = in.pending[i];
    const size_t c = p.class_of(j);
    if (c < class_blocker.size() && class_blocker[c] < 0 && class_seen[c] != epoch) {
      class_seen[c] = epoch;
      for (uint32_t node : p.nodes_of(j))
        if (node_blocker[node] >= 0) {
          class_blocker[c] = node_blocker[node];
          break;
        }
    }
    if (c < class_blocker.size() && class_blocker[c] >= 0) {
      p.skip(i, skip_reason::priority, in.pending[static_cast<size_t>(class_blocker[c])].id);
      continue;
    }
    ++p.out.counters.jobs_tested;
    auto best = p.earliest(j, time_never);
    if (!best) {
      p.skip(i, skip_reason::no_eligible_node);  // waits for nothing, so it holds nothing back
    } else if (best->slot.start == in.now) {
      p.place(i, *best, start_why::main);
    } else {
      p.place(i, *best, std::nullopt);
      for (uint32_t node : p.nodes_of(j))
        if (node_blocker[node] < 0) node_blocker[node] = i;
      ++epoch;
    }
  }
}

void run_backfill(planner& p, const plan_input& in, const backfill_limits& limits) {
  const uint32_t jobs = static_cast<uint32_t>(in.pending.size());
  const time_us window = std::max<time_us>(limits.bf_window, 0);
  const time_us horizon = in.now > time_never - window ? time_never : in.now + window;
  // Looked up, never iterated: the order of the map does not reach the plan.
  std::unordered_map<std::string, uint32_t> per_user, per_part;
  for (uint32_t i = 0; i < jobs; ++i) {
    if (limits.bf_max_job_test && p.out.counters.jobs_tested >= limits.bf_max_job_test) {
      p.skip_rest(i, skip_reason::bf_max_job_test);
      break;
    }
    if (limits.work_budget && p.out.counters.probes >= limits.work_budget) {
      p.skip_rest(i, skip_reason::work_budget);
      break;
    }
    const plan_job& j = in.pending[i];
    // As Slurm: partition first, then user; a job over either is not counted against the other.
    if (limits.bf_max_job_part && per_part[j.partition] >= limits.bf_max_job_part) {
      p.skip(i, skip_reason::bf_max_job_part);
      continue;
    }
    if (limits.bf_max_job_user && per_user[j.user] >= limits.bf_max_job_user) {
      p.skip(i, skip_reason::bf_max_job_user);
      continue;
    }
    if (limits.bf_max_job_part) ++per_part[j.partition];
    if (limits.bf_max_job_user) ++per_user[j.user];
    ++p.out.counters.jobs_tested;
    const bool reserving = !limits.max_reservations || p.out.reservations.size() < limits.max_reservations;
    if (auto best = p.earliest(j, reserving ? horizon : in.now))
      p.place(i, *best, best->slot.start == in.now ? std::optional<start_why>(start_why::backfill) : std::nullopt);
    else if (!reserving)
      p.skip(i, skip_reason::max_reservations);
    else
      p.skip(i, p.could_ever_hold(j) ? skip_reason::bf_window : skip_reason::no_eligible_node);
  }
}

}  // namespace

plan main_loop(const plan_input& in, const main_limits& limits) {
  plan_workspace ws;
  planner p(in, 0, nullptr, ws);
  run_main_loop(p, in, limits, ws);
  return std::move(ws.out);
}

plan main_loop(const plan_input& in, const std::vector<capacity_profile>& occupied, const main_limits& limits) {
  plan_workspace ws;
  main_loop(in, occupied, limits, ws);
  return std::move(ws.out);
}

plan backfill(const plan_input& in, const backfill_limits& limits) {
  plan_workspace ws;
  planner p(in, limits.bf_resolution, nullptr, ws);
  run_backfill(p, in, limits);
  return std::move(ws.out);
}

plan backfill(const plan_input& in, const std::vector<capacity_profile>& occupied, const backfill_limits& limits) {
  plan_workspace ws;
  backfill(in, occupied, limits, ws);
  return std::move(ws.out);
}

const plan& main_loop(const plan_input& in, const std::vector<capacity_profile>& occupied, const main_limits& limits,
                      plan_workspace& ws) {
  planner p(in, 0, &occupied, ws);
  run_main_loop(p, in, limits, ws);
  return ws.out;
}

const plan& backfill(const plan_input& in, const std::vector<capacity_profile>& occupied, const backfill_limits& limits,
                     plan_workspace& ws) {
  planner p(in, limits.bf_resolution, &occupied, ws);
  run_backfill(p, in, limits);
  return ws.out;
}

}  // namespace baton::core
