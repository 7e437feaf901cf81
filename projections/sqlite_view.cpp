#include "projections/sqlite_view.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "events/envelope.hpp"
#include "events/payload.hpp"

namespace baton::projections {

namespace {

// Schema version 1; docs/db-views.md explains every column. Times are RFC 3339 UTC text
// (SQLite's date functions read them), durations seconds.
constexpr const char* schema = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
  seq INTEGER PRIMARY KEY, recorded_at TEXT NOT NULL, stream TEXT NOT NULL, stream_version INTEGER NOT NULL,
  type TEXT NOT NULL, actor TEXT NOT NULL, payload TEXT NOT NULL);
CREATE INDEX events_by_stream ON events (stream, seq);
CREATE INDEX events_by_type ON events (type, seq);
CREATE INDEX events_by_time ON events (recorded_at);
CREATE TABLE jobs (
  id TEXT PRIMARY KEY, title TEXT NOT NULL, status TEXT NOT NULL, user TEXT NOT NULL, account TEXT NOT NULL,
  partition TEXT NOT NULL, qos TEXT NOT NULL, nice INTEGER NOT NULL, gpu_count INTEGER NOT NULL,
  priority_tier INTEGER NOT NULL, held INTEGER NOT NULL,
  worker_image_key TEXT NOT NULL, assigned_worker_id TEXT, attempts INTEGER NOT NULL, lost_workers INTEGER NOT NULL,
  time_limit_seconds INTEGER, progress REAL, latest_checkpoint_manifest_path TEXT, failure_reason TEXT,
  requeued_from TEXT, preemptions INTEGER NOT NULL, pruned INTEGER NOT NULL,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, started_at TEXT);
CREATE INDEX jobs_by_status ON jobs (status);
CREATE INDEX jobs_by_account ON jobs (account, user);
CREATE TABLE workers (
  id TEXT PRIMARY KEY, platform TEXT NOT NULL, cluster TEXT, provider_id TEXT, gpu_model TEXT NOT NULL,
  gpu_count INTEGER NOT NULL, vram_gb REAL NOT NULL, worker_image_key TEXT NOT NULL, placeholder INTEGER NOT NULL,
  gone INTEGER NOT NULL, gone_reason TEXT, registered_at TEXT NOT NULL, gone_at TEXT, allocation_ends_at TEXT,
  current_job_id TEXT, state TEXT NOT NULL);
CREATE TABLE run_segments (
  job_id TEXT NOT NULL, n INTEGER NOT NULL, worker_id TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT,
  gpus INTEGER NOT NULL, seconds REAL, gpu_seconds REAL, PRIMARY KEY (job_id, n));
CREATE INDEX run_segments_by_worker ON run_segments (worker_id);
CREATE TABLE decisions (
  seq INTEGER PRIMARY KEY, recorded_at TEXT NOT NULL, type TEXT NOT NULL, stream TEXT NOT NULL,
  job_id TEXT, worker_id TEXT);
CREATE INDEX decisions_by_job ON decisions (job_id);
)sql";

constexpr const char* tables[] = {"meta", "events", "jobs", "workers", "run_segments", "decisions"};

std::optional<std::string> time_or_null(core::time_us t) {
  if (t == 0) return std::nullopt;
  return events::format_time_us(t);
}

// The decision events and what of each goes into the decisions table.
bool is_decision(const std::string& type) {
  return type == "job.assigned" || type == "job.preempted" || type == "scheduler.priorities_recalculated" ||
         type == "scheduler.plan_made" || type == "scheduler.preemptions_decided" || type == "worker.reaped" ||
         type == "worker.placeholder_created" || type == "cloud.scaled";
}

// INSERT ... ON CONFLICT DO UPDATE over every column but the key: unlike INSERT OR REPLACE
// (a delete and an insert), only the indexes whose columns changed are touched.
std::string upsert(const std::string& table, const std::vector<std::string>& columns) {
  std::string sql = "INSERT INTO " + table + " VALUES (";
  for (size_t i = 1; i <= columns.size(); ++i) sql += "?" + std::to_string(i) + (i < columns.size() ? ", " : ")");
  sql += " ON CONFLICT (" + columns[0] + ") DO UPDATE SET ";
  for (size_t i = 1; i < columns.size(); ++i) sql += columns[i] + " = excluded." + columns[i] + (i + 1 < columns.size() ? ", " : "");
  return sql;
}

const std::vector<std::string> job_columns{
    "id", "title", "status", "user", "account", "partition", "qos", "nice", "gpu_count", "priority_tier", "held",
    "worker_image_key", "assigned_worker_id", "attempts", "lost_workers", "time_limit_seconds", "progress",
    "latest_checkpoint_manifest_path", "failure_reason", "requeued_from", "preemptions", "pruned", "created_at",
    "updated_at", "started_at"};
