#include "projections/sql_rows.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/util/time.hpp"
#include "events/json_text.hpp"
#include "events/payload.hpp"

namespace baton::projections {

namespace {

// Schema version sql_schema_version (3); docs/db-views.md explains every column. Times are RFC 3339 UTC text
// (SQLite's date functions read them; PostgreSQL casts them with ::timestamptz), durations
// seconds. {INT} and {REAL} are the dialect's integer and floating types; "user" is quoted
// because PostgreSQL reserves the word.
constexpr const char* schema_template = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
  seq {INT} PRIMARY KEY, recorded_at TEXT NOT NULL, stream TEXT NOT NULL, stream_version {INT} NOT NULL,
  type TEXT NOT NULL, actor TEXT NOT NULL, payload TEXT NOT NULL);
CREATE INDEX events_by_stream ON events (stream, seq);
CREATE INDEX events_by_type ON events (type, seq);
CREATE INDEX events_by_time ON events (recorded_at);
CREATE TABLE jobs (
  id TEXT PRIMARY KEY, title TEXT NOT NULL, status TEXT NOT NULL, "user" TEXT NOT NULL, account TEXT NOT NULL,
  partition TEXT NOT NULL, qos TEXT NOT NULL, nice {INT} NOT NULL, gpu_count {INT} NOT NULL,
  priority_tier {INT} NOT NULL, priority {INT} NOT NULL, held {INT} NOT NULL,
  worker_image_key TEXT NOT NULL, assigned_worker_id TEXT, attempts {INT} NOT NULL, lost_workers {INT} NOT NULL,
  time_limit_seconds {INT}, progress {REAL}, latest_checkpoint_manifest_path TEXT, failure_reason TEXT,
  requeued_from TEXT, preemptions {INT} NOT NULL, pruned {INT} NOT NULL,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, started_at TEXT);
CREATE INDEX jobs_by_status ON jobs (status);
CREATE INDEX jobs_by_account ON jobs (account, "user");
CREATE TABLE workers (
  id TEXT PRIMARY KEY, platform TEXT NOT NULL, cluster TEXT, provider_id TEXT, gpu_model TEXT NOT NULL,
  gpu_count {INT} NOT NULL, vram_gb {REAL} NOT NULL, worker_image_key TEXT NOT NULL, placeholder {INT} NOT NULL,
  gone {INT} NOT NULL, gone_reason TEXT, registered_at TEXT NOT NULL, gone_at TEXT, allocation_ends_at TEXT,
  current_job_id TEXT, state TEXT NOT NULL);
CREATE TABLE run_segments (
  job_id TEXT NOT NULL, n {INT} NOT NULL, worker_id TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT,
  gpus {INT} NOT NULL, seconds {REAL}, gpu_seconds {REAL}, PRIMARY KEY (job_id, n));
CREATE INDEX run_segments_by_worker ON run_segments (worker_id);
CREATE TABLE decisions (
  seq {INT} PRIMARY KEY, recorded_at TEXT NOT NULL, type TEXT NOT NULL, stream TEXT NOT NULL,
  job_id TEXT, worker_id TEXT);
CREATE INDEX decisions_by_job ON decisions (job_id);
CREATE TABLE fair_share (
  account TEXT NOT NULL, "user" TEXT NOT NULL, fair_share {REAL} NOT NULL, level_fs {REAL},
  target_share {REAL} NOT NULL, actual_share {REAL} NOT NULL, usage_gpu_seconds {REAL} NOT NULL,
  calculated_at TEXT NOT NULL, PRIMARY KEY (account, "user"));
CREATE TABLE clusters (
  name TEXT PRIMARY KEY, enabled {INT} NOT NULL, last_submission_failure TEXT, last_submission_failure_at TEXT);
)sql";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
}

const std::vector<std::string> event_columns{"seq", "recorded_at", "stream", "stream_version", "type", "actor", "payload"};
const std::vector<std::string> job_columns{"id",
                                           "title",
                                           "status",
                                           "\"user\"",
                                           "account",
                                           "partition",
                                           "qos",
                                           "nice",
                                           "gpu_count",
                                           "priority_tier",
                                           "priority",
                                           "held",
                                           "worker_image_key",
                                           "assigned_worker_id",
                                           "attempts",
                                           "lost_workers",
                                           "time_limit_seconds",
                                           "progress",
                                           "latest_checkpoint_manifest_path",
                                           "failure_reason",
                                           "requeued_from",
                                           "preemptions",
                                           "pruned",
                                           "created_at",
                                           "updated_at",
                                           "started_at"};
