#include "core/world/world.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/world/dag.hpp"
#include "core/jobs/job_events.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/world/priority.hpp"
#include "core/memory/text_order.hpp"
#include "core/policy/usage.hpp"
#include "core/util/time.hpp"

namespace baton::core {
namespace {

// One entry per idle worker with a known allocation end (a multiset: ends can coincide).
void track_idle_end(world& w, const worker& wk, bool add) {
  if (!wk.allocation_ends_at) return;
  auto& ends = w.idle_allocation_ends_by_image[wk.worker_image_key];
  if (add) {
    ends.insert(wk.allocation_ends_at);
  } else {
    if (auto it = ends.find(wk.allocation_ends_at); it != ends.end()) ends.erase(it);
    if (ends.empty()) w.idle_allocation_ends_by_image.erase(wk.worker_image_key);
  }
}

void index_remove(world& w, const worker& wk) {
  auto it = w.idle_by_image.find(wk.worker_image_key);
  if (it == w.idle_by_image.end() || !it->second.erase(rank_of(wk))) return;
  track_idle_end(w, wk, false);
  // (An image's set stays when its last idle worker leaves: in a busy system it empties and
  // fills again with every poll, and erasing it cost a node, a copy of the image's name and
  // the tree's own allocation each time. Readers take an empty set as no idle worker.)
}

// Into the idle index, unless it is gone or a placeholder (the caller knows it holds no job).
void add_idle(world& w, const worker& wk) {
  if (wk.gone || wk.placeholder) return;
  if (w.idle_by_image[wk.worker_image_key].insert(rank_of(wk)).second) track_idle_end(w, wk, true);
}

void refresh_worker_index(world& w, const worker& wk) {
  index_remove(w, wk);
  if (!w.held_job(wk.id)) add_idle(w, wk);
}

// What a queued job asks of a worker's remaining allocation (see world::queued_limits_by_image).
void track_queued_limit(world& w, const job& j, bool add) {
  auto& limits = w.queued_limits_by_image[j.worker_image_key];
  std::pair<bool, int64_t> key{j.checkpoints, j.time_limit_seconds.value_or(-1)};
  if (add) {
    ++limits[key];
  } else {
    if (auto it = limits.find(key); it != limits.end() && --it->second == 0) limits.erase(it);
    if (limits.empty()) w.queued_limits_by_image.erase(j.worker_image_key);
  }
}

void index_insert(world& w, const job& j) {
  w.queued_by_image[j.worker_image_key].insert(queue_key_of(j));
  if (constrained(j)) ++w.constrained_queued_by_image[j.worker_image_key];
}

void index_erase(world& w, const job& j) {
  if (constrained(j) && --w.constrained_queued_by_image[j.worker_image_key] == 0)
    w.constrained_queued_by_image.erase(j.worker_image_key);
  if (auto it = w.queued_by_image.find(j.worker_image_key); it != w.queued_by_image.end()) {
    it->second.erase(queue_key_of(j));
    if (it->second.empty()) w.queued_by_image.erase(it);
  }
}

// A staged re-key must look at this job again at its swap.
void note_change(world& w, job& j) {
  if (w.staging) w.changed_while_staging.push_back(&j);
}

// Age accrues only while the job is eligible (Slurm's accrue time).
void track_accrual(job& j, bool was_eligible, time_us at) {
  bool now = eligible(j);
  if (was_eligible == now) return;
  if (now) {
    j.eligible_since = at;
  } else {
    j.accrued_us = accrued_at(j, at);
    j.eligible_since.reset();
  }
}

std::string qos_group(const job& j) { return j.qos + "/" + j.user; }

// (account, user, qos) as one key: each part's length, then its bytes, so no two groups share one.
std::string group_key(const job& j) {
  std::string key;
  key.reserve(3 * sizeof(uint32_t) + j.account.size() + j.user.size() + j.qos.size());
  for (const std::string* part : {&j.account, &j.user, &j.qos}) {
    const auto n = static_cast<uint32_t>(part->size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n).append(*part);
  }
  return key;
}

// The job's group slots in this world (job_group_slots), found on first use, each group's
// once (world::group_slots). job.created empties them (an event before it, in a damaged log,
// counts in the blank job's groups as it always did).
job_group_slots& slots_of(world& w, job& j) {
  if (!j.slots.group) {
    auto [group, added] = w.group_slots.try_emplace(group_key(j));
    if (added) {
      auto& g = group->second;
      auto usage = w.usage.try_emplace(association_of(j)).first;  // every association with jobs takes part in fair share
      g.usage = &usage->second;
      g.association = &usage->first;
      std::string qos_user = qos_group(j);
      g.running_in_qos = &w.running_by_qos_user[qos_user];
      g.queued_in_qos = &w.queued_by_qos_user[qos_user];
      g.active_of_user = &w.active_jobs_by_user[j.user];
    }
    j.slots.group = &group->second;
  }
  return *j.slots.group;
}

// In or out of the queued jobs' indexes (held and blocked ones too): w.queued, the limits, the QOS group's.
void track_queued(world& w, job& j, bool add) {
  const std::pair<time_us, std::string_view> key{j.created_at, j.id};
  auto& in_qos = *slots_of(w, j).queued_in_qos;
  if (add) {
    w.queued.emplace_hint(w.queued.end(), key, &j);  // (hinted as by_created)
    in_qos.emplace_hint(in_qos.end(), key, &j);
  } else {
    w.queued.erase(key);
    in_qos.erase(key);
  }
  track_queued_limit(w, j, add);
}

// Folds a run segment that just closed into its association's decayed usage, and keeps the
// set of associations' running jobs (measured when a recalculation asks).
void track_usage(world& w, job& j, std::optional<size_t> open_before) {
  auto& u = *slots_of(w, j).usage;
  time_us half_life = w.priority.policy.decay_half_life;
  if (open_before && *open_before < j.segments.size()) {
    const auto& seg = j.segments[*open_before];
    if (seg.ended_at && seg.started) {  // an assignment that never started used nothing
      time_us end = *seg.ended_at;
      u.closed = decay(u.closed, u.as_of, std::max(u.as_of, end), half_life) +
                 decayed_gpu_seconds(static_cast<int>(j.gpu_count), seg.started_at, end, end, half_life);
      u.as_of = std::max(u.as_of, end);
    }
  }
  if (!j.segments.empty() && !j.segments.back().ended_at && j.segments.back().started)
    u.running.insert_or_assign(j.id,
                               association_usage::open_segment{j.segments.back().started_at, static_cast<int>(j.gpu_count)});
  else
    u.running.erase(j.id);
}

// Sets one of a queued job's reasons to wait (blocked, over_limit), moving it in or out of
// the index and its age accrual when that changes whether it is eligible.
void set_waiting_flag(world& w, job& j, bool job::*flag, bool value, time_us at) {
  if (j.*flag == value) return;
  note_change(w, j);
  bool was_eligible = eligible(j);
  if (was_eligible) index_erase(w, j);
  j.*flag = value;
  track_accrual(j, was_eligible, at);
  if (eligible(j)) index_insert(w, j);
}

// A parent ended: its queued children whose conditions now all hold become eligible, from
// this event's time (no event of their own: it follows from the parent's). Children that
// can now never run stay blocked (the scheduler's dependency fallout may cancel them).
void release_dependents(world& w, const std::string& parent, time_us at) {
  auto it = w.dependents.find(parent);
  if (it == w.dependents.end()) return;
  for (const auto& child_id : it->second) {
    job& c = w.jobs.at(child_id);
    if (c.status != job_status::queued) continue;
    set_waiting_flag(w, c, &job::blocked, dependencies_state(w, c) != dependency_state::satisfied, at);
  }
}

// QOS running limits (Slurm's): at most max_running_per_user jobs of a user hold a worker
// in a QOS; the rest of that user's queued jobs in the QOS wait (reason QOSMaxJobsPerUser).

// The recorded policy's running limit for the job's QOS (0: none).
uint32_t qos_limit(const world& w, const job& j) {
  const qos_def* q = w.priority.policy.find_qos(j.qos);
  return q ? q->max_running_per_user : 0;
}

bool at_qos_limit(world& w, job& j) {
  uint32_t limit = qos_limit(w, j);
  return limit != 0 && *slots_of(w, j).running_in_qos >= limit;
}

// job.pruned on an ended job: it leaves `jobs` and every index for a stub in `pruned`. Ended,
// it is in no queue index, holds no worker and counts as no one's active job already.
void evict_pruned(world& w, job& j) {
  w.pruned.add(j.id, {j.status, j.created_at, j.user, j.worker_image_key, j.assigned_worker_id});
  w.by_created.erase({j.created_at, j.id});
  for (const auto& d : j.depends_on)
    if (auto it = w.dependents.find(d.job_id); it != w.dependents.end()) {
      it->second.erase(j.id);
      if (it->second.empty()) w.dependents.erase(it);
    }
  w.plan.reservations.erase(j.id);
  if (auto a = w.array_of_job.find(j.id); a != w.array_of_job.end()) {
    if (auto arr = w.arrays.find(a->second.array_id); arr != w.arrays.end()) {
      arr->second.erase(a->second.index);
      if (arr->second.empty()) w.arrays.erase(arr);
    }
    w.array_of_job.erase(a);
  }
  auto& changed = w.changed_while_staging;
  changed.erase(std::remove(changed.begin(), changed.end(), &j), changed.end());
  const std::string id = j.id;  // (j's own id goes with it)
  w.jobs.erase(id);
}

// P: ev::payload (moved into the job) or const ev::payload& (copied from).
template <class P>
void apply_job(world& w, std::string_view id_seen, uint64_t id_hash, P&& payload, time_us at) {
  if (const auto* raw = std::get_if<ev::unknown_event>(&static_cast<const ev::payload&>(payload))) {
    auto typed = ev::decode(raw->type, raw->schema, raw->bytes);  // kept as bytes: applies as what they say
    if (!std::holds_alternative<ev::unknown_event>(typed)) return apply_job(w, id_seen, id_hash, std::move(typed), at);
  }
  const job_event kind = job_event_of(payload);
  const job_table::key key{id_seen, id_hash};
  job* found = w.jobs.find(key);
  // A pruned job's stream takes nothing more (older logs may hold a requeue after its prune).
  if (!found && w.pruned.contains(id_seen)) return;
  job& j = found ? *found : w.jobs.find_or_add(key);
  const std::string& id = j.id;  // (the same id, as a string that lives as long as the job)
  note_change(w, j);
  bool was_queued = j.status == job_status::queued && j.created_at != 0;
  bool was_eligible = was_queued && eligible(j);
  std::optional<size_t> open_before;
  if (!j.segments.empty() && !j.segments.back().ended_at) open_before = j.segments.size() - 1;
  // The worker it occupies before the change, viewed in the worker itself (workers are never
  // erased), or in a copy when no such worker is known.
  const worker* old_wk = nullptr;
  std::string unknown_worker;
  std::string_view old_worker;
  if (occupies_worker(j.status)) {
    old_wk = w.find_worker(j.assigned_worker_id);
    old_worker = old_wk ? std::string_view(old_wk->id) : std::string_view(unknown_worker = j.assigned_worker_id);
  }
  bool was_active = j.created_at != 0 && !is_terminal(j.status);
  bool was_running = occupies_worker(j.status);
  if (was_queued) track_queued(w, j, false);
  if (was_eligible) index_erase(w, j);
  bool was_preempted = !j.preempted_by.empty();
  std::optional<array_task> task;  // (read before evolve takes the payload apart)
  if (const auto* c = std::get_if<ev::job_created>(&static_cast<const ev::payload&>(payload));
      c && !c->array_id.empty() && j.created_at == 0)
    task = array_task{c->array_id, c->array_index};
  evolve(j, std::forward<P>(payload), at);
  if (was_preempted != !j.preempted_by.empty()) was_preempted ? --w.preemptions_in_flight : ++w.preemptions_in_flight;
  if (kind == job_event::preempted) w.plan.start_for_worker.erase(j.assigned_worker_id);  // its worker is the preemptor's
  if (kind == job_event::created) {
    j.slots = {};    // its groups are set now (found before it, they were an uncreated job's)
    slots_of(w, j);  // every association with jobs takes part in fair share
    // (Hinted at the end: a new job is most often the newest, and then no search is made.)
    w.by_created.emplace_hint(w.by_created.end(), j.created_at, j.id);
    set_priority(w, j);
    for (const auto& d : j.depends_on) w.dependents[d.job_id].insert(j.id);
    j.blocked = dependencies_state(w, j) != dependency_state::satisfied;
    if (task) {
      w.arrays[task->array_id][task->index] = j.id;
      w.array_of_job[j.id] = std::move(*task);
    }
  }
  bool running = occupies_worker(j.status);
  bool limit_crossed = false;  // the group's count reached its limit, or fell below it
  if (running != was_running) {
    auto& n = *slots_of(w, j).running_in_qos;
    uint32_t limit = qos_limit(w, j);
    bool was_at = limit && n >= limit;
    n = running ? n + 1 : n - 1;
    limit_crossed = limit && was_at != (n >= limit);
  }
  if (j.status == job_status::queued) j.over_limit = at_qos_limit(w, j);
  track_accrual(j, was_eligible, at);
  bool active = !is_terminal(j.status);
  if (was_active != active) {
    auto& n = *slots_of(w, j).active_of_user;
    n = active ? n + 1 : n - 1;
  }
  if (was_active && !active) release_dependents(w, id, at);
  if (j.status == job_status::queued) track_queued(w, j, true);
  if (eligible(j)) index_insert(w, j);
  if (kind == job_event::assigned) {  // the plan's start for it, or its reservation, is used up
    w.plan.reservations.erase(j.id);
    if (auto s = w.plan.start_for_worker.find(j.assigned_worker_id); s != w.plan.start_for_worker.end() && s->second == j.id)
      w.plan.start_for_worker.erase(s);
  }
  if (limit_crossed)  // the group's other queued jobs now wait, or may go
    for (auto& [key, other] : *slots_of(w, j).queued_in_qos)
      set_waiting_flag(w, *other, &job::over_limit, at_qos_limit(w, *other), at);
  if (open_before || (!j.segments.empty() && !j.segments.back().ended_at)) track_usage(w, j, open_before);
  static const std::string none;
  const std::string& new_worker = occupies_worker(j.status) ? j.assigned_worker_id : none;  // (j stays put until evict_pruned)
  if (old_worker != new_worker) {
    if (!old_worker.empty()) {
      w.job_of_worker.clear(old_worker);
      if (old_wk) add_idle(w, *old_wk);  // (a busy worker is never in the idle index, and now holds nothing)
    }
    if (!new_worker.empty()) {
      w.job_of_worker.set(new_worker, id);
      if (const worker* wk = w.find_worker(new_worker)) index_remove(w, *wk);
    }
  }
  if (kind == job_event::pruned && is_terminal(j.status)) evict_pruned(w, j);
}

// Gives every queued job its priority under the recorded state and rebuilds the
// evaluation-order index from scratch (cheaper than moving each key). When the policy itself
// may have changed, a QOS running limit may have too: each job's over-limit flag is
// re-checked (a deferred recalculation keeps the policy, so its flags already hold).
void rekey_queue(world& w, time_us at, bool policy_may_change) {
  w.refresh_lookups();
  w.queued_by_image.clear();
  w.constrained_queued_by_image.clear();
  // The new keys are collected per image, then inserted in order into fresh trees.
  std::map<std::string, std::vector<queue_key>> keys;
  if (!w.queued.empty()) keys[w.queued.begin()->second->worker_image_key].reserve(w.queued.size());
  for (const auto& [key, owner] : w.queued) {
    job& j = *owner;
    set_priority(w, j);
    if (policy_may_change) {
      bool was_eligible = eligible(j);
      j.over_limit = at_qos_limit(w, j);
      track_accrual(j, was_eligible, at);
    }
    if (!eligible(j)) continue;
    keys[j.worker_image_key].push_back(queue_key_of(j));
    if (constrained(j)) ++w.constrained_queued_by_image[j.worker_image_key];
  }
  for (auto& [image, list] : keys) {
    std::sort(list.begin(), list.end());
    auto& set = w.queued_by_image[image];
    for (auto& k : list) set.insert(std::move(k));
  }
}

// scheduler.priorities_recalculated: its figures are recorded over the pending recalculation
// if there is one (they were decided against it), else over the one in force. A deferred one
// waits for scheduler.priorities_applied; any other is in force at once.
void record_priorities(world& w, const ev::priorities_recalculated& payload, time_us at) {
  priority_state base = w.priority_pending ? std::move(*w.priority_pending) : w.priority;
  w.priority_pending.reset();
  record_recalculation(base, payload, at);
  if (payload.deferred) {
    w.priority_pending = std::move(base);
    return;
  }
  w.priority = std::move(base);
  rekey_queue(w, at, true);
}

void apply_pending_priorities(world& w, time_us at) {
  if (!w.priority_pending) return;
  w.priority = std::move(*w.priority_pending);
  w.priority_pending.reset();
  rekey_queue(w, at, false);
}

// Puts the worker in the worker indexes as it now is.
void index_worker(world& w, const std::string& id, const worker& wk) {
  w.by_registered.insert({wk.registered_at, wk.id});
  if (wk.placeholder && !wk.gone && !wk.provider_id.empty()) w.placeholder_by_provider[wk.provider_id] = id;
  if (!wk.gone) w.worker_gpus_by_image[wk.worker_image_key].insert(wk.gpu_count);
  if (!wk.placeholder)
    w.largest_worker_gpus = std::max<uint32_t>(w.largest_worker_gpus, static_cast<uint32_t>(std::max(0, wk.gpu_count)));
  refresh_worker_index(w, wk);
}

void apply_worker(world& w, const std::string& id, const ev::payload& p, time_us at) {
  w.refresh_lookups();
  auto found = w.lookups.workers.find(id);
  worker& wk = found != w.lookups.workers.end() ? *found->second : w.workers[id];
  if (found == w.lookups.workers.end()) {
    wk.id = id;
    w.lookups.workers.emplace(id, &wk);
  }
  index_remove(w, wk);
  auto capacity_before = std::make_tuple(!wk.gone && wk.registered_at != 0, wk.worker_image_key, wk.gpu_count);
  if (!wk.gone && wk.registered_at != 0) {
    auto& gpus = w.worker_gpus_by_image[wk.worker_image_key];
    if (auto g = gpus.find(wk.gpu_count); g != gpus.end()) gpus.erase(g);
  }
  w.by_registered.erase({wk.registered_at, wk.id});
  if (!wk.provider_id.empty() && wk.placeholder) w.placeholder_by_provider.erase(wk.provider_id);
  bool adopting = std::holds_alternative<ev::worker_placeholder_adopted>(p);
  time_us placeholder_since = wk.registered_at;
  evolve(wk, p, at);
  if (adopting) wk.registered_at = placeholder_since;  // same row, same place in listings (RelayMD adopts in place)
  if (capacity_before != std::make_tuple(!wk.gone, wk.worker_image_key, wk.gpu_count)) ++w.worker_gpus_version;
  index_worker(w, id, wk);
}

}  // namespace

void rebuild_indexes(world& w) {
  w.lookups = {};
  w.refresh_lookups();
  // (In id order: should two jobs claim one worker, the same one wins whatever the hashing.)
  w.jobs.for_each_by_id([&](job& j) {
    w.by_created.insert({j.created_at, j.id});
    for (const auto& d : j.depends_on) w.dependents[d.job_id].insert(j.id);
    if (!j.preempted_by.empty()) ++w.preemptions_in_flight;
    j.slots = {};
    auto& slots = slots_of(w, j);
    if (!is_terminal(j.status)) ++*slots.active_of_user;
    if (occupies_worker(j.status)) {
      ++*slots.running_in_qos;
      w.job_of_worker.set(j.assigned_worker_id, j.id);
    }
    if (j.status == job_status::queued) track_queued(w, j, true);
    if (eligible(j)) index_insert(w, j);
  });
  for (const auto& [id, wk] : w.workers) index_worker(w, id, wk);
}

std::vector<worker_rank> idle_workers(const world& w) {
  std::vector<worker_rank> out;
  for (const auto& [image, ranks] : w.idle_by_image) out.insert(out.end(), ranks.begin(), ranks.end());
  std::sort(out.begin(), out.end());
  return out;
}

bool eligible(const job& j) { return j.status == job_status::queued && !j.held && !j.blocked && !j.over_limit; }
bool constrained(const job& j) { return !j.preferred_clusters.empty() || j.gpu_count > 1 || !j.conformance.empty(); }

bool operator<(const queue_key& a, const queue_key& b) {
  if (a.preemptor != b.preemptor) return a.preemptor;
  if (a.tier != b.tier) return a.tier > b.tier;
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.submitted != b.submitted) return a.submitted < b.submitted;
  return text_less(a.id, b.id);
}

