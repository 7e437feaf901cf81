#include "projections/sql_batch.hpp"

#include <stdexcept>

#include "core/events/event_types.hpp"
#include "projections/job_history.hpp"
#include "projections/sql_rows.hpp"

namespace baton::projections {

namespace {

// The state rows' text as the events' (sql_rows.hpp's event_row): a job's user or a worker's
// model from an event whose text was not UTF-8 is written with U+FFFD in its place.
void repair_state_text(sql_batch_rows& rows) {
  for (auto* list : {&rows.jobs, &rows.run_segments, &rows.workers})
    for (auto& row : *list) repair_text(row);
  for (auto* list : {&rows.fair_share, &rows.clusters})
    if (*list)
      for (auto& row : **list) repair_text(row);
}

}  // namespace

std::set<std::string> clusters_known(const core::world& w) {
  std::set<std::string> out(w.disabled_clusters.begin(), w.disabled_clusters.end());
  for (const auto& [name, failure] : w.last_submission_failure) out.insert(name);
  for (const auto& [id, wk] : w.workers)
    if (auto c = wk.cluster(); !c.empty()) out.insert(std::move(c));
  return out;
}

sql_batch apply_batch(core::world& w, const std::vector<events::event_envelope>& batch, std::set<std::string>& clusters) {
  sql_batch out;
  out.typed.reserve(batch.size());
  for (const auto& e : batch) {
    const core::ev::payload& typed = out.typed.emplace_back(core::ev::decode(e.type, e.schema_version, e.payload));
    const sql_touch t = touched_by(e, typed);
    if (t.job_id && !out.jobs.count(*t.job_id)) {  // its segments before this batch, from the world before this event
      const core::job* j = w.find_job(*t.job_id);  // (by hash: the ordered map is for listings)
      out.jobs.emplace(*t.job_id, j ? j->segments.size() : 0);
    }
    if (t.worker_id) out.workers.insert(*t.worker_id);
    const bool rekeys = changes_priorities(typed);
    // Every queued job's priority before a recalculation (which removes no job: the
    // pointers hold), to find the ones it changed.
    std::vector<std::pair<const core::job*, int64_t>> before;
    if (rekeys) {
      before.reserve(w.queued.size());
      for (const auto& [key, j] : w.queued) before.emplace_back(j, j->priority);
    }
    if (std::holds_alternative<core::ev::job_pruned>(typed) && t.job_id)
      if (auto last = core::as_pruned(w, *t.job_id, typed, e.recorded_at_us))
        out.pruned.insert_or_assign(*t.job_id, std::move(*last));
    core::apply(w, e.stream_id, typed, e.recorded_at_us);
    for (const auto& [j, priority] : before)
      if (j->priority != priority) out.jobs.emplace(j->id, j->segments.size());
    out.fair_share |= rekeys;
    if (changes_clusters(typed)) {
      out.clusters = true;
      clusters.insert(e.stream_id.substr(8));  // "cluster/<name>"
    }
  }
  for (const auto& id : out.workers)
    if (const core::worker* wk = w.find_worker(id))
      if (auto c = wk->cluster(); !c.empty() && clusters.insert(c).second) out.clusters = true;
  return out;
}

void add_event_rows(const std::vector<events::event_envelope>& batch, const sql_batch& changed, sql_batch_rows& into) {
  for (size_t i = 0; i < batch.size(); ++i) {
    std::string damaged;
    into.events.push_back(event_row(batch[i], &damaged));
    if (!damaged.empty()) into.damaged.emplace_back(batch[i].seq, std::move(damaged));
    if (is_decision(changed.typed[i])) into.decisions.push_back(decision_row(batch[i], touched_by(batch[i], changed.typed[i])));
  }
}

void add_state_rows(const core::world& w, const sql_batch& changed, const std::set<std::string>& clusters, sql_batch_rows& into) {
  for (const auto& [id, segments_before] : changed.jobs) {
    const core::job* j = w.find_job(id);
    if (!j)
      if (auto p = changed.pruned.find(id); p != changed.pruned.end()) j = &p->second;
    if (!j) continue;
    into.jobs.push_back(job_row(*j));
    // Segments are only added, and only the last one changes (its start moves to
    // job.started, it gets an end): the batch changed those from the last it found on.
    for (auto& row : segment_rows(*j, segments_before > 0 ? segments_before - 1 : 0)) into.run_segments.push_back(std::move(row));
  }
  for (const auto& id : changed.workers)
    if (const core::worker* wk = w.find_worker(id)) into.workers.push_back(worker_row(w, *wk));
  if (changed.fair_share) into.fair_share = fair_share_rows(w);
  if (changed.clusters) into.clusters = cluster_rows(w, clusters);
  repair_state_text(into);
}

sql_batch_rows rows_of(const core::world& w, const std::vector<events::event_envelope>& batch, const sql_batch& changed,
                       const std::set<std::string>& clusters) {
  sql_batch_rows rows;
  add_event_rows(batch, changed, rows);
  add_state_rows(w, changed, clusters, rows);
  return rows;
}

void merge_changes(sql_batch& earlier, sql_batch&& later) {
  earlier.typed.clear();
  earlier.jobs.merge(later.jobs);  // (keeps earlier's entry where both have one)
  earlier.workers.merge(later.workers);
  earlier.fair_share |= later.fair_share;
  earlier.clusters |= later.clusters;
  for (auto& [id, j] : later.pruned) earlier.pruned.insert_or_assign(id, std::move(j));
}

void rows_to_catch_up(const events::event_store& store, uint64_t from, uint64_t target, const core::world& w,
                      const std::set<std::string>& clusters, const std::function<void(const sql_batch_rows&)>& write) {
  constexpr size_t chunk_events = 4096;
  std::set<std::string> jobs, workers;
  bool rekeyed = false;  // a recalculation in the range: every job queued now may have another priority
  for (uint64_t seq = from + 1; seq <= target;) {
    auto chunk = store.read(seq, std::min<uint64_t>(chunk_events, target - seq + 1));
    if (chunk.empty()) throw std::runtime_error("the log has no event " + std::to_string(seq));
    sql_batch_rows rows;
    for (const auto& e : chunk) {
      const auto typed = core::ev::decode(e.type, e.schema_version, e.payload);
      const sql_touch t = touched_by(e, typed);
      if (t.job_id) jobs.insert(*t.job_id);
      if (t.worker_id) workers.insert(*t.worker_id);
      rekeyed |= changes_priorities(typed);
      std::string damaged;
      rows.events.push_back(event_row(e, &damaged));
      if (!damaged.empty()) rows.damaged.emplace_back(e.seq, std::move(damaged));
      if (is_decision(typed)) rows.decisions.push_back(decision_row(e, t));
    }
    write(rows);
    seq = chunk.back().seq + 1;
  }
  if (rekeyed)
    for (const auto& [key, j] : w.queued) jobs.insert(j->id);  // (every queued job, held and blocked too)
  sql_batch_rows rows;
  for (const auto& id : jobs) {
    std::optional<core::job> archived;  // a pruned job: as its stream makes it
    const core::job* j = w.find_job(id);
    if (!j && w.find_pruned(id) && (archived = job_from_log(store, id))) j = &*archived;
    if (!j) continue;
    rows.jobs.push_back(job_row(*j));
    for (auto& row : segment_rows(*j, 0)) rows.run_segments.push_back(std::move(row));
  }
  for (const auto& id : workers)
    if (auto wk = w.workers.find(id); wk != w.workers.end()) rows.workers.push_back(worker_row(w, wk->second));
  rows.fair_share = fair_share_rows(w);  // a few rows: rewritten whatever the range held
  rows.clusters = cluster_rows(w, clusters);
  repair_state_text(rows);
  write(rows);
}

}  // namespace baton::projections
