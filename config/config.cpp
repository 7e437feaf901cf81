#include "config/config.hpp"

#include "config/clusters_parse.hpp"
#include "config/scheduling_parse.hpp"
#include "config/yaml_read.hpp"

#include <yaml-cpp/yaml.h>

#include <set>

namespace baton::config {
namespace {

using namespace detail;

const std::set<std::string> log_levels = {"trace", "debug", "info", "warn", "error", "critical", "off"};

void check_log_level(const std::string& key, const std::string& level) {
  if (!log_levels.count(level))
    throw key_error{key, "expected one of trace, debug, info, warn, error, critical, off, got '" + level + "'"};
}

// storage: (docs/storage.md). The S3 secret never comes from the file.
void parse_storage(const YAML::Node& st, storage_config& out) {
  check_known_keys(st, "storage",
                   {"backend", "user_quota_bytes", "keep_checkpoints", "unclaimed_upload_hours", "transfer_expiry_seconds",
                    "collect_interval_seconds", "s3"});
  read_string(st, "storage", "backend", out.backend);
  if (out.backend != "local" && out.backend != "s3")
    throw key_error{"storage.backend", "expected local or s3, got '" + out.backend + "'"};
  if (auto q = st["user_quota_bytes"]) {
    int64_t v = -1;
    try {
      v = q.as<int64_t>();
    } catch (const YAML::Exception&) {
    }
    if (v < 0) throw key_error{"storage.user_quota_bytes", "expected a byte count (0 = no quota), got " + describe(q)};
    out.user_quota_bytes = v;
  }
  read_int(st, "storage", "keep_checkpoints", 1, 1000, out.keep_checkpoints);
  read_int(st, "storage", "unclaimed_upload_hours", 1, 24 * 365, out.unclaimed_upload_hours);
  read_int(st, "storage", "transfer_expiry_seconds", 1, 7 * 86400, out.transfer_expiry_seconds);
  read_int(st, "storage", "collect_interval_seconds", 1, 86400, out.collect_interval_seconds);
  if (auto s3 = st["s3"]) {
    check_known_keys(s3, "storage.s3",
                     {"endpoint", "bucket", "region", "prefix", "path_style", "access_key_id", "upload_access_key_id", "ca_file",
                      "url_expiry_seconds", "multipart_threshold_mb", "part_size_mb", "verify"});
    auto& c = out.s3;
    read_string(s3, "storage.s3", "endpoint", c.endpoint);
    read_string(s3, "storage.s3", "bucket", c.bucket);
    read_string(s3, "storage.s3", "region", c.region);
    read_string(s3, "storage.s3", "prefix", c.prefix);
    read_bool(s3, "storage.s3", "path_style", c.path_style);
    read_string(s3, "storage.s3", "access_key_id", c.access_key_id);
    read_string(s3, "storage.s3", "upload_access_key_id", c.upload_access_key_id);
    read_string(s3, "storage.s3", "ca_file", c.ca_file);
    read_int(s3, "storage.s3", "url_expiry_seconds", 1, 604800, c.url_expiry_seconds);
    read_int(s3, "storage.s3", "multipart_threshold_mb", 5, 5120, c.multipart_threshold_mb);
    read_int(s3, "storage.s3", "part_size_mb", 5, 5120, c.part_size_mb);
    read_string(s3, "storage.s3", "verify", c.verify);
    if (c.verify != "read" && c.verify != "store_checksum")
      throw key_error{"storage.s3.verify", "expected read or store_checksum, got '" + c.verify + "'"};
  }
  if (out.backend == "s3") {
    if (out.s3.endpoint.empty()) throw key_error{"storage.s3.endpoint", "storage.backend is s3, but no endpoint is set"};
    if (out.s3.bucket.empty()) throw key_error{"storage.s3.bucket", "storage.backend is s3, but no bucket is set"};
  }
}

void apply_file(const YAML::Node& root, const std::string& file, settings& s) {
  if (!root || root.IsNull()) return;  // empty file or only comments
  check_known_keys(root, "",
                   {"listen", "data_dir", "threads", "http", "event_log", "log_level", "workers", "jobs", "provisioning",
                    "clusters", "salad", "scheduling", "accounts", "limits", "projections", "tls", "storage"});
  endpoint served{s.listen, s.tls, s.data_dir};
  read_endpoint(root, served);
  s.listen = std::move(served.listen);
  s.tls = std::move(served.tls);
  s.data_dir = std::move(served.data_dir);
  if (auto t = root["threads"]) {
    check_known_keys(t, "threads", {"actors", "http"});
    read_int(t, "threads", "actors", 1, 64, s.actor_threads);
    read_int(t, "threads", "http", 1, 4096, s.http_threads);
  }
  if (auto h = root["http"]) {
    check_known_keys(
        h, "http",
        {"keep_alive_max", "read_timeout_seconds", "idle_timeout_seconds", "max_connections", "max_buffered_request_bytes",
         "worker_reply_deadline_ms", "unauthenticated_timeout_seconds", "max_unauthenticated_connections_per_address"});
    read_int(h, "http", "keep_alive_max", 1, 1000000000, s.keep_alive_max);
    read_int(h, "http", "read_timeout_seconds", 1, 3600, s.http_read_timeout_seconds);
    read_int(h, "http", "idle_timeout_seconds", 1, 86400, s.http_idle_timeout_seconds);
    read_int(h, "http", "max_connections", 1, 1000000, s.http_max_connections);
    // At least one largest request (64 KiB head + 16 MiB body), else such a request could never be read.
    read_int(h, "http", "max_buffered_request_bytes", (16 << 20) + (64 << 10), 2147483647, s.http_max_buffered_request_bytes);
    read_int(h, "http", "worker_reply_deadline_ms", 10, 3600000, s.http_worker_reply_deadline_ms);
    read_int(h, "http", "unauthenticated_timeout_seconds", 1, 3600, s.http_unauthenticated_timeout_seconds);
    read_int(h, "http", "max_unauthenticated_connections_per_address", 1, 1000000, s.http_max_unauthenticated_per_address);
  }
  if (auto e = root["event_log"]) {
    check_known_keys(
        e, "event_log",
        {"group_commit_max_events", "anchor_interval_minutes", "snapshot_every_events", "snapshots_kept", "min_free_mb"});
    read_int(e, "event_log", "group_commit_max_events", 1, 1000000, s.group_commit_max_events);
    read_int(e, "event_log", "anchor_interval_minutes", 0, 1440, s.anchor_interval_minutes);
    read_int(e, "event_log", "snapshot_every_events", 0, 1'000'000'000, s.snapshot_every_events);
    read_int(e, "event_log", "snapshots_kept", 1, 1000, s.snapshots_kept);
    read_int(e, "event_log", "min_free_mb", 0, 1 << 30, s.min_free_mb);
  }
  if (auto p = root["projections"]) {
    check_known_keys(p, "projections", {"sqlite", "sqlite_group", "postgres"});
    read_bool(p, "projections", "sqlite", s.sqlite_view);
    read_string(p, "projections", "sqlite_group", s.sqlite_group);
    if (auto pg = p["postgres"]) {
      check_known_keys(pg, "projections.postgres", {"dsn"});
      read_string(pg, "projections.postgres", "dsn", s.postgres_dsn);
      // A secret in a config file ends up in backups and tickets: it comes from the environment.
      if (s.postgres_dsn.find("password") != std::string::npos)
        throw key_error{"projections.postgres.dsn", "holds a password; set BATON_POSTGRES_PASSWORD instead"};
    }
  }
  read_string(root, "", "log_level", s.log_level);
  check_log_level("log_level", s.log_level);
  if (auto w = root["workers"]) {
    check_known_keys(
        w, "workers",
        {"heartbeat_interval_seconds", "heartbeat_timeout_multiplier", "reaper_interval_seconds", "accept_shared_token"});
    read_int(w, "workers", "heartbeat_interval_seconds", 1, 86400, s.heartbeat_interval_seconds);
    read_double(w, "workers", "heartbeat_timeout_multiplier", 1.0, 100.0, s.heartbeat_timeout_multiplier);
    read_int(w, "workers", "reaper_interval_seconds", 1, 86400, s.reaper_interval_seconds);
    read_bool(w, "workers", "accept_shared_token", s.accept_shared_token);
  }
  if (auto j = root["jobs"]) {
    check_known_keys(j, "jobs", {"max_attempts", "default_worker_image", "worker_images"});
    read_int(j, "jobs", "max_attempts", 1, 1000, s.max_attempts);
    read_string(j, "jobs", "default_worker_image", s.default_worker_image);
    read_string_list(j, "jobs", "worker_images", s.worker_images);
  }
  if (auto st = root["storage"]) parse_storage(st, s.storage);
  if (auto p = root["provisioning"]) s.provisioning = parse_provisioning(p);
  if (auto c = root["clusters"]) s.clusters = parse_clusters(c, file);
  if (auto sc = root["salad"]) s.salad = parse_salad(sc);
  if (auto sc = root["scheduling"]) {
    parse_scheduling(sc, s.priority);
    parse_deadline_rule(sc, s.deadlines);
    parse_backfill(sc, s.backfill);
  }
  if (auto a = root["accounts"]) parse_accounts(a, s.priority);
  if (auto l = root["limits"]) {
    check_known_keys(
        l, "limits",
        {"operator_requests_burst", "operator_requests_per_second", "worker_requests_burst", "worker_requests_per_second",
         "login_failures_burst", "login_failures_per_second", "event_streams_per_operator"});
    read_double(l, "limits", "operator_requests_burst", 1, 1e9, s.operator_requests.capacity);
    read_double(l, "limits", "operator_requests_per_second", 0, 1e9, s.operator_requests.refill_per_second);
    read_double(l, "limits", "worker_requests_burst", 1, 1e9, s.worker_requests.capacity);
    read_double(l, "limits", "worker_requests_per_second", 0, 1e9, s.worker_requests.refill_per_second);
    read_double(l, "limits", "login_failures_burst", 1, 1e9, s.login_failures.capacity);
    read_double(l, "limits", "login_failures_per_second", 0, 1e9, s.login_failures.refill_per_second);
    read_int(l, "limits", "event_streams_per_operator", 1, 1000000, s.event_streams_per_operator);
  }
  check_scheduling(s.priority);
}

}  // namespace

std::optional<config_error> check_secrets(const std::vector<std::pair<std::string, std::string>>& named) {
  for (size_t i = 0; i < named.size(); ++i) {
    const auto& [name, value] = named[i];
    if (value.empty()) continue;
    if (value.size() < min_secret_length)
      return config_error{"", name,
                          "a credential of " + std::to_string(value.size()) + " characters is too easy to guess; use at least " +
                              std::to_string(min_secret_length) + " (e.g. openssl rand -hex 32)"};
    for (size_t k = 0; k < i; ++k)
      if (named[k].second == value)
        return config_error{"", name, "is the same value as " + named[k].first + "; each credential must be its own"};
  }
  return std::nullopt;
}

namespace {

void apply_env(const env_lookup& env, settings& s) {
  auto get = [&](const char* name) { return env_value(env, name); };
  if (auto v = get("BATON_API_TOKEN")) s.api_token = *v;
  if (auto v = get("BATON_PILOT_TOKEN")) s.pilot_token = *v;
  if (auto v = get("BATON_METRICS_TOKEN")) s.metrics_token = *v;
  if (auto v = get("BATON_POSTGRES_PASSWORD")) s.postgres_password = *v;
  if (auto v = get("BATON_SALAD_API_KEY")) s.salad.api_key = *v;
  if (s.salad.enabled() && s.salad.api_key.empty())
    throw key_error{"BATON_SALAD_API_KEY", "the salad: section is configured, but its API key is not set"};
  if (auto v = get("BATON_S3_ACCESS_KEY_ID")) s.storage.s3.access_key_id = *v;
  if (auto v = get("BATON_S3_SECRET_ACCESS_KEY")) s.storage.s3.secret_access_key = *v;
  if (auto v = get("BATON_S3_UPLOAD_ACCESS_KEY_ID")) s.storage.s3.upload_access_key_id = *v;
  if (auto v = get("BATON_S3_UPLOAD_SECRET_ACCESS_KEY")) s.storage.s3.upload_secret_access_key = *v;
  if (s.storage.backend == "s3") {
    const auto& c = s.storage.s3;
    if (c.access_key_id.empty())
      throw key_error{"storage.s3.access_key_id",
                      "storage.backend is s3, but no access key id is set (or BATON_S3_ACCESS_KEY_ID)"};
    if (c.secret_access_key.empty())
      throw key_error{"BATON_S3_SECRET_ACCESS_KEY", "storage.backend is s3, but its secret access key is not set"};
    if (!c.upload_access_key_id.empty() && c.upload_secret_access_key.empty())
      throw key_error{"BATON_S3_UPLOAD_SECRET_ACCESS_KEY",
                      "storage.s3.upload_access_key_id is set, but the upload key's secret is not"};
    if (c.upload_access_key_id.empty() && !c.upload_secret_access_key.empty())
      throw key_error{"storage.s3.upload_access_key_id",
                      "BATON_S3_UPLOAD_SECRET_ACCESS_KEY is set, but not the upload key's id (or BATON_S3_UPLOAD_ACCESS_KEY_ID)"};
    if (!c.upload_access_key_id.empty() && c.upload_access_key_id == c.access_key_id)
      throw key_error{"storage.s3.upload_access_key_id",
                      "the upload key must be a key of its own, allowed only to write (docs/storage.md); it is access_key_id"};
  }
  endpoint served{s.listen, s.tls, s.data_dir};
  read_endpoint_env(env, served);
  s.listen = std::move(served.listen);
  s.data_dir = std::move(served.data_dir);
  if (auto v = get("BATON_LOG_LEVEL")) {
    check_log_level("BATON_LOG_LEVEL", *v);
    s.log_level = *v;
  }
}

}  // namespace

load_result load_from_string(const std::string& yaml_text, const std::string& path, const env_lookup& env) {
  settings s;
  s.source = path;
  return load_layers<load_result>(
      std::move(s), yaml_text, path, [&](const YAML::Node& root, settings& into) { apply_file(root, path, into); },
      [&](settings& into) { apply_env(env, into); });
}

load_result load(const config_choice& which, const env_lookup& env) {
  auto t = read_config(which);
  if (t.error) return {std::nullopt, t.error};
  auto r = load_from_string(t.text, t.source, env);
  if (r.value) r.value->warnings.insert(r.value->warnings.end(), t.warnings.begin(), t.warnings.end());
  return r;
}

load_result load(const std::string& path, const env_lookup& env) { return load(config_choice{path, ""}, env); }

}  // namespace baton::config
