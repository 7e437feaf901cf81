#include "core/world/plan_cycle.hpp"
#include "core/util/sha256.hpp"
#include "core/util/time.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "core/world/scheduling.hpp"
#include "core/events/payload_numbers.hpp"
#include "core/events/streams.hpp"
#include "events/json_text.hpp"

namespace baton::core {

namespace {

constexpr time_us us_per_second = 1'000'000;

std::string node_name(size_t i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08zu", i);
  return buf;
}

// The first `cap` eligible queued jobs of every image, merged in evaluation order (0: all).
std::vector<const job*> pending_in_order(const world& w, size_t cap) {
  using iter = ranked_set<queue_key>::const_iterator;
  std::vector<std::pair<iter, iter>> heads;
  for (const auto& [image, keys] : w.queued_by_image) heads.emplace_back(keys.begin(), keys.end());
  std::vector<const job*> out;
  while (cap == 0 || out.size() < cap) {
    std::pair<iter, iter>* best = nullptr;
    for (auto& h : heads)
      if (h.first != h.second && (!best || *h.first < *best->first)) best = &h;
    if (!best) break;
    out.push_back(best->first->owner);
    ++best->first;
  }
  return out;
}

// A plan row's text as dump() writes row_of's object (keys in order; "start" for a
// reservation), written straight from the plan for its digest: building every reservation as
// a JSON value to dump it was most of what an unchanged plan cost.
void append_row_text(std::string& out, const std::string& job_id, const std::string& worker_id, time_us end,
                     const time_us* start) {
  out += "{\"end\":";
  if (end >= time_never)
    out += "null";
  else
    events::append_json_string(out, util::format_time_us(end));
  out += ",\"job_id\":";
  events::append_json_string(out, job_id);
  if (start) {
    out += ",\"start\":";
    events::append_json_string(out, util::format_time_us(*start));
  }
  out += ",\"worker_id\":";
  events::append_json_string(out, worker_id);
  out += '}';
}

}  // namespace

ev::backfill_settings_record to_record(const backfill_settings& s) {
  ev::backfill_settings_record r;
  r.bf_interval_seconds = s.interval / us_per_second;
  r.bf_window_minutes = s.limits.bf_window / (60 * us_per_second);
  r.bf_max_job_test = s.limits.bf_max_job_test;
  r.bf_max_job_user = s.limits.bf_max_job_user;
  r.bf_max_job_part = s.limits.bf_max_job_part;
  r.bf_max_probes = s.limits.work_budget;
  r.bf_resolution_seconds = s.limits.bf_resolution / us_per_second;
  r.placeholder_start_estimate_seconds = s.placeholder_start_estimate / us_per_second;
  r.recorded_reservations = s.recorded_reservations;
  return r;
}

backfill_settings settings_of(const ev::backfill_settings_record& r) {
  backfill_settings s;
  s.interval = scaled_or(r.bf_interval_seconds, s.interval, us_per_second);
  s.limits.bf_window = scaled_or(r.bf_window_minutes, s.limits.bf_window, 60 * us_per_second);
  s.limits.bf_max_job_test = r.bf_max_job_test.value_or(s.limits.bf_max_job_test);
  s.limits.bf_max_job_user = r.bf_max_job_user.value_or(s.limits.bf_max_job_user);
  s.limits.bf_max_job_part = r.bf_max_job_part.value_or(s.limits.bf_max_job_part);
  s.limits.work_budget = r.bf_max_probes.value_or(s.limits.work_budget);
  s.limits.bf_resolution = scaled_or(r.bf_resolution_seconds, s.limits.bf_resolution, us_per_second);
  s.placeholder_start_estimate = scaled_or(r.placeholder_start_estimate_seconds, s.placeholder_start_estimate, us_per_second);
  s.recorded_reservations = r.recorded_reservations.value_or(s.recorded_reservations);
  return s;
}

planner_view planner_input(const world& w, const std::set<std::string>& stale, const deadline_rule& rule,
                           const backfill_settings& s, time_us now) {
  planner_view v;
  v.input.now = now;
  // Workers in rank order (HPC before Salad, more GPUs, ...): node names sort the same way,
  // so the planner's ties (node name) go to the better worker.
  std::vector<worker_rank> ranked;  // each rank computed once; its owner is the worker
  for (const auto& [id, wk] : w.workers)
    if (!wk.gone && !stale.count(id) && (wk.placeholder || wk.registered_at != 0)) ranked.push_back(rank_of(wk));
  std::sort(ranked.begin(), ranked.end());
  std::vector<const worker*> node_workers;
  for (const auto& rank : ranked) {
    const worker* wk = rank.owner;
    plan_node n;
    n.capacity = 1;
    if (wk->placeholder) {
      n.available_from = now + s.placeholder_start_estimate;
      n.available_until = wk->wall_time_seconds > 0 ? n.available_from + wk->wall_time_seconds * us_per_second : time_never;
    } else {
      n.available_from = now;
      n.available_until = wk->allocation_ends_at ? wk->allocation_ends_at : time_never;
      if (n.available_until <= now) continue;  // its allocation has ended: nothing to plan on it
    }
    n.id = node_name(v.input.nodes.size());
    auto index = static_cast<uint32_t>(v.input.nodes.size());
    v.input.nodes.push_back(std::move(n));
    v.worker_of_node.push_back(wk->id);
    node_workers.push_back(wk);
    if (const std::string* held = w.held_job(wk->id)) {
      const job& j = *w.find_job(*held);
      time_us end = expected_end(j, rule).value_or(now + time_limit_of(j, rule) * us_per_second);
      v.input.running.push_back({j.id, index, 1, end});
    }
  }
  size_t cap = s.limits.bf_max_job_test ? 4 * static_cast<size_t>(s.limits.bf_max_job_test) : 0;
  // One resource class per distinct request: image, GPUs, cluster pins, conformance.
  std::map<std::tuple<std::string, uint32_t, std::vector<std::string>, std::string>, uint32_t> class_of;
  for (const job* j : pending_in_order(w, cap)) {
    auto key = std::make_tuple(j->worker_image_key, j->gpu_count, j->preferred_clusters, j->conformance);
    auto [it, fresh] = class_of.emplace(key, static_cast<uint32_t>(v.input.classes.size()));
    if (fresh) {
      resource_class c;
      for (uint32_t i = 0; i < v.input.nodes.size(); ++i)
        if (can_run(*node_workers[i], *j)) c.nodes.push_back(i);
      v.input.classes.push_back(std::move(c));
    }
    plan_job pj;
    pj.id = j->id;
    pj.units = 1;
    pj.duration = time_limit_of(*j, rule) * us_per_second;
    pj.resource_class = it->second;
    pj.user = j->user;
    pj.partition = j->partition;
    pj.checkpoints = j->checkpoints;
    pj.min_useful = rule.min_useful_seconds * us_per_second;
    v.input.pending.push_back(std::move(pj));
  }
  if (v.input.classes.empty()) v.input.classes.emplace_back();  // no pending job: one empty class
  return v;
}

plan_snapshot snapshot_for_plan(const world& w, const std::set<std::string>& stale, const deadline_rule& rule,
                                const backfill_settings& s, time_us now) {
  return {planner_input(w, stale, rule, s, now), stale, rule, s, now, w.applied};
}

plan run_planner(const plan_snapshot& snap) { return backfill(snap.view.input, snap.settings.limits); }

decision decide_plan(const world& w, const plan_snapshot& snap, const plan& p) {
  const auto& v = snap.view;
  const auto& s = snap.settings;
  auto row_of = [&](const std::string& job_id, uint32_t node, time_us end) {
    ev::plan_row row;
    if (end < time_never) row.end = util::format_time_us(end);
    row.job_id = job_id;
    row.worker_id = v.worker_of_node[node];
    return row;
  };
  // The digest covers what the plan decided, not when: an unchanged plan writes no event. Its
  // text is the dump of {"reservations": every reservation's row, "starts": the starts' rows}
  // (keys in order), written from the plan (append_row_text) before any JSON is built.
  std::string digest_text = "{\"reservations\":[";
  for (size_t i = 0; i < p.reservations.size(); ++i) {
    const auto& r = p.reservations[i];
    if (i) digest_text += ',';
    append_row_text(digest_text, r.job_id, v.worker_of_node[r.node], r.end, &r.start);
  }
  digest_text += "],\"starts\":[";
  for (size_t i = 0; i < p.starts.size(); ++i) {
    const auto& st = p.starts[i];
    if (i) digest_text += ',';
    append_row_text(digest_text, st.job_id, v.worker_of_node[st.node], st.end, nullptr);
  }
  digest_text += "]}";
  auto digest = util::sha256_hex(digest_text);
  if (digest == w.plan.digest) return {};
  ev::plan_made e;
  for (const auto& st : p.starts) e.starts.push_back(row_of(st.job_id, st.node, st.end));
  for (const auto& r : p.reservations) {
    if (e.reservations.size() >= s.recorded_reservations) break;
    e.reservations.push_back(row_of(r.job_id, r.node, r.end));
    e.reservations.back().start = util::format_time_us(r.start);
  }
  for (const auto& k : p.skipped) ++e.skipped[to_string(k.reason)];
  e.stale_excluded.assign(snap.stale.begin(), snap.stale.end());
  e.digest = std::move(digest);
  e.planned_at = util::format_time_us(snap.planned_at);
  e.based_on = snap.based_on;
  e.reservations_total = p.reservations.size();
  e.pending_considered = v.input.pending.size();
  e.jobs_tested = p.counters.jobs_tested;
  e.probes = p.counters.probes;
  e.settings = to_record(s);
  e.deadline = to_record(snap.rule);
  return decision::of(scheduler_stream, std::move(e));
}

decision decide_plan(const world& w, const std::set<std::string>& stale, const deadline_rule& rule, const backfill_settings& s,
                     time_us now) {
  auto snap = snapshot_for_plan(w, stale, rule, s, now);
  return decide_plan(w, snap, run_planner(snap));
}

recorded_plan_inputs plan_inputs_of(const ev::plan_made& p) {
  recorded_plan_inputs in;
  in.stale.insert(p.stale_excluded.begin(), p.stale_excluded.end());
  in.rule = rule_of(p.deadline);
  in.settings = settings_of(p.settings);
  in.planned_at = util::parse_time_us(p.planned_at).value_or(0);
  in.based_on = p.based_on;
  return in;
}

void record_plan(live_plan& plan, const ev::plan_made& p, time_us at) {
  plan = live_plan{};
  plan.planned_at = util::parse_time_us(p.planned_at).value_or(at);
  plan.digest = p.digest;
  for (const auto& st : p.starts) plan.start_for_worker[st.worker_id] = st.job_id;
  for (const auto& r : p.reservations) {
    planned_slot slot;
    slot.worker_id = r.worker_id;
    slot.start = r.start ? util::parse_time_us(*r.start).value_or(0) : 0;
    slot.end = r.end ? util::parse_time_us(*r.end).value_or(0) : 0;
    plan.reservations[r.job_id] = slot;
  }
  plan.reservations_total = p.reservations_total;
}

const std::string* planned_job_for(const world& w, const std::string& worker_id) {
  auto it = w.plan.start_for_worker.find(worker_id);
  return it == w.plan.start_for_worker.end() ? nullptr : &it->second;
}

const planned_slot* reservation_of(const world& w, const std::string& job_id) {
  auto it = w.plan.reservations.find(job_id);
  return it == w.plan.reservations.end() ? nullptr : &it->second;
}

}  // namespace baton::core