const std::vector<std::string> worker_columns{
    "id",      "platform",           "cluster",        "provider_id", "gpu_model",   "gpu_count",
    "vram_gb", "worker_image_key",   "placeholder",    "gone",        "gone_reason", "registered_at",
    "gone_at", "allocation_ends_at", "current_job_id", "state"};
const std::vector<std::string> segment_columns{"job_id",   "n",    "worker_id", "started_at",
                                               "ended_at", "gpus", "seconds",   "gpu_seconds"};
const std::vector<std::string> decision_columns{"seq", "recorded_at", "type", "stream", "job_id", "worker_id"};
const std::vector<std::string> fair_share_columns{"account",      "\"user\"",     "fair_share",        "level_fs",
                                                  "target_share", "actual_share", "usage_gpu_seconds", "calculated_at"};
const std::vector<std::string> cluster_columns{"name", "enabled", "last_submission_failure", "last_submission_failure_at"};

sql_value text_or_null(const std::string& s) { return s.empty() ? sql_value{} : sql_value{s}; }
sql_value time_or_null(core::time_us t) { return t == 0 ? sql_value{} : sql_value{util::format_time_us(t)}; }
template <class T>
sql_value opt(const std::optional<T>& v) {
  if (!v) return {};
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<double>(*v);
  else
    return static_cast<int64_t>(*v);
}
sql_value opt_or_null(const std::optional<std::string>& v) { return v ? sql_value{*v} : sql_value{}; }

}  // namespace

std::string sql_schema(sql_dialect d) {
  std::string s = schema_template;
  replace_all(s, "{INT}", d == sql_dialect::postgres ? "BIGINT" : "INTEGER");
  replace_all(s, "{REAL}", d == sql_dialect::postgres ? "DOUBLE PRECISION" : "REAL");
  return s;
}

const std::vector<std::string>& sql_tables() {
  static const std::vector<std::string> all{"meta",         "events",    "jobs",       "workers",
                                            "run_segments", "decisions", "fair_share", "clusters"};
  return all;
}

namespace {
// Columns a row never changes once written, left out of the upsert's SET: SQLite rewrites
// the entries of every index over a column the SET names, even to the same value (the jobs'
// account index and the segments' worker index, at every job event).
const std::vector<std::string> job_fixed{"\"user\"", "account"};
const std::vector<std::string> segment_fixed{"worker_id"};
const std::vector<std::string> none_fixed;

struct table_shape {
  const std::vector<std::string>* cols;
  const char* name;
  const char* key;  // nullptr: append-only (plain insert)
  size_t keys;
  const std::vector<std::string>* fixed = &none_fixed;
};
table_shape shape_of(sql_table t) {
  switch (t) {
    case sql_table::events:
      return {&event_columns, "events", nullptr, 0};
    case sql_table::decisions:
      return {&decision_columns, "decisions", nullptr, 0};
    case sql_table::jobs:
      return {&job_columns, "jobs", "id", 1, &job_fixed};
    case sql_table::workers:
      return {&worker_columns, "workers", "id", 1};
    case sql_table::run_segments:
      return {&segment_columns, "run_segments", "job_id, n", 2, &segment_fixed};
    case sql_table::fair_share:
      return {&fair_share_columns, "fair_share", nullptr, 0};
    case sql_table::clusters:
      return {&cluster_columns, "clusters", nullptr, 0};
  }
  return {&event_columns, "events", nullptr, 0};
}
}  // namespace

size_t sql_columns(sql_table t) { return shape_of(t).cols->size(); }

std::string sql_write(sql_dialect d, sql_table t) { return sql_write_many(d, t, 1); }

