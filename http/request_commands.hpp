#pragma once
// Requests into typed commands (core/app/commands.hpp): validation of every parameter and body
// field, RelayMD's aliases and defaults. Each function throws invalid_field (a 422 naming the
// field) on bad input; none looks at who is calling (api_routes settles that first).
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/app/commands.hpp"
#include "http/message.hpp"
#include "http/request_parsing.hpp"

namespace baton::http::build {

// --- operator side ---
core::commands::create_job create_job(const request& req, const std::string& fresh_id);
// One job's object (POST /jobs's body, or one entry of POST /jobs/batch's `jobs`).
core::commands::create_job create_job(const nlohmann::json& body, const std::string& fresh_id);
// POST /jobs/batch: {"jobs": [job, …]} or {"array": "0-999", "job": job}. Every entry is
// checked; refusals come together in one 422, each naming its index and field.
core::commands::create_jobs create_jobs(const request& req, const std::function<std::string()>& fresh_id);
// A job array's indices in Slurm's --array form ("0-999", "1,3,5-7", "0-99:2"), ascending
// and distinct; throws invalid_field("array") past max_batch_jobs or on anything else.
std::vector<uint32_t> array_indices(const std::string& spec);
// A blob named in a body, {"sha256": 64 lowercase hex, "size": bytes}; invalid_field naming it.
core::blob_ref blob_of(const nlohmann::json& v, const std::string& field);
core::commands::list_jobs list_jobs(const request& req);
core::commands::prune_jobs prune_jobs(const request& req);
core::commands::list_workers list_workers(const request& req);
// GET /priority: limit (1..10000; absent: every queued job) and offset.
core::commands::list_priorities list_priorities(const request& req);
// GET /stats/minutes: since (RFC 3339 with an offset; absent: the projection's whole window).
core::commands::minute_stats minute_stats(const request& req);
core::commands::set_clusters_enabled clusters_enabled(const request& req);
core::commands::set_cluster_enabled cluster_enabled(const request& req, bool enable);
// {name, role: admin|user, accounts: [..]}; the name: 1..64 of [A-Za-z0-9_-] (no dot: the
// token is "<name>.<secret>").
core::commands::create_operator create_operator(const request& req, const std::string& token_sha256);
// POST /operators/{name}/token and POST /workers/{id}/credential: {"grace_seconds": N} (optional).
core::commands::rotate_operator_token rotate_operator_token(const request& req, const std::string& token_sha256);
core::commands::rotate_worker_credential rotate_worker_credential(const request& req, const std::string& credential_sha256);
core::commands::rotate_pilot_token rotate_pilot_token(const request& req, const std::string& token_sha256,
                                                      const core::pilot_configured& configured);

// GET /audit/export's query: from, to (RFC 3339 with an offset), stream, type, actor, format
// (jsonl | csv).
core::commands::audit_export audit_export(const request& req);

// --- workers ---
core::commands::register_worker register_worker(const request& req, const std::string& fresh_id,
                                                const std::string& credential_sha256);
core::commands::heartbeat heartbeat(const request& req);  // worker id from the path
core::commands::request_job request_job(const request& req);

// --- a worker's reports: the job id (from the path) is read by the caller; these fill the rest ---
void fill(const request& req, core::commands::checkpoint_job& c);
void fill(const request& req, core::commands::handoff_start& c);
void fill(const request& req, core::commands::handoff_complete& c);
void fill(const request& req, core::commands::fail_job& c);
template <class Cmd>
void fill(const request&, Cmd&) {}  // no body: control, start, complete
// The checkpoint fields of a report (checkpoint, handoff/complete, a file set): RelayMD's,
// checkpoint_path its deprecated alias, and checkpoint_seconds. The caller checks for
// unknown fields, as a file set's body holds more.
extern const field_names checkpoint_report_fields;
core::checkpoint_report checkpoint_report(const nlohmann::json& body, bool require_path);

// The path's first group as a job or worker id (a UUID), or as a cluster name.
std::string path_uuid(const request& req);
std::string path_name(const request& req);

}  // namespace baton::http::build
