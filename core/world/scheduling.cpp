#include "core/world/scheduling.hpp"

#include "core/world/plan_cycle.hpp"
#include "core/util/time.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace baton::core {

namespace {

// can_run for a worker and a job already known to share an image: the walk below takes both
// from one image's indexes, and comparing the image strings again was one memcmp for every
// (worker, job) pair it looked at.
bool can_run_same_image(const worker& w, const job& j) {
  if (w.gpu_count < static_cast<int>(j.gpu_count)) return false;
  // A pending allocation's driver is not known yet: it is checked when the worker registers.
  if (!j.conformance.empty() && !w.placeholder && fingerprint_of(w) != j.conformance) return false;
  if (j.preferred_clusters.empty()) return true;
  auto c = w.cluster();
  return !c.empty() && std::find(j.preferred_clusters.begin(), j.preferred_clusters.end(), c) != j.preferred_clusters.end();
}

}  // namespace

bool can_run(const worker& w, const job& j) { return w.worker_image_key == j.worker_image_key && can_run_same_image(w, j); }

namespace {

// How many (job, better worker) pairs a decision keeps as its example: the counts re-derive
// the decision; the sample only shows an auditor who went first, and it costs every poll.
constexpr size_t decision_sample_size = 3;

// A choice's record, begun with what every record names: the policy and the poller. A record
// left in `out` by an earlier choice is written over (choose_assignment_into): its fields are
// reset, and its lists keep their entries, for list_writer to write over and trim.
assignment_record& begin_record(assignment_choice& out, const char* policy, const worker& me) {
  auto& r = out.record ? *out.record : out.record.emplace();
  r.policy.assign(policy);
  r.worker_id.assign(me.id);
  r.worker_score = score_of(me);
  r.planned_at.reset();
  r.matched = false;
  r.idle_ranked_above = r.jobs_examined = r.taken_by_better_workers = 0;
  r.deadline.reset();
  r.conformance_pin.reset();
  return r;
}

// Writes a record's list entry by entry over the entries an earlier choice left there (the
// ids' memory kept: in a re-derivation these copies were most of a choice's allocations),
// and drops the rest at finish(). Every record begun must have both lists finished.
template <class T>
class list_writer {
 public:
  explicit list_writer(std::vector<T>& items) : items_(items) {}
  T& next() { return n_ < items_.size() ? items_[n_++] : (++n_, items_.emplace_back()); }
  size_t size() const { return n_; }
  void finish() { items_.resize(n_); }