queue_key queue_key_of(const job& j) { return {j.preemptor, j.priority_tier, j.priority, j.created_at, j.id, &j}; }

bool operator<(const worker_rank& a, const worker_rank& b) {
  if (a.hpc != b.hpc) return a.hpc > b.hpc;
  if (a.gpu_count != b.gpu_count) return a.gpu_count > b.gpu_count;
  if (a.vram_centi_gb != b.vram_centi_gb) return a.vram_centi_gb > b.vram_centi_gb;
  if (a.model_rank != b.model_rank) return a.model_rank > b.model_rank;
  if (a.registered_at != b.registered_at) return a.registered_at < b.registered_at;
  return text_less(a.id, b.id);
}

worker_rank rank_of(const worker& w) {
  double vram = w.vram_gb > 0 ? w.vram_gb : w.model.vram_gb;
  return {w.kind == platform::hpc ? 1 : 0,
          w.gpu_count,
          static_cast<int64_t>(std::llround(vram * 100)),
          w.model.rank,
          w.registered_at,
          w.id,
          &w};
}

int64_t score_of(const worker& w) {
  auto r = rank_of(w);
  return r.hpc * 1'000'000'000LL + r.gpu_count * 1'000'000LL + r.vram_centi_gb * 10 + r.model_rank;
}