const std::vector<std::string> worker_columns{
    "id", "platform", "cluster", "provider_id", "gpu_model", "gpu_count", "vram_gb", "worker_image_key", "placeholder",
    "gone", "gone_reason", "registered_at", "gone_at", "allocation_ends_at", "current_job_id", "state"};

}  // namespace

struct sqlite_view::statements {
  std::unique_ptr<sqlite_statement> event, job, worker, segment, decision, offset;
};

sqlite_view::opened sqlite_view::open(const std::string& path, bool drop) {
  opened o;
  o.db = std::make_unique<sqlite_db>(path);
  auto& db = *o.db;
  std::string version;
  {
    auto has_meta = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
    has_meta->step();
    if (has_meta->column_int(0) > 0) {
      auto v = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'");
      if (v->step()) version = v->column_text(0);
      auto a = db.prepare("SELECT value FROM meta WHERE key = 'applied_seq'");
      if (a->step()) o.applied = std::stoull(a->column_text(0));
    }
  }
  const bool fresh = version.empty();
  if (drop) o.rebuilt = "asked to rebuild it";
  else if (!fresh && version != std::to_string(schema_version))
    o.rebuilt = "its schema is version " + version + ", this batond writes " + std::to_string(schema_version);
  if (fresh || !o.rebuilt.empty()) {
    db.exec("BEGIN IMMEDIATE");
    for (const char* t : tables) db.exec(std::string("DROP TABLE IF EXISTS ") + t);
    db.exec(schema);
    db.exec("INSERT INTO meta VALUES ('schema_version', '" + std::to_string(schema_version) + "'), ('applied_seq', '0')");
    db.exec("COMMIT");
    o.applied = 0;
  }
  return o;
}

