#include "http/metrics_text.hpp"

#include <cstdio>

namespace baton::http {

namespace {

// A label value with \, " and newlines escaped, as the format asks.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// A series of one unlabelled value.
template <class N>
void single(std::string& out, const char* name, const char* type, const char* help, N value) {
  header(out, name, type, help);
  out += std::string(name) + " " + std::to_string(value) + "\n";
}

void histogram(std::string& out, const char* name, const char* help, const actors::latency_histogram& h) {
  header(out, name, "histogram", help);
  const auto r = h.read();
  char le[32];
  for (size_t i = 0; i < actors::latency_histogram::bounds.size(); ++i) {
    std::snprintf(le, sizeof le, "%g", actors::latency_histogram::bounds[i]);
    out += std::string(name) + "_bucket{le=\"" + le + "\"} " + std::to_string(r.cumulative[i]) + "\n";
  }
  out += std::string(name) + "_bucket{le=\"+Inf\"} " + std::to_string(r.cumulative.back()) + "\n";
  std::snprintf(le, sizeof le, "%.6f", r.sum_seconds);
  out += std::string(name) + "_sum " + le + "\n";
  out += std::string(name) + "_count " + std::to_string(r.cumulative.back()) + "\n";
}

}  // namespace

std::string metrics_text(const core::results::metrics& m, const metrics_sources& from) {
  std::string out;
  header(out, "baton_jobs", "gauge", "Jobs by status (pruned jobs left out).");
  for (const char* status : {"queued", "assigned", "running", "handoff", "completed", "failed", "cancelled"}) {
    auto it = m.jobs.find(status);
    out += std::string("baton_jobs{status=\"") + status + "\"} " + std::to_string(it == m.jobs.end() ? 0 : it->second) + "\n";
  }
  single(out, "baton_jobs_pruned", "gauge",
         "Pruned jobs: what the scheduler keeps of them is a stub each (their records stay in the log).", m.pruned);
  single(out, "baton_jobs_eligible", "gauge", "Queued jobs that may be assigned now (not held, blocked or over a limit).",
         m.eligible_queued);
  single(out, "baton_storage_blobs", "gauge", "Blobs stored (bundles, checkpoint and output files), each digest once.",
         m.stored_blobs);
  single(out, "baton_storage_bytes", "gauge", "Bytes of every stored blob.", m.stored_bytes);
  single(out, "baton_storage_unreferenced_blobs", "gauge", "Stored blobs nothing refers to any more: the collector's next work.",
         m.unreferenced_blobs);
  header(out, "baton_storage_user_bytes", "gauge",
         "Bytes each user holds (each digest once), what storage.user_quota_bytes limits.");
  for (const auto& [user, n] : m.storage_used_by_user)
    out += "baton_storage_user_bytes{user=\"" + label(user) + "\"} " + std::to_string(n) + "\n";
  single(out, "baton_storage_quota_bytes", "gauge", "storage.user_quota_bytes (0: no quota).", m.storage_quota_bytes);
  if (const auto* t = from.transfers) {
    single(out, "baton_storage_received_bytes_total", "counter", "Blob bytes uploaded through batond (the local backend).",
           t->bytes_received.load());
    single(out, "baton_storage_served_bytes_total", "counter", "Blob bytes downloaded through batond (the local backend).",
           t->bytes_served.load());
    header(out, "baton_storage_transfers_in_flight", "gauge", "Uploads and downloads through batond now.");
    out += "baton_storage_transfers_in_flight{direction=\"upload\"} " + std::to_string(t->uploads_in_flight.load()) + "\n";
    out += "baton_storage_transfers_in_flight{direction=\"download\"} " + std::to_string(t->downloads_in_flight.load()) + "\n";
  }
  header(out, "baton_workers", "gauge", "Workers by state (as GET /workers shows it) and cluster (\"\" for cloud workers).");
  for (const auto& [key, n] : m.workers)
    out += "baton_workers{state=\"" + label(key.first) + "\",cluster=\"" + label(key.second) + "\"} " + std::to_string(n) + "\n";
  single(out, "baton_log_last_sequence", "counter", "Sequence of the last durable event in the log.", from.log_last_seq);
  header(out, "baton_projection_applied_sequence", "gauge",
         "Last event each log-fed projection has applied and stored (what its readers see).");
  for (const auto& p : from.projections)
    out += "baton_projection_applied_sequence{projection=\"" + label(p->name()) + "\"} " + std::to_string(p->stored_seq()) + "\n";
  header(out, "baton_projection_lag_events", "gauge", "Events in the log a projection has not applied yet.");
  for (const auto& p : from.projections) {
    const uint64_t applied = p->stored_seq();
    out += "baton_projection_lag_events{projection=\"" + label(p->name()) + "\"} " +
           std::to_string(from.log_last_seq > applied ? from.log_last_seq - applied : 0) + "\n";
  }
  header(out, "baton_projection_failed", "gauge", "1 when a projection stopped on an error (GET /healthz says why).");
  for (const auto& p : from.projections)
    out += "baton_projection_failed{projection=\"" + label(p->name()) + "\"} " + (p->failure() ? "1" : "0") + "\n";
  header(out, "baton_projection_skipped_events_total", "counter",
         "Events a projection could not apply as recorded and went past since batond started (GET /healthz says which).");
  for (const auto& p : from.projections)
    out += "baton_projection_skipped_events_total{projection=\"" + label(p->name()) + "\"} " +
           std::to_string(p->skipped().count) + "\n";
  if (const auto* log = from.log) {
    histogram(out, "baton_log_fsync_seconds", "Time each fdatasync of the log's WAL took (each covers a group of appends).",
              log->fsync);
    histogram(out, "baton_log_append_seconds",
              "Time from an append's arrival at the log writer to its durable reply (group commit and fsync included).",
              log->append);
  }
  if (from.requests) {
    header(out, "baton_http_requests_total", "counter",
           "Requests answered, by route (method and pattern; \"unmatched\" for no route) and status.");
    for (const auto& [key, n] : from.requests->read())
      out += "baton_http_requests_total{route=\"" + label(key.first) + "\",status=\"" + std::to_string(key.second) + "\"} " +
             std::to_string(n) + "\n";
  }
  if (from.polls) {
    header(out, "baton_polls_total", "counter",
           "Worker polls (POST /jobs/request) by result (assigned, no_job_available, refused) and reason or error code.");
    for (const auto& [key, n] : from.polls->results.read())
      out += "baton_polls_total{result=\"" + label(key[0]) + "\",reason=\"" + label(key[1]) + "\"} " + std::to_string(n) + "\n";
    histogram(out, "baton_poll_seconds",
              "Time from a poll's arrival to its answer; an assignment is answered once its decision is durable.",
              from.polls->seconds);
  }
  if (from.feed)
    single(out, "baton_live_stream_clients", "gauge",
           "Clients following GET /events/stream (dashboards, baton monitor, baton jobs wait).", from.feed->subscribers());
  if (from.slurm) {
    header(out, "baton_slurm_calls_total", "counter", "sbatch and squeue calls by cluster entry, command and result.");
    for (const auto& [key, n] : from.slurm->read())
      out += "baton_slurm_calls_total{cluster=\"" + label(key[0]) + "\",command=\"" + label(key[1]) + "\",result=\"" +
             label(key[2]) + "\"} " + std::to_string(n) + "\n";
  }
  if (from.cluster_cycles) {
    header(out, "baton_cluster_cycles_total", "counter",
           "Provisioning cycles ended, by cluster entry (a disabled cluster's too).");
    for (const auto& [key, n] : from.cluster_cycles->read())
      out += "baton_cluster_cycles_total{cluster=\"" + label(key[0]) + "\"} " + std::to_string(n) + "\n";
  }
  if (from.process) {
    single(out, "process_resident_memory_bytes", "gauge", "Resident memory of batond's process.", from.process->resident_bytes);
    single(out, "process_open_fds", "gauge", "Open file descriptors of batond's process.", from.process->open_fds);
  }
  if (from.process || from.log_memory) {
    header(out, "baton_memory_bytes", "gauge",
           "Memory by holder: the heap in use and freed but held by the allocator, SQLite (the SQL views' page caches), "
           "RocksDB's memtables, block cache and table readers (the heap counts these too, except what RocksDB maps).");
    auto part = [&](const char* name, uint64_t bytes) {
      out += std::string("baton_memory_bytes{part=\"") + name + "\"} " + std::to_string(bytes) + "\n";
    };
    if (from.process) {
      if (from.process->heap_counted) {
        part("heap_in_use", from.process->heap_in_use_bytes);
        part("heap_free", from.process->heap_free_bytes);
      }
      part("sqlite", from.process->sqlite_bytes);
    }
    if (from.log_memory) {
      part("rocksdb_memtables", from.log_memory->memtables);
      part("rocksdb_block_cache", from.log_memory->block_cache);
      part("rocksdb_table_readers", from.log_memory->table_readers);
    }
  }
  return out;
}

}  // namespace baton::http
