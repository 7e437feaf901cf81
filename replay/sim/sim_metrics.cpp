#include "replay/sim/sim_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace baton::replay {

namespace {

// (Selection, not a sort: the value at that rank is the same, found in linear time.)
double nearest_rank(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  auto at = v.begin() + static_cast<std::ptrdiff_t>(std::clamp<size_t>(rank, 1, v.size()) - 1);
  std::nth_element(v.begin(), at, v.end());
  return *at;
}

}  // namespace

sim_metrics measure(const std::vector<sim_job_result>& jobs, int64_t capacity) {
  sim_metrics m;
  std::vector<double> waits, bsld60;
  waits.reserve(jobs.size());  // (not regrown and copied a dozen times for a 200k-job trace)
  bsld60.reserve(jobs.size());
  int64_t first_submit = std::numeric_limits<int64_t>::max(), last_end = std::numeric_limits<int64_t>::min();
  double area = 0;
  std::map<int64_t, double> by_group;
  auto group = by_group.end();  // the last job's: a trace's jobs come in runs of one group
  for (const auto& j : jobs) {
    if (j.start < 0) continue;  // never ran
    ++m.jobs;
    double wait = static_cast<double>(j.wait()), run = static_cast<double>(j.run);
    waits.push_back(wait);
    m.mean_wait += wait;
    m.max_wait = std::max(m.max_wait, wait);
    m.mean_flow += wait + run;
    double b10 = std::max(1.0, (wait + run) / std::max(10.0, run));
    m.mean_bsld_10 += b10;
    m.max_bsld_10 = std::max(m.max_bsld_10, b10);
    double b60 = (wait + run) / std::max(run, 60.0);
    m.mean_bsld_60 += b60;
    bsld60.push_back(b60);
    first_submit = std::min(first_submit, j.submit);
    last_end = std::max(last_end, j.end);
    double hours = static_cast<double>(j.procs) * run / 3600;
    area += hours;
    if (group == by_group.end() || group->first != j.group) group = by_group.try_emplace(j.group, 0.0).first;
    group->second += hours;
  }
  if (m.jobs == 0) return m;
  double n = static_cast<double>(m.jobs);
  m.mean_wait /= n;
  m.mean_flow /= n;
  m.mean_bsld_10 /= n;
  m.mean_bsld_60 /= n;
  m.p95_wait = nearest_rank(std::move(waits), 0.95);
  m.p95_bsld_60 = nearest_rank(std::move(bsld60), 0.95);
  m.makespan = last_end - first_submit;
  if (m.makespan > 0 && capacity > 0)
    m.utilization = area * 3600 / (static_cast<double>(capacity) * static_cast<double>(m.makespan));
  for (const auto& [group, hours] : by_group)
    m.per_account["g" + std::to_string(group)] = {{"processor_hours", hours},
                                                  {"share", area > 0 ? hours / area : 0},
                                                  {"target_share", 1.0 / static_cast<double>(by_group.size())}};
  return m;
}

nlohmann::json to_json(const sim_metrics& m) {
  return {{"jobs", m.jobs},
          {"mean_wait_seconds", m.mean_wait},
          {"p95_wait_seconds", m.p95_wait},
          {"max_wait_seconds", m.max_wait},
          {"mean_flow_seconds", m.mean_flow},
          {"mean_bounded_slowdown_tau10", m.mean_bsld_10},
          {"max_bounded_slowdown_tau10", m.max_bsld_10},
          {"mean_bounded_slowdown_tau60", m.mean_bsld_60},
          {"p95_bounded_slowdown_tau60", m.p95_bsld_60},
          {"utilization", m.utilization},
          {"makespan_seconds", m.makespan},
          {"per_account", m.per_account}};
}

}  // namespace baton::replay