std::string sql_write_many(sql_dialect d, sql_table t, size_t rows) {
  const auto shape = shape_of(t);
  const auto& cols = *shape.cols;
  std::string sql = std::string("INSERT INTO ") + shape.name + " VALUES ";
  size_t n = 0;
  for (size_t r = 0; r < rows; ++r) {
    sql += r ? ", (" : "(";
    for (size_t i = 0; i < cols.size(); ++i)
      sql += (d == sql_dialect::postgres ? "$" : "?") + std::to_string(++n) + (i + 1 < cols.size() ? ", " : ")");
  }
  if (!shape.key) return sql;
  // ON CONFLICT ... DO UPDATE (both dialects): unlike a delete and an insert, only the
  // indexes over the columns it sets are touched.
  sql += std::string(" ON CONFLICT (") + shape.key + ") DO UPDATE SET ";
  bool first = true;
  for (size_t i = shape.keys; i < cols.size(); ++i) {
    if (std::find(shape.fixed->begin(), shape.fixed->end(), cols[i]) != shape.fixed->end()) continue;
    sql += (first ? "" : ", ") + cols[i] + " = excluded." + cols[i];
    first = false;
  }
  return sql;
}

namespace {
template <class... T>
bool is_one_of(const core::ev::payload& p) {
  return (std::holds_alternative<T>(p) || ...);
}
}  // namespace

// The decision events (their record is the event's payload: joined on seq, not copied).
bool is_decision(const core::ev::payload& p) {
  namespace ev = core::ev;
  return is_one_of<ev::job_assigned, ev::job_preempted, ev::priorities_recalculated, ev::plan_made, ev::preemptions_decided,
                   ev::worker_reaped, ev::worker_placeholder_created, ev::cloud_scaled>(p);
}

bool changes_priorities(const core::ev::payload& p) {
  return is_one_of<core::ev::priorities_recalculated, core::ev::priorities_applied>(p);
}

bool changes_clusters(const core::ev::payload& p) {
  return is_one_of<core::ev::cluster_disabled, core::ev::cluster_enabled, core::ev::cluster_submission_failed>(p);
}

sql_touch touched_by(const events::event_envelope& e, const core::ev::payload& payload) {
  sql_touch t;
  if (e.stream_id.rfind("job/", 0) == 0) {
    t.job_id = e.stream_id.substr(4);
    if (auto w = core::ev::worker_named(payload); !w.empty()) t.worker_id = std::string(w);
  } else if (e.stream_id.rfind("worker/", 0) == 0) {
    t.worker_id = e.stream_id.substr(7);
  }
  return t;
}

namespace {

// The payload's text is UTF-8 as the JSON writer made it (it replaces or refuses what is not);
// the envelope's own text is checked here, once.
sql_row row_with_text(const events::event_envelope& e, std::string text, std::string* damaged) {
  auto checked = [&](const std::string& value, const char* name) {
    if (events::is_utf8(value)) return value;
    if (damaged && damaged->empty()) *damaged = std::string("its ") + name + " is not UTF-8";
    return events::utf8_replaced(value);
  };
  std::string actor = checked(e.actor, "actor"), stream = checked(e.stream_id, "stream"), type = checked(e.type, "type");
  return {static_cast<int64_t>(e.seq),
          util::format_time_us(e.recorded_at_us),
          std::move(stream),
          static_cast<int64_t>(e.stream_version),
          std::move(type),
          std::move(actor),
          std::move(text)};
}

}  // namespace

sql_row event_row(const events::event_envelope& e, const nlohmann::json& payload, std::string* damaged) {
  std::string text;
  text.reserve(256);
  try {
    events::append_json(text, payload);
  } catch (const nlohmann::json::exception&) {
    text.clear();
    events::append_json(text, payload, events::invalid_utf8::replace);
    if (damaged) *damaged = "its payload holds text that is not UTF-8";
  }
  return row_with_text(e, std::move(text), damaged);
}

sql_row event_row(const events::event_envelope& e, std::string* damaged) {
  // The text straight from the stored bytes; the value's way for bytes outside the encoder's forms.
  std::string text;
  text.reserve(256);
  try {
    if (!events::append_json_of_cbor(text, e.payload)) return event_row(e, events::from_payload(e.payload), damaged);
  } catch (const nlohmann::json::exception&) {
    text.clear();
    if (!events::append_json_of_cbor(text, e.payload, events::invalid_utf8::replace))
      return event_row(e, events::from_payload(e.payload), damaged);
    if (damaged) *damaged = "its payload holds text that is not UTF-8";
  }
  return row_with_text(e, std::move(text), damaged);
}

void repair_text(sql_row& row) {
  for (auto& v : row)
    if (auto* text = std::get_if<std::string>(&v); text && !events::is_utf8(*text)) *text = events::utf8_replaced(*text);
}

