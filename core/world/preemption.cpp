#include "core/world/preemption.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "core/world/scheduling.hpp"
#include "core/events/streams.hpp"
#include "core/util/time.hpp"

namespace baton::core {

namespace {

constexpr time_us us_per_second = 1'000'000;

struct occupied {
  const job* j = nullptr;
  const worker* wk = nullptr;
};

// Considered last in the evaluation order first, then the latest start, then the smaller id.
bool victim_before(const occupied& a, const occupied& b) {
  auto ka = queue_key_of(*a.j), kb = queue_key_of(*b.j);
  if (kb < ka) return true;  // a comes after b in the evaluation order
  if (ka < kb) return false;
  time_us sa = a.j->assigned_at.value_or(0), sb = b.j->assigned_at.value_or(0);
  if (sa != sb) return sa > sb;
  return a.j->id < b.j->id;
}

std::string mode_of(const job& victim) { return victim.requeue && !victim.interactive ? "requeue" : "cancel"; }

ev::preemption_facts key_facts(const job& j) {
  ev::preemption_facts out;
  out.preemptor = j.preemptor;
  out.tier = j.priority_tier;
  out.priority = j.priority;
  out.partition = j.partition;
  out.qos = j.qos;
  return out;
}

}  // namespace

bool preemption_in_play(const world& w) { return w.preemptions_in_flight > 0 || w.priority.policy.preemption_configured(); }

std::optional<time_us> next_grace_end(const world& w) {
  if (w.preemptions_in_flight == 0) return std::nullopt;
  std::optional<time_us> out;
  w.job_of_worker.for_each([&](const std::string&, const std::string& job_id) {
    const job* j = w.find_job(job_id);
    if (j && !j->preempted_by.empty() && (!out || j->preempt_grace_until < *out)) out = j->preempt_grace_until;
  });
  return out;
}

// Whether a preemptor waits: they come first in each image's order, so the heads tell.
// The event that took a victim's worker back (a requeue, a failure when it was out of
// attempts, or the end of a cancel) says a preemption did it, and whose.
static void mark_preempted(ev::payload& p, const std::string& by) {
  std::visit(
      [&](auto& lost) {
        using T = std::decay_t<decltype(lost)>;
        if constexpr (std::is_same_v<T, ev::job_requeued_after_preempt> || std::is_same_v<T, ev::job_failed> ||
                      std::is_same_v<T, ev::job_cancelled>) {
          lost.reason = "preempted";
          lost.by = by;
        }
      },
      p);
}

static bool preemptor_waiting(const world& w) {
  for (const auto& [image, queued] : w.queued_by_image)
    if (!queued.empty() && queued.begin()->preemptor) return true;
  return false;
}

decision decide_preemptions(const world& w, const std::set<std::string>& stale, const deadline_rule& rule, time_us now) {
  const priority_policy& policy = w.priority.policy;
  if (w.preemptions_in_flight == 0 && !preemptor_waiting(w)) return {};  // the usual case: O(images)
  decision out;
  std::vector<ev::preemption_expired_row> expired;
  std::vector<ev::preemption_row> preemptions;
  std::vector<ev::preemption_placed_row> placed;
  size_t waiting = 0;

  // One pass over the occupied workers: the grace periods that ended, the workers a victim is
  // leaving, and per image the jobs that could be preempted (best victim first).
  std::map<std::string, std::vector<occupied>> candidates;  // image -> victims in victim order
  std::map<std::string, std::vector<occupied>> leaving;     // image -> victims' workers, by worker id
  w.job_of_worker.for_each([&](const std::string& worker_id, const std::string& job_id) {  // ordered by worker id
    const job* j = w.find_job(job_id);
    const worker* wk = w.find_worker(worker_id);
    if (!j || !wk) return;
    if (!j->preempted_by.empty()) {
      // A freed worker goes to the first preemptor in the evaluation order that it can run,
      // which need not be the one its victim was chosen for: a cancelled victim leaves long
      // before one handing off. So the workers being left are counted, not who they were for.
      if (!stale.count(worker_id) && !wk->gone) leaving[wk->worker_image_key].push_back({j, wk});
      if (j->preempt_grace_until > now) return;
      // Its grace ended: batond takes the worker back (the worker is told to stop when it next asks).
      auto d = j->status == job_status::cancelling ? decide_finish_cancel(*j, now)
                                                   : decide_worker_lost(*j, loss_cause::preempted, now);
      if (d.error) return;
      for (auto& e : d.events) mark_preempted(e.payload, j->preempted_by);
      expired.push_back({j->preempted_by, j->id, j->preempt_mode, worker_id});
      out.append(std::move(d));
      return;
    }
    if (!preemptible_state(*j) || stale.count(worker_id) || wk->gone) return;
    candidates[wk->worker_image_key].push_back({j, wk});
  });

  if (policy.preemption_configured()) {
    for (auto& [image, list] : candidates) std::sort(list.begin(), list.end(), victim_before);
    std::set<std::string> taken;  // workers given to a preemptor in this decision (idle or a victim's)
    for (const auto& [image, queued] : w.queued_by_image) {
      auto victims = candidates.find(image);
      auto idle = w.idle_by_image.find(image);
      auto left = leaving.find(image);
      for (const auto& key : queued) {
        if (!key.preemptor) break;  // preemptors come first in the evaluation order
        const job& p = *key.owner;
        auto fits = [&](const worker& wk) { return can_run(wk, p) && fit_of(wk, p, rule, now).admitted; };
        // A fresh worker not given to another preemptor in this decision that can run it.
        auto free_for_it = [&](const worker& wk) { return !taken.count(wk.id) && !stale.count(wk.id) && fits(wk); };
        // First without preempting: a fresh idle worker that can run it takes it at its next poll.
        const worker* free_worker = nullptr;
        if (idle != w.idle_by_image.end())
          for (const auto& r : idle->second)
            if (free_for_it(*r.owner)) {
              free_worker = r.owner;
              break;
            }
        if (free_worker) {
          taken.insert(free_worker->id);
          placed.push_back({p.id, std::nullopt, free_worker->id});
          continue;
        }
        // Then a worker an earlier victim is leaving: it is free soon, without a new victim.
        const occupied* being_left = nullptr;
        if (left != leaving.end())
          for (const auto& l : left->second)
            if (free_for_it(*l.wk)) {
              being_left = &l;
              break;
            }
        if (being_left) {
          taken.insert(being_left->wk->id);
          placed.push_back({p.id, being_left->j->id, being_left->wk->id});
          continue;
        }
        const occupied* victim = nullptr;
        if (victims != candidates.end())
          for (const auto& c : victims->second) {
            if (taken.count(c.wk->id) || !(key < queue_key_of(*c.j))) continue;
            if (!policy.may_preempt(p.partition, p.qos, c.j->partition, c.j->qos) || !fits(*c.wk)) continue;
            victim = &c;
            break;
          }
        if (!victim) {
          ++waiting;
          continue;
        }
        taken.insert(victim->wk->id);
        const job& v = *victim->j;
        std::string mode = mode_of(v);
        time_us grace_until = now + policy.preempt_grace_seconds * us_per_second;
        auto d = decide_preempt(v, p.id, mode, grace_until, now);
        if (d.error) continue;
        if (mode == "requeue" && v.status == job_status::assigned) {
          // Not started yet: nothing to checkpoint, so it goes back to the queue at once.
          d.append(decide_worker_lost(v, loss_cause::preempted, now));
          mark_preempted(d.events.back().payload, p.id);
        }
        ev::preemption_row row;
        row.job_id = v.id;
        row.worker_id = victim->wk->id;
        row.by = p.id;
        row.mode = mode;
        row.from_status = to_string(v.status);
        row.grace_until = util::format_time_us(grace_until);
        row.victim = key_facts(v);
        row.preemptor = key_facts(p);
        preemptions.push_back(std::move(row));
        out.append(std::move(d));
      }
    }
  }
  if (out.events.empty()) return {};
  std::vector<std::string> stale_ids(stale.begin(), stale.end());
  ev::preemptions_decided record;
  record.preemptions = std::move(preemptions);
  record.expired = std::move(expired);
  record.placed_without_preempting = std::move(placed);
  record.waiting = waiting;
  record.grace_seconds = policy.preempt_grace_seconds;
  record.deadline = to_record(rule);
  record.stale_excluded = std::move(stale_ids);
  out.events.insert(out.events.begin(), {scheduler_stream, std::move(record)});
  return out;
}

recorded_preemption_inputs preemption_inputs_of(const ev::preemptions_decided& recorded) {
  recorded_preemption_inputs in;
  in.stale.insert(recorded.stale_excluded.begin(), recorded.stale_excluded.end());
  in.rule = rule_of(recorded.deadline);
  return in;
}

}  // namespace baton::core