void world::refresh_lookups() const {
  if (lookups.workers.size() == workers.size()) return;
  lookups.workers.clear();
  auto& self = const_cast<world&>(*this);  // the table points at elements; the map stays unchanged
  for (auto& [id, wk] : self.workers) lookups.workers.emplace(id, &wk);
}

const job* world::find_job(const std::string& id) const { return jobs.find(id); }

std::optional<job> as_pruned(const world& w, const std::string& job_id, const ev::payload& payload, time_us at) {
  const job* j = w.find_job(job_id);
  if (!j) return std::nullopt;
  job last = *j;
  evolve(last, payload, at);
  return last;
}

const array_task* world::array_of(const std::string& job_id) const {
  auto it = array_of_job.find(job_id);
  return it == array_of_job.end() ? nullptr : &it->second;
}

std::optional<pruned_job> world::find_pruned(const std::string& id) const { return pruned.find(id); }

std::optional<job_status> world::status_of_job(const std::string& id) const {
  if (const job* j = find_job(id)) return j->status;
  if (auto p = find_pruned(id)) return p->status;
  return std::nullopt;
}

const worker* world::find_worker(const std::string& id) const {
  refresh_lookups();
  auto it = lookups.workers.find(id);
  return it == lookups.workers.end() ? nullptr : it->second;
}

