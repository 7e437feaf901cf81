#include "replay/sim/simulator.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>

#include "replay/sim/sim_machine.hpp"

namespace baton::replay {

namespace {

struct running_job {
  int64_t end;
  uint32_t index;
  bool operator>(const running_job& o) const { return std::tie(end, index) > std::tie(o.end, o.index); }
};

}  // namespace

const char* to_string(sim_backfill b) {
  switch (b) {
    case sim_backfill::none:
      return "none";
    case sim_backfill::easy:
      return "easy";
    case sim_backfill::conservative:
      return "conservative";
  }
  return "none";
}

bool sim_backfill_from(std::string_view name, sim_backfill& b) {
  for (sim_backfill each : {sim_backfill::none, sim_backfill::easy, sim_backfill::conservative})
    if (name == to_string(each)) return b = each, true;
  return false;
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

sim_result simulate(const std::vector<sim_job>& jobs, const sim_settings& s, sim_observer* observer) {
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

  sim_machine m(s);
  m.reserve(n);
  std::vector<uint32_t> input_of;  // machine index -> the job's place in the input
  input_of.reserve(n);
  // The trace's facts: a started job ends after its run time.
  std::priority_queue<running_job, std::vector<running_job>, std::greater<>> completions;
  size_t next = 0;
  while (next < n || !completions.empty()) {
    int64_t now = std::numeric_limits<int64_t>::max();
    if (next < n) now = jobs[arrival[next]].submit;
    if (!completions.empty()) now = std::min(now, completions.top().end);
    while (!completions.empty() && completions.top().end == now) {  // completions first
      uint32_t j = completions.top().index;
      completions.pop();
      m.end(j, now);
      if (observer) observer->ended(m.job(j), now);
    }
    while (next < n && jobs[arrival[next]].submit == now) {  // then arrivals
      uint32_t i = arrival[next++];
      if (auto j = m.arrive_kept(jobs[i])) {  // (`jobs` outlives the machine: no copy)
        input_of.push_back(i);
        if (observer) observer->arrived(jobs[i]);
        continue;
      }
      out.notes.push_back("job " + std::to_string(jobs[i].id) + " asks for " + std::to_string(jobs[i].procs) +
                          " processors, more than the machine's " + std::to_string(s.capacity) + ": never runs");
      if (observer) observer->refused(jobs[i], out.notes.back());
    }
    if (const sim_pass* pass = m.next_pass(now)) {  // then one scheduling pass
      ++out.passes;
      m.apply_pass(*pass);
      for (uint32_t j : pass->starts) {
        auto& r = out.jobs[input_of[j]];
        r.start = now;
        r.end = now + m.job(j).run;
        completions.push({r.end, j});
      }
      if (observer) observer->passed(*pass, m);
    }
  }
  out.recalculations = m.recalculations();
  out.full_rankings = m.full_rankings();
  return out;
}

}  // namespace baton::replay
