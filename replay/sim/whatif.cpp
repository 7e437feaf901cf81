#include "replay/sim/whatif.hpp"

#include <iomanip>
#include <sstream>
#include <map>
#include <ostream>

#include "core/world/priority.hpp"
#include "core/util/time.hpp"
#include "core/world/world.hpp"
#include "events/envelope.hpp"
#include "core/events/event_types.hpp"
#include "replay/sim/sim_metrics.hpp"

namespace baton::replay {

using nlohmann::json;

namespace {

constexpr int64_t us = 1'000'000;

int64_t id_of(std::map<std::string, int64_t>& ids, std::vector<std::string>& names, const std::string& name) {
  auto [it, added] = ids.emplace(name, static_cast<int64_t>(names.size()));
  if (added) names.push_back(name);
  return it->second;
}

}  // namespace

recorded_workload workload_of(const events::event_store& store, std::optional<int64_t> from_us, std::optional<int64_t> to_us) {
  recorded_workload r;
  core::world w;
  std::map<std::string, int64_t> gpus_of;  // live workers' GPUs
  int64_t gpus_now = 0;
  std::map<std::string, int64_t> reserved_start;  // job -> its latest reservation's start
  std::map<std::string, bool> kept;               // job -> started by its reservation's time (at its first start)
  std::map<std::string, uint64_t> preempted;      // job -> times preempted
  std::map<std::string, core::job> pruned;        // pruned jobs, as they were when pruned
  store.scan(1, 0, true, [&](const events::event_view& e) {
    std::string stream(e.stream_id);
    const auto payload = core::ev::decode(e.type, e.schema_version, e.payload);
    if (std::holds_alternative<core::ev::job_pruned>(
            payload))  // the world keeps only a stub of a pruned job; the workload keeps it whole
      if (auto j = core::as_pruned(w, stream.substr(4), payload, e.recorded_at_us)) pruned.insert_or_assign(j->id, std::move(*j));
    core::apply(w, stream, payload, e.recorded_at_us);
    if (stream.rfind("worker/", 0) == 0) {
      const core::worker* wk = w.find_worker(stream.substr(7));
      int64_t now = wk && !wk->gone && !wk->placeholder && wk->registered_at != 0 ? wk->gpu_count : 0;
      auto& was = gpus_of[stream];
      gpus_now += now - was;
      was = now;
      r.capacity_gpus = std::max(r.capacity_gpus, gpus_now);
    } else if (const auto* plan = std::get_if<core::ev::plan_made>(&payload)) {
      for (const auto& res : plan->reservations)
        if (auto start = util::parse_time_us(res.start.value_or(""))) reserved_start[res.job_id] = *start;
    } else if (std::holds_alternative<core::ev::job_assigned>(payload)) {
      std::string job = stream.substr(4);
      auto it = reserved_start.find(job);
      if (it != reserved_start.end() && !kept.count(job)) kept[job] = e.recorded_at_us <= it->second;
    } else if (std::holds_alternative<core::ev::job_preempted>(payload)) {
      ++preempted[stream.substr(4)];
    }
    return true;
  });
  std::map<std::string, int64_t> account_ids, user_ids;
  std::vector<const core::job*> in_window;
  core::for_each_job_by_created(w, false, [&](const std::string& id, const core::job* live) {
    auto p = pruned.find(id);
    // (A stub the log never pruned whole is no job: at() throws, as it always did.)
    const core::job& j = p != pruned.end() ? p->second : live ? *live : w.jobs.at(id);
    if ((from_us && j.created_at < *from_us) || (to_us && j.created_at > *to_us)) return;
    in_window.push_back(&j);
  });
  if (!in_window.empty()) r.origin_us = in_window.front()->created_at;
  // Whole seconds from the first submit, rounded down, for what happened: a job's run is then
  // the sum of its segments in those seconds, so segments that followed one another on a GPU
  // still do, and no more GPU-seconds are counted than the pool held between the first submit
  // and the last end (rounding each run on its own, at least 1 s, had counted a 0.4 s job as
  // a whole second within a makespan cut down to whole seconds: utilization above 1).
  auto second_of = [&](int64_t t_us) { return (t_us - r.origin_us) / us; };
  for (const core::job* j : in_window) {
    if (j->segments.empty() || !j->segments.front().ended_at) {
      ++r.never_ran;
      continue;
    }
    if (!j->segments.back().ended_at) {  // running again when the log ends: its run is not known
      ++r.still_running;
      continue;
    }
    int64_t run_us = 0, happened_run = 0;
    for (const auto& s : j->segments) {
      run_us += *s.ended_at - s.started_at;
      happened_run += second_of(*s.ended_at) - second_of(s.started_at);
    }
    if (run_us <= 0) {
      ++r.never_ran;
      continue;
    }
    sim_job sj;
    sj.id = static_cast<int64_t>(r.jobs.size()) + 1;
    sj.submit = second_of(j->created_at);
    sj.run = std::max<int64_t>(1, (run_us + us / 2) / us);  // what the simulation runs: the nearest second
    sj.estimate = std::max(sj.run, j->time_limit_seconds.value_or(3600));
    sj.procs = j->gpu_count;
    sj.group = id_of(account_ids, r.account_names, j->account);
    sj.user = id_of(user_ids, r.user_names, j->user);
    sim_job_result h{sj.id,
                     sj.submit,
                     second_of(j->segments.front().started_at),
                     second_of(*j->segments.back().ended_at),
                     sj.procs,
                     happened_run,
                     sj.estimate,
                     sj.user,
                     sj.group};
    r.jobs.push_back(sj);
    r.happened.push_back(h);
    if (auto p = preempted.find(j->id); p != preempted.end()) r.preemptions += p->second;
    if (auto k = kept.find(j->id); k != kept.end()) {
      ++r.reservations;
      r.reservations_kept += k->second ? 1 : 0;
    }
  }
  return r;
}

namespace {

// Metrics with the account names and the config's target shares (raw shares of the accounts
// present, normalised among them).
json metrics_json(const std::vector<sim_job_result>& jobs, int64_t capacity, const recorded_workload& r,
                  const std::map<int64_t, uint32_t>& shares) {
  auto m = to_json(measure(jobs, capacity));
  double total_shares = 0;
  for (size_t g = 0; g < r.account_names.size(); ++g) total_shares += shares.count(g) ? shares.at(g) : 1;
  json accounts = json::object();
  for (auto& [key, v] : m["per_account"].items()) {
    auto g = std::stoll(key.substr(1));
    v["target_share"] = (shares.count(g) ? shares.at(g) : 1) / total_shares;
    v["gpu_hours"] = v["processor_hours"];
    v.erase("processor_hours");
    accounts[r.account_names.at(static_cast<size_t>(g))] = v;
  }
  m["per_account"] = accounts;
  return m;
}

}  // namespace

json run_whatif(const events::event_store& store, const core::priority_policy& policy, const std::string& policy_name,
                const whatif_options& o) {
  auto r = workload_of(store, o.from_us, o.to_us);
  sim_settings s;
  s.policy = policy;
  if (!sim_policy_from(policy_name, s))
    throw std::runtime_error("--policy: expected fifo, easy, conservative, multifactor or lattice:<profile>, got '" +
                             policy_name + "'");
  s.capacity = o.gpus > 0 ? o.gpus : r.capacity_gpus;
  if (s.capacity <= 0) throw std::runtime_error("the log records no worker: give --gpus");
  std::map<std::string, const core::account_def*> accounts;
  for (const auto& a : policy.accounts) accounts[a.name] = &a;
  for (size_t g = 0; g < r.account_names.size(); ++g)
    if (auto it = accounts.find(r.account_names[g]); it != accounts.end()) {
      s.group_shares[static_cast<int64_t>(g)] = it->second->shares;
      for (size_t u = 0; u < r.user_names.size(); ++u)
        if (auto us_ = it->second->users.find(r.user_names[u]); us_ != it->second->users.end())
          s.user_shares[{static_cast<int64_t>(g), static_cast<int64_t>(u)}] = us_->second;
    }
  auto sim = simulate(r.jobs, s);
  json out;
  out["window"] = {{"from", o.from_us ? json(util::format_time_us(*o.from_us)) : json(nullptr)},
                   {"to", o.to_us ? json(util::format_time_us(*o.to_us)) : json(nullptr)},
                   {"first_submit", r.jobs.empty() ? json(nullptr) : json(util::format_time_us(r.origin_us))}};
  out["workload"] = {{"jobs", r.jobs.size()},
                     {"never_ran", r.never_ran},
                     {"still_running", r.still_running},
                     {"accounts", r.account_names},
                     {"users", r.user_names.size()}};
  out["capacity_gpus"] = s.capacity;
  out["happened"] = metrics_json(r.happened, s.capacity, r, s.group_shares);
  out["happened"]["preemptions"] = r.preemptions;
  out["happened"]["reservations"] = r.reservations;
  out["happened"]["reservations_kept"] = r.reservations_kept;
  out["simulated"] = metrics_json(sim.jobs, s.capacity, r, s.group_shares);
  out["simulated"]["preemptions"] = nullptr;  // the simulator does not preempt
  out["simulated"]["reservations"] = nullptr;
  out["simulated"]["reservations_kept"] = nullptr;
  out["policy"] = policy_name;
  out["backfill"] = to_string(s.backfill);
  if (s.order != sim_order::fifo) out["priority_policy"] = core::to_json(s.policy);
  out["rules"] = {
      {"machine", "one pool of the most GPUs registered at once; no models, clusters or allocation ends"},
      {"run_time",
       "the sum of a job's run segments, in whole seconds (happened: each segment's ends rounded down "
       "from the first submit; simulated: the nearest second, at least 1); jobs that never ran or "
       "were running again at the log's end left out"},
      {"estimate", "the job's time_limit_seconds (3600 without one), at least its run time"},
      {"fair_share", "the config's accounts as groups under root with their raw shares, users with theirs"},
      {"bounded_slowdown", {{"tau10", "max(1, (wait + run) / max(10, run))"}, {"tau60", "(wait + run) / max(run, 60)"}}},
      {"reservations_kept", "jobs whose first start came at or before the start their last reservation promised"}};
  if (!sim.notes.empty()) out["notes"] = sim.notes;
  return out;
}

void print_whatif(std::ostream& out, const json& r) {
  const auto& h = r["happened"];
  const auto& s = r["simulated"];
  auto num = [](const json& v) {
    std::ostringstream t;
    if (v.is_null()) return std::string("-");
    t << std::fixed << std::setprecision(v.is_number_integer() ? 0 : 2) << v.get<double>();
    return t.str();
  };
  out << r["workload"]["jobs"] << " jobs (" << r["workload"]["never_ran"] << " never ran), " << r["capacity_gpus"]
      << " GPUs; simulated under " << r["policy"].get<std::string>() << " (backfill " << r["backfill"].get<std::string>()
      << ")\n";
  out << std::left << std::setw(34) << "" << std::setw(16) << "happened"
      << "simulated\n";
  for (auto [label, key] :
       std::vector<std::pair<const char*, const char*>>{{"mean wait (s)", "mean_wait_seconds"},
                                                        {"p95 wait (s)", "p95_wait_seconds"},
                                                        {"max wait (s)", "max_wait_seconds"},
                                                        {"mean bounded slowdown (tau 10)", "mean_bounded_slowdown_tau10"},
                                                        {"utilization", "utilization"},
                                                        {"makespan (s)", "makespan_seconds"},
                                                        {"preemptions", "preemptions"},
                                                        {"reservations kept", "reservations_kept"}})
    out << std::setw(34) << label << std::setw(16) << num(h.value(key, json(nullptr))) << num(s.value(key, json(nullptr)))
        << "\n";
  for (auto& [account, v] : h["per_account"].items()) {
    const auto& sv = s["per_account"].value(account, json::object());
    out << std::setw(34) << ("share of GPU-hours, " + account) << std::setw(16) << num(v["share"]) << std::setw(10)
        << num(sv.value("share", json(nullptr))) << "(target " << num(v.value("target_share", json(nullptr))) << ")\n";
  }
}

}  // namespace baton::replay
