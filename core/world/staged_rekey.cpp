#include "core/world/staged_rekey.hpp"

#include <algorithm>

#include "core/world/priority.hpp"

namespace baton::core {

staged_rekey begin_staging(world& w) {
  w.refresh_lookups();
  w.staging = true;
  w.changed_while_staging.clear();
  staged_rekey s;
  s.worker_gpus_version = w.worker_gpus_version;
  s.staged.reserve(w.queued.size());
  return s;
}

bool stage_some(const world& w, staged_rekey& s, size_t max_jobs) {
  if (s.complete || !w.priority_pending) return s.complete = true;
  auto it = !s.begun ? w.queued.begin() : w.queued.lower_bound({s.next->first, std::string_view(s.next->second)});
  s.begun = true;
  for (size_t n = 0; it != w.queued.end() && n < max_jobs; ++it, ++n) {
    job& j = *it->second;
    auto e = explain_priority(w, *w.priority_pending, j);
    staged_rekey::entry entry{&j, e.tier, e.preemptor, e.priority, eligible(j)};
    if (entry.indexed) {
      s.queued_by_image[j.worker_image_key].insert(queue_key{e.preemptor, e.tier, e.priority, j.created_at, j.id, &j});
      if (constrained(j)) ++s.constrained_by_image[j.worker_image_key];
    }
    s.staged.push_back(entry);
  }
  if (it == w.queued.end()) return s.complete = true;
  s.next = std::make_pair(it->first.first, std::string(it->first.second));
  return false;
}

namespace {

void index_insert(staged_rekey& s, const job& j) {
  s.queued_by_image[j.worker_image_key].insert(queue_key_of(j));
  if (constrained(j)) ++s.constrained_by_image[j.worker_image_key];
}

void index_erase(staged_rekey& s, const staged_rekey::entry& e) {
  const job& j = *e.owner;
  if (auto it = s.queued_by_image.find(j.worker_image_key); it != s.queued_by_image.end())
    it->second.erase(queue_key{e.preemptor, e.tier, e.priority, j.created_at, j.id, &j});
  if (constrained(j)) --s.constrained_by_image[j.worker_image_key];
}

// The world's index holds no empty entries; neither does the swapped-in one.
template <class Map, class Empty>
void drop_empty(Map& m, Empty empty) {
  for (auto it = m.begin(); it != m.end();) it = empty(it->second) ? m.erase(it) : std::next(it);
}

}  // namespace

queue_index swap_in(world& w, staged_rekey&& s, const decision& applied, time_us at) {
  std::vector<job*> changed = std::move(w.changed_while_staging);
  abandon_staging(w);
  bool lattice = w.priority_pending && w.priority_pending->policy.kind == policy_kind::lattice;
  if (!s.complete || (lattice && s.worker_gpus_version != w.worker_gpus_version)) {
    apply(w, applied, at);  // an input every job reads changed meanwhile: re-key them all
    return {};
  }
  ++w.applied;  // the event applied here instead of through apply()
  w.priority = std::move(*w.priority_pending);
  w.priority_pending.reset();
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  for (const auto& e : s.staged) {
    if (std::binary_search(changed.begin(), changed.end(), e.owner)) {
      if (e.indexed) index_erase(s, e);  // staged before it changed: judged again below
      continue;
    }
    e.owner->priority_tier = e.tier;
    e.owner->preemptor = e.preemptor;
    e.owner->priority = e.priority;
  }
  for (job* j : changed) {
    if (j->status != job_status::queued) continue;  // a replay re-keys queued jobs only
    set_priority(w, *j);
    if (eligible(*j)) index_insert(s, *j);
  }
  drop_empty(s.queued_by_image, [](const auto& set) { return set.empty(); });
  drop_empty(s.constrained_by_image, [](size_t n) { return n == 0; });
  queue_index retired = std::move(w.queued_by_image);
  w.queued_by_image = std::move(s.queued_by_image);
  w.constrained_queued_by_image = std::move(s.constrained_by_image);
  return retired;
}

void abandon_staging(world& w) {
  w.staging = false;
  w.changed_while_staging.clear();
  w.changed_while_staging.shrink_to_fit();
}

}  // namespace baton::core
