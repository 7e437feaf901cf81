#pragma once
// The largest value batond accepts in each field a worker or operator sends: JSON bodies,
// query parameters and the headers it records. Validation (request_commands.cpp,
// request_parsing.cpp, caller.cpp, ui_routes.cpp) reads its limits from here, and `table`
// lists them for docs/api.md's "Field limits" (tests/input_hardening_test.cpp checks
// that every row is documented and refused one past its limit). A value past its limit is
// refused before anything is recorded: 422 naming the field, 413 naming `body` for a body
// past max_body_bytes, 400 naming a header. Without limits, one worker's 15 MB heartbeats
// grew the log, the SQL view and batond's memory by hundreds of megabytes.
#include <array>
#include <cstddef>
#include <string_view>

namespace baton::http::limits {

// --- every JSON body ---
inline constexpr size_t body_bytes = 256 * 1024;  // well above the sum of one request's fields
inline constexpr size_t body_nesting = 64;        // parsing and encoding recurse once per level

// --- shared kinds of value ---
inline constexpr size_t id_bytes = 128;         // ids: job, worker (UUIDs), provider ids, cluster names
inline constexpr size_t name_bytes = 64;        // users, accounts, partitions, QOS, operators, drivers
inline constexpr size_t image_key_bytes = 128;  // worker_image_key
inline constexpr size_t gpu_model_bytes = 128;
inline constexpr size_t path_bytes = 4096;           // bundle, checkpoint and artifact paths (PATH_MAX)
inline constexpr size_t reason_bytes = 256;          // a machine-ish reason (fail, handoff)
inline constexpr size_t cluster_reason_bytes = 500;  // why an operator switched a cluster
inline constexpr size_t message_bytes = 2000;        // a sentence or two (handoff message, job comment)
inline constexpr size_t detail_bytes = 10000;        // a failure's detail (baton-worker sends a log tail of 9000)
inline constexpr size_t title_bytes = 512;
inline constexpr size_t conformance_bytes = 200;  // a worker fingerprint "<gpu model>/<driver>"
inline constexpr size_t short_text_bytes = 64;    // timestamps, cycle statuses
inline constexpr size_t platform_bytes = 16;      // "hpc" | "salad"; role "admin" | "user"
inline constexpr size_t token_bytes = 512;        // a token typed into the dashboard's login
inline constexpr size_t query_text_bytes = 200;   // the audit export's stream, type, actor filters

// --- lists and JSON the worker chooses (progress_codes, checkpoint_cycle_failures) ---
inline constexpr size_t worker_json_entries = 64;
inline constexpr size_t worker_json_bytes = 16 * 1024;  // as encoded (compact JSON)
inline constexpr size_t worker_json_nesting = 8;        // the list itself is level 1

// --- other lists ---
inline constexpr size_t depends_on_entries = 100;
inline constexpr size_t preferred_clusters_entries = 64;
inline constexpr size_t accounts_entries = 64;
inline constexpr size_t clusters_enabled_entries = 256;
// POST /jobs/batch: up to 10,000 jobs (core::commands::max_batch_jobs) of ~1.6 KiB each.
inline constexpr size_t batch_body_bytes = 16 << 20;
inline constexpr size_t batch_jobs_entries = 10'000;
inline constexpr size_t array_spec_bytes = 1000;  // "0-999", "1,3,5-7", "0-99:2"

// --- headers batond records with every event ---
// Printable ASCII only (0x20-0x7E): each reaches the log, its exports and the views, where a
// byte that is not UTF-8 made the JSON lines export unverifiable and stopped the SQL view.
inline constexpr size_t request_id_bytes = 128;    // X-Request-Id
inline constexpr size_t operator_name_bytes = 64;  // X-Baton-Operator (and the dashboard login's name)

enum class measure : unsigned char { bytes, entries, encoded_bytes, levels };
struct field_limit {
  std::string_view where;  // the routes (or "any" for every JSON body, "header")
  std::string_view field;
  measure of;
  size_t max;
};

inline constexpr std::string_view worker_reports = "heartbeat, checkpoint, handoff";
inline constexpr std::array<field_limit, 53> table{{
    {"any JSON body", "body", measure::bytes, body_bytes},
    {"any JSON body", "body", measure::levels, body_nesting},
    {"header", "X-Request-Id", measure::bytes, request_id_bytes},
    {"header", "X-Baton-Operator", measure::bytes, operator_name_bytes},
    {"POST /workers/register", "platform", measure::bytes, platform_bytes},
    {"POST /workers/register", "gpu_model", measure::bytes, gpu_model_bytes},
    {"POST /workers/register", "driver_version", measure::bytes, name_bytes},
    {"POST /workers/register", "worker_image_key", measure::bytes, image_key_bytes},
    {"POST /workers/register", "provider_id", measure::bytes, id_bytes},
    {"POST /workers/register", "slurm_job_id", measure::bytes, id_bytes},
    {"POST /workers/register", "allocation_ends_at", measure::bytes, short_text_bytes},
    {"POST /workers/{id}/heartbeat", "job_id", measure::bytes, id_bytes},
    {worker_reports, "progress_codes", measure::entries, worker_json_entries},
    {worker_reports, "progress_codes", measure::encoded_bytes, worker_json_bytes},
    {worker_reports, "progress_codes", measure::levels, worker_json_nesting},
    {"checkpoint, handoff/complete", "checkpoint_manifest_path", measure::bytes, path_bytes},
    {"checkpoint, handoff/complete", "checkpoint_path", measure::bytes, path_bytes},
    {"checkpoint, handoff/complete", "checkpoint_cycle_status", measure::bytes, short_text_bytes},
    {"checkpoint, handoff/complete", "checkpoint_cycle_failures", measure::entries, worker_json_entries},
    {"checkpoint, handoff/complete", "checkpoint_cycle_failures", measure::encoded_bytes, worker_json_bytes},
    {"checkpoint, handoff/complete", "checkpoint_cycle_failures", measure::levels, worker_json_nesting},
    {"POST /jobs/{id}/handoff/start", "reason", measure::bytes, reason_bytes},
    {"POST /jobs/{id}/handoff/start", "message", measure::bytes, message_bytes},
    {"POST /jobs/{id}/fail", "reason", measure::bytes, reason_bytes},
    {"POST /jobs/{id}/fail", "detail", measure::bytes, detail_bytes},
    {"POST /jobs/{id}/fail", "failure_artifact_path", measure::bytes, path_bytes},
    {"POST /jobs", "id", measure::bytes, id_bytes},
    {"POST /jobs", "title", measure::bytes, title_bytes},
    {"POST /jobs", "input_bundle_path", measure::bytes, path_bytes},
    {"POST /jobs", "worker_image_key", measure::bytes, image_key_bytes},
    {"POST /jobs", "preferred_clusters", measure::entries, preferred_clusters_entries},
    {"POST /jobs", "preferred_clusters", measure::bytes, id_bytes},
    {"POST /jobs", "comment", measure::bytes, message_bytes},
    {"POST /jobs", "user", measure::bytes, name_bytes},
    {"POST /jobs", "account", measure::bytes, name_bytes},
    {"POST /jobs", "partition", measure::bytes, name_bytes},
    {"POST /jobs", "qos", measure::bytes, name_bytes},
    {"POST /jobs", "conformance", measure::bytes, conformance_bytes},
    {"POST /jobs", "depends_on", measure::entries, depends_on_entries},
    {"POST /jobs/batch", "jobs", measure::entries, batch_jobs_entries},
    {"POST /jobs/batch", "array", measure::bytes, array_spec_bytes},
    {"POST /operators", "name", measure::bytes, name_bytes},
    {"POST /operators", "role", measure::bytes, platform_bytes},
    {"POST /operators", "accounts", measure::entries, accounts_entries},
    {"POST /operators", "accounts", measure::bytes, name_bytes},
    {"PUT /config/slurm-clusters/enabled", "enabled", measure::entries, clusters_enabled_entries},
    {"PUT /config/slurm-clusters/enabled, POST /clusters/{name}/enable|disable", "reason", measure::bytes, cluster_reason_bytes},
    {"POST /ui/login", "token", measure::bytes, token_bytes},
    {"POST /ui/login", "name", measure::bytes, operator_name_bytes},
    {"GET /jobs, GET /workers", "worker_id, worker_image_key, cluster", measure::bytes, id_bytes},
    {"GET /audit/export", "stream, type, actor", measure::bytes, query_text_bytes},
    {"GET /stats/minutes", "since", measure::bytes, short_text_bytes},
    {"paths", "{id}, {name}", measure::bytes, id_bytes},
}};

}  // namespace baton::http::limits