sqlite_view::sqlite_view(opened o, core::world at)
    : projection(projection_name), db_(std::move(o.db)), st_(std::make_unique<statements>()), world_(std::move(at)) {
  auto& db = *db_;
  st_->event = db.prepare("INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  st_->job = db.prepare(upsert("jobs", job_columns));
  st_->worker = db.prepare(upsert("workers", worker_columns));
  st_->segment = db.prepare("INSERT OR REPLACE INTO run_segments VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  st_->decision = db.prepare("INSERT INTO decisions VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  st_->offset = db.prepare("UPDATE meta SET value = ?1 WHERE key = 'applied_seq'");
  restore_applied(o.applied);
}

sqlite_view::~sqlite_view() {
  try {
    flush();
  } catch (const std::exception& e) {
    spdlog::error("the SQL view could not commit its last events: {}", e.what());
  }
}

bool sqlite_view::pending() const {
  std::lock_guard<std::mutex> lock(m_);
  return open_;
}

void sqlite_view::flush() {
  std::lock_guard<std::mutex> lock(m_);
  if (open_) commit();
}

void sqlite_view::commit() {
  db_->exec("COMMIT");
  open_ = false;
  uncommitted_ = 0;
}

void sqlite_view::write_job(const core::job& j, size_t segments_before) {
  auto& s = *st_->job;
  s.bind(1, j.id).bind(2, j.title).bind(3, core::to_string(j.status)).bind(4, j.user).bind(5, j.account);
  s.bind(6, j.partition).bind(7, j.qos).bind(8, j.nice).bind(9, static_cast<int64_t>(j.gpu_count));
  s.bind(10, static_cast<int64_t>(j.priority_tier)).bind(11, static_cast<int64_t>(j.held));
  s.bind(12, j.worker_image_key);
  s.bind(13, j.assigned_worker_id.empty() ? std::nullopt : std::optional<std::string>(j.assigned_worker_id));
  s.bind(14, static_cast<int64_t>(j.attempts)).bind(15, static_cast<int64_t>(j.lost_workers));
  s.bind(16, j.time_limit_seconds).bind(17, j.progress);
  s.bind(18, j.latest_checkpoint_manifest_path.empty() ? std::nullopt : std::optional<std::string>(j.latest_checkpoint_manifest_path));
  s.bind(19, j.failure_reason.empty() ? std::nullopt : std::optional<std::string>(j.failure_reason));
  s.bind(20, j.requeued_from.empty() ? std::nullopt : std::optional<std::string>(j.requeued_from));
  s.bind(21, static_cast<int64_t>(j.preemptions)).bind(22, static_cast<int64_t>(j.pruned));
  s.bind(23, events::format_time_us(j.created_at)).bind(24, events::format_time_us(j.updated_at));
  s.bind(25, j.started_at ? std::optional<std::string>(events::format_time_us(*j.started_at)) : std::nullopt);
  s.run();
  // Segments are only added, and only the last one changes (its start moves to job.started,
  // it gets an end): the batch changed those from the last it found on.
  for (size_t k = segments_before > 0 ? segments_before - 1 : 0; k < j.segments.size(); ++k) {
    const auto& seg = j.segments[k];
    auto& g = *st_->segment;
    g.bind(1, j.id).bind(2, static_cast<int64_t>(k)).bind(3, seg.worker_id).bind(4, events::format_time_us(seg.started_at));
    if (seg.ended_at) {
      const double seconds = static_cast<double>(*seg.ended_at - seg.started_at) / 1e6;
      g.bind(5, events::format_time_us(*seg.ended_at)).bind(7, seconds).bind(8, seconds * j.gpu_count);
    }
    g.bind(6, static_cast<int64_t>(j.gpu_count));
    g.run();
  }
}

void sqlite_view::write_worker(const core::worker& w) {
  auto& s = *st_->worker;
  const auto cluster = w.cluster();
  s.bind(1, w.id).bind(2, core::to_string(w.kind));
  s.bind(3, cluster.empty() ? std::nullopt : std::optional<std::string>(cluster));
  s.bind(4, w.provider_id.empty() ? std::nullopt : std::optional<std::string>(w.provider_id));
  s.bind(5, w.gpu_model).bind(6, static_cast<int64_t>(w.gpu_count)).bind(7, w.vram_gb).bind(8, w.worker_image_key);
  s.bind(9, static_cast<int64_t>(w.placeholder)).bind(10, static_cast<int64_t>(w.gone));
  s.bind(11, w.gone_reason.empty() ? std::nullopt : std::optional<std::string>(w.gone_reason));
  s.bind(12, events::format_time_us(w.registered_at)).bind(13, time_or_null(w.gone_at)).bind(14, time_or_null(w.allocation_ends_at));
  auto job = world_.job_of_worker.find(w.id);
  const bool busy = job != world_.job_of_worker.end();
  s.bind(15, busy ? std::optional<std::string>(job->second) : std::nullopt);
  // What the log says of it (whether it still heartbeats is a lease, not an event: /workers has that).
  s.bind(16, w.gone ? "gone" : w.placeholder ? "placeholder" : busy ? "busy" : "idle");
  s.run();
}

void sqlite_view::apply(const std::vector<events::event_envelope>& batch) {
  if (batch.empty()) return;
  std::lock_guard<std::mutex> lock(m_);
  std::map<std::string, size_t> jobs;  // touched by the batch (written once each at its end): their segments before it
  std::set<std::string> workers;
  if (!open_) {
    db_->exec("BEGIN IMMEDIATE");
    open_ = true;
  }
  try {
    for (const auto& e : batch) {
      auto payload = events::from_payload(e.payload);
      std::optional<std::string> job_id, worker_id;
      if (e.stream_id.rfind("job/", 0) == 0) {
        job_id = e.stream_id.substr(4);
        if (!jobs.count(*job_id)) {  // its segments before this batch, from the world before this event
          auto j = world_.jobs.find(*job_id);
          jobs.emplace(*job_id, j == world_.jobs.end() ? 0 : j->second.segments.size());
        }
        if (auto w = payload.find("worker_id"); w != payload.end() && w->is_string() && !w->get<std::string>().empty())
          worker_id = w->get<std::string>();
      } else if (e.stream_id.rfind("worker/", 0) == 0) {
        worker_id = e.stream_id.substr(7);
      }
      if (worker_id) workers.insert(*worker_id);
      core::apply(world_, e.stream_id, e.type, payload, e.recorded_at_us);
      const std::string at = events::format_time_us(e.recorded_at_us);
      st_->event->bind(1, static_cast<int64_t>(e.seq)).bind(2, at).bind(3, e.stream_id);
      st_->event->bind(4, static_cast<int64_t>(e.stream_version)).bind(5, e.type).bind(6, e.actor).bind(7, payload.dump());
      st_->event->run();
      if (is_decision(e.type)) {  // (its record is the event's payload: joined on seq, not copied)
        st_->decision->bind(1, static_cast<int64_t>(e.seq)).bind(2, at).bind(3, e.type).bind(4, e.stream_id);
        st_->decision->bind(5, job_id).bind(6, worker_id);
        st_->decision->run();
      }
    }
    for (const auto& [id, segments_before] : jobs)
      if (auto j = world_.jobs.find(id); j != world_.jobs.end()) write_job(j->second, segments_before);
    for (const auto& id : workers)
      if (auto w = world_.workers.find(id); w != world_.workers.end()) write_worker(w->second);
    st_->offset->bind(1, std::to_string(batch.back().seq)).run();
    uncommitted_ += batch.size();
    if (uncommitted_ >= 4096) commit();
  } catch (...) {
    open_ = false;
    uncommitted_ = 0;
    try {
      db_->exec("ROLLBACK");
    } catch (...) {
    }
    throw;  // the runner fails the projection: its rows stay at the last commit
  }
}

}  // namespace baton::projections
