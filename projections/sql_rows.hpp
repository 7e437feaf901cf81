#pragma once
// The SQL views' schema and rows, shared by the SQLite view (projections/sqlite_view.hpp)
// and the PostgreSQL view (projections/postgres_view.hpp), so both hold the same tables with
// the same values (docs/db-views.md). Rows are built from the view's own world after it has
// applied an event; each backend binds them its own way.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/world/world.hpp"
#include "events/envelope.hpp"

namespace baton::projections {

using sql_value = std::variant<std::monostate, int64_t, double, std::string>;  // monostate: NULL
using sql_row = std::vector<sql_value>;

enum class sql_dialect { sqlite, postgres };
enum class sql_table { events, jobs, workers, run_segments, decisions, fair_share, clusters };

inline constexpr int sql_schema_version = 3;  // 2: jobs.priority; 3: fair_share, clusters

// CREATE TABLE/INDEX statements of every table ("meta" included), in the dialect's types.
std::string sql_schema(sql_dialect d);
// Every table, "meta" first.
const std::vector<std::string>& sql_tables();
// The statement that writes one row of the table: an insert for the append-only tables
// (events, decisions) and the rewritten ones (fair_share, clusters: emptied, then written
// whole), an upsert on the key for the others. Parameters $1.. / ?1.. in column order.
std::string sql_write(sql_dialect d, sql_table t);
// The same for `rows` rows in one statement (PostgreSQL: one round trip for many rows).
std::string sql_write_many(sql_dialect d, sql_table t, size_t rows);
size_t sql_columns(sql_table t);

// What an event touches: its job (job/<id> stream) and its worker (worker/<id> stream, or a
// job event's worker_id).
struct sql_touch {
  std::optional<std::string> job_id, worker_id;
};
sql_touch touched_by(const events::event_envelope& e, const core::ev::payload& payload);
bool is_decision(const core::ev::payload& payload);
// A recalculation re-keys every queued job without an event on their streams: the views note
// the queued jobs' priorities before such an event and rewrite the rows of those it changed.
bool changes_priorities(const core::ev::payload& payload);
// A cluster switched on or off, or its last submission failure.
bool changes_clusters(const core::ev::payload& payload);

// The event's row. Text in it that is not UTF-8 (a log written before batond checked the
// headers it records: one such byte stopped the view for good) is written with U+FFFD in its
// place, and `damaged` (when given) says why; else it is left empty.
sql_row event_row(const events::event_envelope& e, std::string* damaged = nullptr);
// The same with the payload given as its value (e's bytes not read).
sql_row event_row(const events::event_envelope& e, const nlohmann::json& payload, std::string* damaged = nullptr);
// The row with U+FFFD in place of any text that is not UTF-8 (PostgreSQL refuses such text).
void repair_text(sql_row& row);
sql_row decision_row(const events::event_envelope& e, const sql_touch& t);
sql_row job_row(const core::job& j);
sql_row worker_row(const core::world& w, const core::worker& wk);
// The job's run segments from index `from` on (only the last one ever changes).
std::vector<sql_row> segment_rows(const core::job& j, size_t from);
// The whole fair_share table: each association's figures at the recalculation in force.
std::vector<sql_row> fair_share_rows(const core::world& w);
// The whole clusters table: the named clusters (projections/sql_batch.hpp: clusters_known).
std::vector<sql_row> cluster_rows(const core::world& w, const std::set<std::string>& names);

}  // namespace baton::projections