 private:
  std::vector<T>& items_;
  size_t n_ = 0;
};

// A record without a sample or stale workers (a plan's start, an empty queue).
void no_lists(assignment_record& r) {
  r.taken_sample.clear();
  r.stale_excluded.clear();
}

// Without constrained jobs (pinned to clusters or a fingerprint, or more than one GPU) every idle worker of the image can run every queued job of it, so the
// greedy matching pairs the i-th best fresh idle worker with the i-th oldest job: the poller
// gets job number k, k = fresh idle workers ranked above it. O(log n + stale).
void choose_unpinned(const world& w, const worker& me, const ranked_set<worker_rank>& idle, const ranked_set<queue_key>& queued,
                     const std::set<std::string>& stale_all, assignment_choice& out) {
  auto my_rank = rank_of(me);
  size_t k = idle.order_of_key(my_rank);
  auto& r = begin_record(out, "greedy-rank-v1", me);
  list_writer<std::string> stale_excluded(r.stale_excluded);
  list_writer<std::pair<std::string, std::string>> taken_sample(r.taken_sample);
  for (const auto& id : stale_all) {  // stale workers that would otherwise rank above the poller
    const worker* s = w.find_worker(id);
    if (s && s->worker_image_key == me.worker_image_key && idle.find(rank_of(*s)) != idle.end() && rank_of(*s) < my_rank) {
      stale_excluded.next().assign(id);
      --k;
    }
  }
  auto job_it = queued.begin();
  auto worker_it = idle.begin();
  for (size_t i = 0; i < std::min<size_t>({k, decision_sample_size, queued.size()}); ++i, ++job_it, ++worker_it) {
    while (stale_all.count(worker_it->owner->id)) ++worker_it;
    auto& [job_id, worker_id] = taken_sample.next();
    job_id.assign(job_it->id);
    worker_id.assign(worker_it->owner->id);
  }
  stale_excluded.finish();
  taken_sample.finish();
  if (k < queued.size()) out.job_id = std::string(queued.find_by_order(k)->id);
  r.matched = true;
  r.idle_ranked_above = k;
  r.jobs_examined = std::min(k + 1, queued.size());
  r.taken_by_better_workers = std::min(k, queued.size());
}

using limits_set = std::map<std::pair<bool, int64_t>, uint32_t>;  // world::queued_limits_by_image: (checkpoints, limit) -> jobs

// The limits that decide whether a worker fits all (longest: wants_longest) or any (shortest)
// queued job: per checkpoint class, the extreme explicit limit and, when some job of the class
// has none, the default (nullopt). fit_of is monotone in the limit, so these suffice.
struct extreme_limits {
  std::array<std::pair<bool, std::optional<int64_t>>, 4> items;  // (checkpoints, limit)
  size_t n = 0;
};
extreme_limits extremes(const limits_set& limits, bool wants_longest) {
  extreme_limits out;
  for (bool cp : {false, true}) {
    auto first = limits.lower_bound({cp, INT64_MIN});
    auto end = cp ? limits.end() : limits.lower_bound({true, INT64_MIN});
    if (first == end) continue;
    if (first->first.second < 0) out.items[out.n++] = {cp, std::nullopt};  // -1 sorts first: a job without a limit
    auto explicit_first = limits.lower_bound({cp, 0});
    if (explicit_first == end) continue;
    out.items[out.n++] = {cp, wants_longest ? std::prev(end)->first.second : explicit_first->first.second};
  }
  return out;
}

bool fits_all(const limits_set& limits, time_us remaining, const deadline_rule& r) {
  auto e = extremes(limits, true);
  for (size_t i = 0; i < e.n; ++i)
    if (!fit_of(remaining, e.items[i].second, e.items[i].first, r).admitted) return false;
  return true;
}

bool fits_any(const limits_set& limits, time_us remaining, const deadline_rule& r) {
  auto e = extremes(limits, false);
  for (size_t i = 0; i < e.n; ++i)
    if (fit_of(remaining, e.items[i].second, e.items[i].first, r).admitted) return true;
  return false;
}

// Greedy matching walked job by job: the general case (constrained jobs, or idle workers whose
// allocations some queued job does not fit). O(idle workers above the poller + jobs walked).
void choose_by_walk(const world& w, const worker& me, const ranked_set<worker_rank>& idle, const ranked_set<queue_key>& queued,
                    const std::set<std::string>& stale_all, const deadline_rule& rule, time_us now, assignment_choice& out) {
  auto& r = begin_record(out, "greedy-rank-v1", me);
  list_writer<std::string> stale_excluded(r.stale_excluded);
  list_writer<std::pair<std::string, std::string>> taken_sample(r.taken_sample);
  worker_rank my_rank = rank_of(me);
  // (Every worker and job of the walk is of the poller's image: see choose_assignment.)
  auto may_take = [&](const worker& wk, const job& j) { return can_run_same_image(wk, j) && fit_of(wk, j, rule, now).admitted; };
  std::vector<const worker*> above;
  above.reserve(idle.order_of_key(my_rank));  // the idle workers ranked above the poller, stale ones included
  for (const auto& rank : idle) {
    if (!(rank < my_rank)) break;
    if (stale_all.count(rank.owner->id))
      stale_excluded.next().assign(rank.owner->id);
    else
      above.push_back(rank.owner);
  }
  std::vector<char> claimed(above.size(), 0);  // (bytes: a bit vector cost a mask and shift per look)
  size_t first_free = 0;
  // Jobs of one class (GPUs, pins, time limit, checkpoints, conformance) compete for the same workers:
  // once a class finds no free worker above the poller, it never will again in this pass.
  // (Compared by value, held by reference into the jobs: the world is const during the walk,
  // and copying the pins and the conformance for every examined job showed in re-derivation.)
  struct job_class {
    uint32_t gpus;
    const std::vector<std::string>* pins;
    int64_t limit;
    bool checkpoints;
    const std::string* conformance;
    // Only membership is asked of the set, so any strict order will do: the numbers first, and
    // the lists and strings (almost always empty) only between classes equal in those.
    bool operator<(const job_class& o) const {
      if (gpus != o.gpus) return gpus < o.gpus;
      if (limit != o.limit) return limit < o.limit;
      if (checkpoints != o.checkpoints) return checkpoints < o.checkpoints;
      if (pins->size() != o.pins->size()) return pins->size() < o.pins->size();
      if (int c = conformance->compare(*o.conformance)) return c < 0;
      return *pins < *o.pins;
    }
  };
  std::set<job_class> exhausted;
  size_t ahead_total = 0, examined = 0;

  for (const auto& key : queued) {
    const job& j = *key.owner;
    ++examined;
    const job_class cls{j.gpu_count, &j.preferred_clusters, time_limit_of(j, rule), j.checkpoints, &j.conformance};
    bool taken_above = false;
    if (!exhausted.count(cls)) {
      while (first_free < above.size() && claimed[first_free]) ++first_free;
      for (size_t i = first_free; i < above.size(); ++i)
        if (!claimed[i] && may_take(*above[i], j)) {
          claimed[i] = 1;
          taken_above = true;
          if (taken_sample.size() < decision_sample_size) {
            auto& [job_id, worker_id] = taken_sample.next();
            job_id.assign(j.id);
            worker_id.assign(above[i]->id);
          }
          ++ahead_total;
          break;
        }
      if (!taken_above) exhausted.insert(cls);
    }
    if (taken_above) continue;
    if (may_take(me, j)) {
      out.job_id = j.id;
      break;
    }
  }

  stale_excluded.finish();
  taken_sample.finish();
  r.matched = true;
  r.idle_ranked_above = above.size();
  r.jobs_examined = examined;
  r.taken_by_better_workers = ahead_total;
}

// What a decision shaped by allocation ends records: the rule (replay uses it) and why the
// chosen job fits the poller.
deadline_fit_record deadline_record(const world& w, const worker& me, const std::optional<std::string>& job_id,
                                    const deadline_rule& rule, time_us now) {
  const auto r = to_record(rule);
  deadline_fit_record d;
  d.default_time_limit_seconds = r.default_time_limit_seconds;
  d.min_useful_seconds = r.min_useful_seconds;
  if (me.allocation_ends_at) d.remaining_seconds = remaining_seconds(me, now);
  if (job_id) {
    auto f = fit_of(me, *w.find_job(*job_id), rule, now);
    d.time_limit_seconds = f.time_limit_seconds;
    d.rule = f.rule;
  }
  return d;
}

// Under lattice:sensitive a job's first worker fixes the fingerprint every later worker of it
// must have (the decision records it, job.assigned applies it).
void pin_conformance(const world& w, const worker& me, assignment_choice& out) {
  if (!out.job_id || !w.priority.recorded || !pins_conformance(w.priority.policy)) return;
  if (w.find_job(*out.job_id)->conformance.empty()) out.record->conformance_pin = fingerprint_of(me);
}

// Whether the plan's start for `me` is still the job it should take: no job ahead of it in
// the evaluation order that `me` could run waits unplanned. A recalculation, a new job or a
// release since the plan can have put one there, and the plan would then hand the worker a
// lower-priority job (priority inversion). Jobs ahead that hold a reservation on another
// worker, or are the plan's start for another worker, are the plan's to keep: that is
// backfill. (Jobs ahead are walked until the planned one; the planned-elsewhere check scans
// the plan's starts, a list as long as the idle workers it placed.)
bool plan_still_first(const world& w, const worker& me, const job& planned, const deadline_rule& rule, time_us now) {
  auto q = w.queued_by_image.find(me.worker_image_key);
  if (q == w.queued_by_image.end()) return true;
  for (const auto& key : q->second) {
    if (key.owner == &planned) return true;
    const job& j = *key.owner;
    if (!can_run(me, j) || !fit_of(me, j, rule, now).admitted) continue;
    if (const planned_slot* r = reservation_of(w, j.id); r && r->worker_id != me.id) continue;
    bool planned_elsewhere = false;
    for (const auto& [worker_id, job_id] : w.plan.start_for_worker)
      if (job_id == j.id && worker_id != me.id) {
        planned_elsewhere = true;
        break;
      }
    if (!planned_elsewhere) return false;
  }
  return true;
}

}  // namespace

