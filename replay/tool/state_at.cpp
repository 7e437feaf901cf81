#include "replay/tool/state_at.hpp"

#include <limits>

#include "core/app/decide.hpp"
#include "core/util/time.hpp"
#include "replay/recovery/world_recovery.hpp"
#include "shapes/reply_json.hpp"

namespace baton::replay {

using nlohmann::json;
namespace C = core::commands;

json state_at(const events::event_store& store, const state_query& q, const progress_fn& progress) {
  // The nearest state snapshot at or before the point, then the events after it.
  uint64_t upto = q.seq.value_or(0);
  if (!q.seq && q.time) upto = last_seq_at_or_before(store, *q.time);
  world_recovery rec;
  if (q.seq || !q.time || upto > 0) rec = recover_world(store, upto, progress);
  core::world& w = rec.world;
  const uint64_t last_seq = rec.last_seq;
  core::time_us last_at = 0;
  if (last_seq)
    if (auto e = store.read(last_seq, 1); !e.empty()) last_at = e.front().recorded_at_us;
  // The point asked for: a time as given (the world then is the one after the last event
  // recorded by it, and the API's answers are given as of that time), else the event's time.
  const core::time_us at = q.time.value_or(last_at);
  // Heartbeats are not events: every worker not reaped or gone by then counts as live.
  core::lease_book leases;
  for (const auto& [id, wk] : w.workers)
    if (!wk.gone) leases.touch(id, at);
  core::scheduler_settings s;
  s.priority = w.priority.policy;  // the policy the last recalculation recorded
  // The same questions an admin asks the API, answered by the same core on the world as it was.
  auto ask = [&](core::command c) {
    core::envelope e{core::principal::operator_named("replay"), "operator:replay", "", std::move(c), std::nullopt};
    auto o = core::decide(w, leases, s, e, at);
    return o.answer.error ? shapes::error_body(*o.answer.error) : shapes::body_of(o.answer.value, at);
  };
  C::list_jobs jobs;
  jobs.limit = std::numeric_limits<size_t>::max();
  if (!q.all_jobs) jobs.statuses = {"queued", "assigned", "running", "handoff", "cancelling"};
  C::list_workers workers;
  workers.limit = std::numeric_limits<size_t>::max();

  json counts = json::object();
  auto count = [&counts](core::job_status st) { counts[core::to_string(st)] = counts.value(core::to_string(st), 0) + 1; };
  w.jobs.for_each_unordered([&](const core::job& j) { count(j.status); });
  // Pruned jobs count, as they did before they left the world.
  w.pruned.for_each(false, [&](const std::string&, const core::pruned_job& p) { count(p.status); });
  json starts = json::array(), reservations = json::array();
  for (const auto& [worker_id, job_id] : w.plan.start_for_worker)
    starts.push_back({{"worker_id", worker_id}, {"job_id", job_id}});
  for (const auto& [job_id, slot] : w.plan.reservations)
    reservations.push_back({{"job_id", job_id},
                            {"worker_id", slot.worker_id},
                            {"start", util::format_time_us(slot.start)},
                            {"end", slot.end ? json(util::format_time_us(slot.end)) : json(nullptr)}});
  json placeholders = json::array();
  for (const auto& [provider, worker_id] : w.placeholder_by_provider)
    placeholders.push_back({{"provider_id", provider}, {"worker_id", worker_id}});
  json failures = json::object();
  for (const auto& [cluster, failure] : w.last_submission_failure) failures[cluster] = failure;

  json worker_items = ask(workers).value("items", json::array());
  for (auto& wk : worker_items) wk["last_heartbeat"] = nullptr;  // not in the log (see "note")

  json last_event = last_seq ? json{{"seq", last_seq}, {"time", util::format_time_us(last_at)}} : json(nullptr);
  json at_json = {{"seq", last_seq}, {"time", last_seq || q.time ? json(util::format_time_us(at)) : json(nullptr)}};
  return {
      {"at", std::move(at_json)},
      {"last_event", std::move(last_event)},
      {"job_counts", counts},
      {"jobs", ask(jobs).value("items", json::array())},
      {"workers", std::move(worker_items)},
      {"queue", ask(C::list_priorities{})},
      {"fair_share", ask(C::fairshare{})},
      {"plan",
       {{"planned_at", w.plan.planned_at ? json(util::format_time_us(w.plan.planned_at)) : json(nullptr)},
        {"starts", starts},
        {"reservations", reservations},
        {"reservations_total", w.plan.reservations_total}}},
      {"clusters", {{"disabled", w.disabled_clusters}, {"placeholders", placeholders}, {"last_submission_failure", failures}}},
      {"salad", w.salad_status},
      {"replayed",
       {{"from_snapshot_at", rec.snapshot_seq}, {"events_after_it", rec.events_applied}, {"snapshots_skipped", rec.skipped}}},
      {"note", "heartbeats are not logged: a worker counts as live until its reap or deregistration"}};
}

}  // namespace baton::replay
