#pragma once
// batond's settings: built-in defaults, then the YAML file, then environment overrides.
// Loading is pure (the environment is passed in) and never throws: a problem comes back as
// a config_error naming the file and the dotted key.
#include <optional>
#include <string>
#include <vector>

#include "config/clusters.hpp"
#include "config/config_file.hpp"
#include "core/planning/deadline.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/policy/priority_policy.hpp"
#include "core/access/rate_limit.hpp"

namespace baton::config {

// storage: where bundles, checkpoints and outputs live (docs/storage.md).
struct s3_config {
  std::string endpoint;              // storage.s3.endpoint: "https://s3.us-east-1.amazonaws.com", "http://127.0.0.1:9000"
  std::string bucket;                // storage.s3.bucket
  std::string region = "us-east-1";  // storage.s3.region
  std::string prefix;                // storage.s3.prefix: put before every key ("baton/")
  bool path_style = true;            // storage.s3.path_style: endpoint/bucket/key (false: bucket.endpoint/key)
  std::string access_key_id;         // storage.s3.access_key_id (or BATON_S3_ACCESS_KEY_ID)
  std::string secret_access_key;     // secret: only from BATON_S3_SECRET_ACCESS_KEY, never from the file
  // A second key that signs only the uploads' presigned URLs: one that may write objects and
  // read none (docs/storage.md: a store that ignores unsigned x-amz-* headers on a presigned
  // URL would otherwise let an uploader turn its PUT into a copy of any object batond can read).
  std::string upload_access_key_id;      // storage.s3.upload_access_key_id (or BATON_S3_UPLOAD_ACCESS_KEY_ID)
  std::string upload_secret_access_key;  // secret: only from BATON_S3_UPLOAD_SECRET_ACCESS_KEY
  std::string ca_file;                   // storage.s3.ca_file: CA for an https endpoint ("" = the system's)
  int url_expiry_seconds = 900;          // storage.s3.url_expiry_seconds: presigned URLs' lifetime, 1..604800
  int multipart_threshold_mb = 64;       // storage.s3.multipart_threshold_mb: larger blobs go in parts
  int part_size_mb = 64;                 // storage.s3.part_size_mb: 5..5120
  // storage.s3.verify: how batond checks an upload's digest before recording it: "read" (it
  // reads the staged object back and hashes it; any store) or "store_checksum" (the store's
  // own SHA-256 checksum, for stores that verify x-amz-checksum-sha256 as AWS does).
  std::string verify = "read";
};

struct storage_config {
  std::string backend = "local";       // storage.backend: local or s3
  int64_t user_quota_bytes = 0;        // storage.user_quota_bytes: per user, 0 = none
  int keep_checkpoints = 3;            // storage.keep_checkpoints: per job, 1..1000
  int unclaimed_upload_hours = 24;     // storage.unclaimed_upload_hours: a bundle no job used is released after
  int transfer_expiry_seconds = 900;   // storage.transfer_expiry_seconds: local transfers' lifetime
  int collect_interval_seconds = 300;  // storage.collect_interval_seconds: the collector's pass
  s3_config s3;
};

struct settings {
  listen_config listen;
  tls_config tls;
  std::string data_dir = default_data_dir;
  int actor_threads = 2;                            // CAF scheduler.max-threads, 1..64
  int http_threads = 16;                            // pool for blocking HTTP routes (operator calls, lists), 1..4096
  int keep_alive_max = 100000;                      // http.keep_alive_max: requests per keep-alive connection
  int http_read_timeout_seconds = 30;               // http.read_timeout_seconds: a whole request (head + body)
  int http_idle_timeout_seconds = 120;              // http.idle_timeout_seconds: keep-alive with no request in progress
  int http_max_connections = 20000;                 // http.max_connections: beyond, 503 and close
  int http_max_buffered_request_bytes = 256 << 20;  // http.max_buffered_request_bytes: all connections together
  int http_worker_reply_deadline_ms = 10000;        // http.worker_reply_deadline_ms: later, 503 not_durable_yet
  // A connection before its first authenticated request: http.unauthenticated_timeout_seconds
  // for its handshake, each request and each idle wait; at most
  // http.max_unauthenticated_connections_per_address such from one address (IPv6: one /64).
  int http_unauthenticated_timeout_seconds = 10;
  int http_max_unauthenticated_per_address = 32;
  int group_commit_max_events = 4096;   // cap per WriteBatch
  int anchor_interval_minutes = 10;     // event_log.anchor_interval_minutes: chain head to <data_dir>/anchors.jsonl (0: off)
  int snapshot_every_events = 100000;   // event_log.snapshot_every_events: a state snapshot every N events (0: off)
  int snapshots_kept = 3;               // event_log.snapshots_kept: the newest N are kept
  int min_free_mb = 128;                // event_log.min_free_mb: below this free under data_dir, writes get 503 disk_full
  bool sqlite_view = true;              // projections.sqlite: the SQL view <data_dir>/views.sqlite (docs/db-views.md)
  std::string sqlite_group;             // projections.sqlite_group: a Unix group that may read the SQL view ("" = none)
  std::string postgres_dsn;             // projections.postgres.dsn: the same view in PostgreSQL ("" = none)
  std::string postgres_password;        // secret: BATON_POSTGRES_PASSWORD
  std::string log_level = "info";       // trace, debug, info, warn, error, critical, off
  int heartbeat_interval_seconds = 60;  // workers.heartbeat_interval_seconds: what workers are told to keep
  double heartbeat_timeout_multiplier = 2.0;     // stale after interval × multiplier without a heartbeat
  int reaper_interval_seconds = 60;              // how often stale workers are reaped and orphans requeued
  bool accept_shared_token = false;              // workers.accept_shared_token: RelayMD workers send only X-API-Token
  int max_attempts = 5;                          // jobs.max_attempts: lost workers (reaped, vanished) before the job fails
  std::string default_worker_image = "default";  // jobs.default_worker_image
  // jobs.worker_images: image keys jobs and workers may name besides the default, the
  // clusters' and Salad's (a key nobody configured is refused with 422).
  std::vector<std::string> worker_images;
  provisioning_config provisioning;
  storage_config storage;                // storage: docs/storage.md
  std::vector<cluster_config> clusters;  // Slurm partitions to provision pilot workers on
  salad_config salad;                    // disabled unless the salad: section is present
  core::priority_policy priority;        // scheduling: and accounts: (who goes first)
  core::backfill_settings backfill;      // scheduling.backfill (the planning cycle)
  core::deadline_rule deadlines;         // scheduling.default_time_limit_seconds, scheduling.min_useful_seconds
  // limits: per-caller request budgets (token buckets); a rate of 0 turns one off.
  core::bucket_rule operator_requests{1000, 2};  // limits.operator_requests_burst / _per_second
  core::bucket_rule worker_requests{600, 50};    // limits.worker_requests_burst / _per_second
  core::bucket_rule login_failures{10, 0.1};     // limits.login_failures_burst / _per_second: per address and per operator
  int event_streams_per_operator = 16;           // limits.event_streams_per_operator: live GET /events/stream each
  std::string api_token;                         // secret: only from BATON_API_TOKEN, never from the file
                                                 // (empty: batond makes one in <data_dir>/api_token)
  std::string metrics_token;                     // secret, GET /metrics only: BATON_METRICS_TOKEN (empty: admins only)
  std::string pilot_token;                       // secret, registration only: BATON_PILOT_TOKEN
                                                 // (empty: batond makes one in <data_dir>/pilot_token)
  std::string source;                            // the file read, "" when built-in defaults were used
  std::vector<std::string> warnings;             // e.g. the file was missing
};

struct load_result {
  std::optional<settings> value;
  std::optional<config_error> error;
};

// Reads the chosen file (choose_config() and read_config(), config_file.hpp: the default one
// missing means defaults plus a warning, a named one missing an error naming it), then applies
// the environment.
load_result load(const config_choice& which, const env_lookup& env);
// Reads path (a missing file means defaults plus a warning), then applies the environment.
load_result load(const std::string& path, const env_lookup& env);
load_result load_from_string(const std::string& yaml_text, const std::string& path, const env_lookup& env);
// batond's own credentials as (where it came from, value), "" for unset: each at least
// min_secret_length characters (a short token falls to guessing) and no two the same (a pilot
// token equal to the admin token would make every pilot an admin). The first problem, naming
// the variable or file. batond checks its own at start (the CLI, reading the same variables
// for its own token, does not).
inline constexpr size_t min_secret_length = 16;
std::optional<config_error> check_secrets(const std::vector<std::pair<std::string, std::string>>& named);

}  // namespace baton::config
