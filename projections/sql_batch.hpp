#pragma once
// What one batch of events changes in the SQL views (SQLite and PostgreSQL alike): the view's
// world follows every event, and the rows to write again are collected on the way, so both
// views write the same rows for the same events.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/world/world.hpp"
#include "events/envelope.hpp"
#include "events/event_store.hpp"
#include "projections/sql_rows.hpp"

namespace baton::projections {

struct sql_batch {
  std::vector<core::ev::payload> typed;  // one per event, read as its struct: what the world applies
  std::map<std::string, size_t> jobs;    // touched, or re-keyed by a recalculation: their segments before the batch
  std::set<std::string> workers;         // touched
  bool fair_share = false;               // a recalculation: the fair_share table is rewritten
  bool clusters = false;                 // a cluster switched or failed, or a first worker of a cluster
  // Jobs this batch pruned, as they were when pruned: the world keeps only a stub of them, and
  // their rows are written once more, with pruned set.
  std::map<std::string, core::job> pruned;
};

// The clusters the view's world knows of: switched, failed, or some worker's.
std::set<std::string> clusters_known(const core::world& w);

// Applies the batch to w and says which rows it changed; `clusters` (clusters_known() at the
// start, kept by the view) learns the clusters the batch names first.
sql_batch apply_batch(core::world& w, const std::vector<events::event_envelope>& batch, std::set<std::string>& clusters);

// The rows a view writes for a batch apply_batch() has applied to w, table by table.
struct sql_batch_rows {
  std::vector<sql_row> events, decisions, jobs, run_segments, workers;
  std::optional<std::vector<sql_row>> fair_share, clusters;  // set: the table is emptied and written whole
  // Events whose rows hold U+FFFD for text that was not UTF-8 (sql_rows.hpp's event_row),
  // and why: the view reports them (projection::skip) and goes on.
  std::vector<std::pair<uint64_t, std::string>> damaged;
};
sql_batch_rows rows_of(const core::world& w, const std::vector<events::event_envelope>& batch, const sql_batch& changed,
                       const std::set<std::string>& clusters);
// rows_of() in two halves, for a view that writes several batches at once: the events' own
// rows (events, decisions), which depend on the events alone, and the rows of what they
// changed (jobs, run segments, workers, fair share, clusters) as they are in w now.
void add_event_rows(const std::vector<events::event_envelope>& batch, const sql_batch& changed, sql_batch_rows& into);
void add_state_rows(const core::world& w, const sql_batch& changed, const std::set<std::string>& clusters, sql_batch_rows& into);
// What `later` changed added to what `earlier` did (typed payloads aside): a job keeps the segment
// count it had before `earlier`, a job pruned in either keeps its last pruned form.
void merge_changes(sql_batch& earlier, sql_batch&& later);

// A view whose store fell behind (away, or full) while its world followed the log: the rows
// that bring its tables from event `from` to `target`, with w already at target. Each event's
// row (and decision row), handed to `write` chunk by chunk as read from the log, then the rows
// of every job and worker those events touched as they are now, fair share and clusters.
void rows_to_catch_up(const events::event_store& store, uint64_t from, uint64_t target, const core::world& w,
                      const std::set<std::string>& clusters, const std::function<void(const sql_batch_rows&)>& write);

}  // namespace baton::projections