sql_row decision_row(const events::event_envelope& e, const sql_touch& t) {
  return {static_cast<int64_t>(e.seq), util::format_time_us(e.recorded_at_us), e.type, e.stream_id, opt_or_null(t.job_id),
          opt_or_null(t.worker_id)};
}

sql_row job_row(const core::job& j) {
  return {j.id,
          j.title,
          std::string(core::to_string(j.status)),
          j.user,
          j.account,
          j.partition,
          j.qos,
          static_cast<int64_t>(j.nice),
          static_cast<int64_t>(j.gpu_count),
          static_cast<int64_t>(j.priority_tier),
          static_cast<int64_t>(j.priority),
          static_cast<int64_t>(j.held),
          j.worker_image_key,
          text_or_null(j.assigned_worker_id),
          static_cast<int64_t>(j.attempts),
          static_cast<int64_t>(j.lost_workers),
          opt(j.time_limit_seconds),
          opt(j.progress),
          text_or_null(j.latest_checkpoint_manifest_path),
          text_or_null(j.failure_reason),
          text_or_null(j.requeued_from),
          static_cast<int64_t>(j.preemptions),
          static_cast<int64_t>(j.pruned),
          util::format_time_us(j.created_at),
          util::format_time_us(j.updated_at),
          j.started_at ? sql_value{util::format_time_us(*j.started_at)} : sql_value{}};
}

sql_row worker_row(const core::world& w, const core::worker& wk) {
  const std::string* job = w.held_job(wk.id);
  const bool busy = job != nullptr;
  // What the log says of it (whether it still heartbeats is a lease, not an event: /workers has that).
  const char* state = wk.gone ? "gone" : wk.placeholder ? "placeholder" : busy ? "busy" : "idle";
  return {wk.id,
          std::string(core::to_string(wk.kind)),
          text_or_null(wk.cluster()),
          text_or_null(wk.provider_id),
          wk.gpu_model,
          static_cast<int64_t>(wk.gpu_count),
          static_cast<double>(wk.vram_gb),
          wk.worker_image_key,
          static_cast<int64_t>(wk.placeholder),
          static_cast<int64_t>(wk.gone),
          text_or_null(wk.gone_reason),
          util::format_time_us(wk.registered_at),
          time_or_null(wk.gone_at),
          time_or_null(wk.allocation_ends_at),
          busy ? sql_value{*job} : sql_value{},
          std::string(state)};
}

std::vector<sql_row> segment_rows(const core::job& j, size_t from) {
  std::vector<sql_row> rows;
  for (size_t k = from; k < j.segments.size(); ++k) {
    const auto& seg = j.segments[k];
    sql_row r{j.id,        static_cast<int64_t>(k),           seg.worker_id, util::format_time_us(seg.started_at),
              sql_value{}, static_cast<int64_t>(j.gpu_count), sql_value{},   sql_value{}};
    if (seg.ended_at) {
      const double seconds = static_cast<double>(*seg.ended_at - seg.started_at) / 1e6;
      r[4] = util::format_time_us(*seg.ended_at);
      r[6] = seconds;
      r[7] = seconds * j.gpu_count;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<sql_row> fair_share_rows(const core::world& w) {
  std::vector<sql_row> rows;
  if (!w.priority.recorded) return rows;
  const std::string at = util::format_time_us(w.priority.calculated_at);
  for (const auto& [assoc, s] : w.priority.shares) {
    const auto slash = assoc.rfind('/');  // "account/user" (core::association_of)
    rows.push_back({assoc.substr(0, slash), slash == std::string::npos ? std::string() : assoc.substr(slash + 1), s.fair_share,
                    std::isfinite(s.level_fs) ? sql_value{s.level_fs} : sql_value{},  // no usage: infinite, NULL here
                    s.target, s.actual, s.usage, at});
  }
  return rows;
}

std::vector<sql_row> cluster_rows(const core::world& w, const std::set<std::string>& names) {
  std::vector<sql_row> rows;
  for (const auto& name : names) {
    sql_row r{name, static_cast<int64_t>(!w.disabled_clusters.count(name)), sql_value{}, sql_value{}};
    if (auto f = w.last_submission_failure.find(name); f != w.last_submission_failure.end()) {
      auto failure = f->second;
      r[3] = text_or_null(failure.value("at", ""));
      failure.erase("at");
      r[2] = failure.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace baton::projections