const std::string* world::held_job(const std::string& worker_id) const { return job_of_worker.find(worker_id); }

void apply_job_event(world& w, std::string_view job_id, uint64_t job_id_hash, ev::payload&& payload, time_us at) {
  ++w.applied;
  apply_job(w, job_id, job_id_hash, std::move(payload), at);
}

void apply(world& w, const decision& d, time_us at) {
  for (const auto& e : d.events) apply(w, e.stream, e.payload, at);
}

void apply(world& w, const std::string& stream, const std::string& type, const nlohmann::json& payload, time_us at) {
  apply(w, stream, ev::from_json(type, payload), at);
}

void apply(world& w, const std::string& stream, const ev::payload& payload, time_us at) {
  if (stream == daemon_stream) return;
  if (stream.rfind("job/", 0) == 0) {
    const std::string_view id = std::string_view(stream).substr(4);
    ++w.applied;
    apply_job(w, id, job_table::hash_of(id), payload, at);
    return;
  }
  if (const auto* raw = std::get_if<ev::unknown_event>(&payload)) {  // kept as bytes: apply what they read as
    auto typed = ev::decode(raw->type, raw->schema, raw->bytes);
    if (!std::holds_alternative<ev::unknown_event>(typed)) return apply(w, stream, typed, at);
  }
  ++w.applied;
  if (stream.rfind("worker/", 0) == 0) {
    apply_worker(w, stream.substr(7), payload, at);
  } else if (stream.rfind("operator/", 0) == 0) {
    auto& o = w.operators[stream.substr(9)];
    o.name = stream.substr(9);
    evolve(o, payload, at);
  } else if (stream == storage_stream) {
    evolve_storage(w.storage, payload, at);
  } else if (stream == pilot_stream) {
    evolve_pilot_token(w.pilot_token, w.pilot_token_rotated_at, payload, at);
  } else {
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, ev::priorities_recalculated>) {
            record_priorities(w, p, at);
          } else if constexpr (std::is_same_v<T, ev::priorities_applied>) {
            apply_pending_priorities(w, at);
          } else if constexpr (std::is_same_v<T, ev::plan_made>) {
            record_plan(w.plan, p, at);
          } else if constexpr (std::is_same_v<T, ev::cluster_disabled>) {
            w.disabled_clusters.insert(stream.substr(8));
          } else if constexpr (std::is_same_v<T, ev::cluster_enabled>) {
            w.disabled_clusters.erase(stream.substr(8));
          } else if constexpr (std::is_same_v<T, ev::cloud_scaled> || std::is_same_v<T, ev::cloud_scale_failed>) {
            auto& slot = w.salad_status[std::is_same_v<T, ev::cloud_scaled> ? "last_scaled" : "last_failure"];
            slot = events::to_json(p);
            slot["at"] = util::format_time_us(at);
          } else if constexpr (std::is_same_v<T, ev::cluster_submission_failed>) {
            auto& f = w.last_submission_failure[stream.substr(8)];
            f = events::to_json(p);
            f["at"] = util::format_time_us(at);
          }
        },
        payload);
  }
}

}  // namespace baton::core