assignment_choice choose_assignment(const world& w, const std::string& worker_id, const std::set<std::string>& stale_all,
                                    const deadline_rule& rule, time_us now) {
  assignment_choice out;
  choose_assignment_into(w, worker_id, stale_all, rule, now, out);
  return out;
}

void choose_assignment_into(const world& w, const std::string& worker_id, const std::set<std::string>& stale_all,
                            const deadline_rule& rule, time_us now, assignment_choice& out) {
  out.job_id.reset();
  const worker* me = w.find_worker(worker_id);
  if (!me) {
    out.record.reset();
    return;
  }

  // The last planning cycle's start for this worker, if the job still waits and still fits;
  // a plan overtaken by events falls through to the direct choice below.
  if (const std::string* planned = planned_job_for(w, worker_id)) {
    const job* j = w.find_job(*planned);
    if (j && eligible(*j) && can_run(*me, *j) && fit_of(*me, *j, rule, now).admitted && plan_still_first(w, *me, *j, rule, now)) {
      out.job_id = j->id;
      auto& r = begin_record(out, "plan", *me);
      no_lists(r);
      r.planned_at = util::format_time_us(w.plan.planned_at);
      if (me->allocation_ends_at) r.deadline = deadline_record(w, *me, out.job_id, rule, now);
      pin_conformance(w, *me, out);
      return;
    }
  }

  // Only idle workers of the poller's image ranked above it can take a job it could run
  // before it does; jobs and workers of other images never meet it.
  static const ranked_set<worker_rank> no_workers;
  static const ranked_set<queue_key> no_jobs;
  auto idle_it = w.idle_by_image.find(me->worker_image_key);
  auto queued_it = w.queued_by_image.find(me->worker_image_key);
  const auto& idle = idle_it == w.idle_by_image.end() ? no_workers : idle_it->second;
  const auto& queued = queued_it == w.queued_by_image.end() ? no_jobs : queued_it->second;
  if (queued.empty()) {
    no_lists(begin_record(out, "greedy-rank-v1", *me));
    return;
  }
  // Allocation ends matter only when some idle worker of the image has too little time left
  // for some queued job: the tightest one fitting the most demanding job rules that out.
  const std::string& image = me->worker_image_key;
  auto ends = w.idle_allocation_ends_by_image.find(image);
  bool any_ends = ends != w.idle_allocation_ends_by_image.end();
  static const limits_set no_limits;
  auto limits_it = w.queued_limits_by_image.find(image);
  const auto& limits = limits_it == w.queued_limits_by_image.end() ? no_limits : limits_it->second;
  bool deadlines_bind = any_ends && !fits_all(limits, *ends->second.begin() - now, rule);
  // A poller no queued job fits gets nothing, without a walk (and without an event to record).
  if (me->allocation_ends_at && !fits_any(limits, me->allocation_ends_at - now, rule)) {
    out.record.reset();
    return;
  }
  if (!deadlines_bind && !w.constrained_queued_by_image.count(image))
    choose_unpinned(w, *me, idle, queued, stale_all, out);
  else
    choose_by_walk(w, *me, idle, queued, stale_all, rule, now, out);
  if (any_ends) out.record->deadline = deadline_record(w, *me, out.job_id, rule, now);
  pin_conformance(w, *me, out);
}

poll_choice choose_job_for(const world& w, const std::string& worker_id, const std::set<std::string>& stale_all,
                           const deadline_rule& rule, time_us now) {
  auto c = choose_assignment(w, worker_id, stale_all, rule, now);
  return {std::move(c.job_id), c.record ? to_json(*c.record) : nlohmann::json()};
}

}  // namespace baton::core
