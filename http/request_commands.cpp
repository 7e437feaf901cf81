#include "http/request_commands.hpp"

#include <set>

#include "core/access/credential.hpp"
#include "core/jobs/first_seen.hpp"
#include "core/jobs/ids.hpp"
#include "core/util/sha256.hpp"
#include "core/util/text.hpp"
#include "core/util/time.hpp"
#include "http/field_limits.hpp"
#include "http/request_parsing.hpp"

namespace baton::http::build {
namespace {

using nlohmann::json;
namespace C = core::commands;

// A rotation's body, {"grace_seconds": N} (optional): N, or `dflt`.
int64_t grace_seconds(const request& req, int64_t dflt) {
  auto b = object_body(req, true);
  check_known_fields(b, {"grace_seconds"});
  return opt_int(b, "grace_seconds", 0, core::max_rotation_grace_seconds).value_or(dflt);
}

}  // namespace

const field_names checkpoint_report_fields = {"checkpoint_manifest_path", "checkpoint_path",         "progress",
                                              "progress_codes",           "checkpoint_cycle_status", "checkpoint_cycle_failures",
                                              "checkpoint_seconds"};

core::checkpoint_report checkpoint_report(const json& b, bool require_path) {
  core::checkpoint_report r;
  r.manifest_path = opt_string(b, "checkpoint_manifest_path", limits::path_bytes);
  if (!r.manifest_path) r.manifest_path = opt_string(b, "checkpoint_path", limits::path_bytes);  // RelayMD's deprecated alias
  if (require_path && !r.manifest_path) throw invalid_field("checkpoint_manifest_path", "checkpoint_manifest_path is required");
  r.progress = opt_number(b, "progress", 0, 1);
  r.progress_codes = opt_worker_json(b, "progress_codes");
  r.cycle_status = opt_string(b, "checkpoint_cycle_status", limits::short_text_bytes);
  r.cycle_failures = opt_worker_json(b, "checkpoint_cycle_failures");
  r.seconds = opt_number(b, "checkpoint_seconds", 0, 1e7);
  return r;
}

namespace {

// depends_on's shape: {job_id: UUID, condition?} entries (opt_array counted them); what
// they name is the core's to judge (unknown jobs, cycles).
std::vector<core::dependency> dependencies(const json& list) {
  const std::string field = "depends_on";
  std::vector<core::dependency> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    auto at = field + "[" + std::to_string(i) + "]";
    if (!e.is_object()) throw invalid_field(field, at + " must be an object {\"job_id\", \"condition\"}");
    for (const auto& [key, value] : e.items())
      if (key != "job_id" && key != "condition") throw invalid_field(field, at + " has an unknown key '" + key + "'");
    auto id = e.find("job_id");
    if (id == e.end() || !id->is_string()) throw invalid_field(field, at + ".job_id is required: a job's id");
    auto canonical = core::canonical_uuid(id->get<std::string>());
    if (!canonical) throw invalid_field(field, at + ".job_id must be a UUID (8-4-4-4-12 hexadecimal digits)");
    auto condition = core::dependency_condition::afterok;
    if (auto c = e.find("condition"); c != e.end() && !c->is_null()) {
      auto parsed = c->is_string() ? core::dependency_condition_from(c->get<std::string>()) : std::nullopt;
      if (!parsed) throw invalid_field(field, at + ".condition must be afterok, afterany or afternotok");
      condition = *parsed;
    }
    out.push_back({*canonical, condition});
  }
  return out;
}

std::set<std::string> repeated(const request& req, const std::string& name, const std::function<bool(const std::string&)>& ok,
                               const std::string& why) {
  std::set<std::string> out;
  for (size_t i = 0; i < req.get_param_value_count(name); ++i) {
    auto v = req.get_param_value(name, i);
    if (!ok(v)) throw invalid_field(name, why + ", got '" + v + "'");
    out.insert(v);
  }
  return out;
}

// A body holding a checkpoint report alone.
core::checkpoint_report report_body(const request& req, bool require_path) {
  auto b = object_body(req, true);
  check_known_fields(b, checkpoint_report_fields);
  return checkpoint_report(b, require_path);
}

}  // namespace

std::string path_uuid(const request& req) { return checked_uuid(req.path_params.at(0), "id"); }
std::string path_name(const request& req) { return checked_id(req.path_params.at(0), "name"); }

core::blob_ref blob_of(const json& v, const std::string& field) {
  if (!v.is_object()) throw invalid_field(field, field + " must be an object {sha256, size}");
  auto sha = req_string(v, "sha256", 64);
  if (!util::is_sha256_hex(sha)) throw invalid_field(field + ".sha256", "must be 64 lowercase hex digits");
  auto size = opt_int(v, "size", 0, static_cast<int64_t>(core::max_blob_bytes));
  if (!size) throw invalid_field(field + ".size", "is required");
  return {sha, static_cast<uint64_t>(*size)};
}

C::create_job create_job(const request& req, const std::string& fresh_id) {
  return create_job(object_body(req, false), fresh_id);
}

C::create_job create_job(const json& b, const std::string& fresh_id) {
  // RelayMD's JobCreate (id, title, input_bundle_path, worker_image_key, preferred_clusters,
  // comment) and baton's own fields.
  check_known_fields(b, {"id",
                         "title",
                         "input_bundle",
                         "input_bundle_path",
                         "worker_image_key",
                         "preferred_clusters",
                         "comment",
                         "max_attempts",
                         "user",
                         "account",
                         "partition",
                         "qos",
                         "nice",
                         "gpu_count",
                         "time_limit_seconds",
                         "checkpoints",
                         "requeue",
                         "interactive",
                         "conformance",
                         "hold",
                         "depends_on"});
  C::create_job c;
  auto id = opt_string(b, "id", limits::id_bytes);
  c.id = id ? checked_uuid(*id, "id") : fresh_id;
  c.title = req_string(b, "title", limits::title_bytes);
  // A stored bundle (docs/storage.md) or a path every site sees; a path that names a stored
  // bundle ("blob:…", as GET shows it) is that bundle, checked as one.
  if (b.contains("input_bundle")) {
    if (b.contains("input_bundle_path")) throw invalid_field("input_bundle", "give input_bundle or input_bundle_path, not both");
    check_known_fields(b["input_bundle"], {"sha256", "size"}, "input_bundle.");
    c.input_bundle = blob_of(b["input_bundle"], "input_bundle");
  } else {
    c.input_bundle_path = req_string(b, "input_bundle_path", limits::path_bytes);
    if (auto blob = core::parse_blob_uri(c.input_bundle_path)) {
      c.input_bundle = *blob;
      c.input_bundle_path.clear();
    } else if (c.input_bundle_path.rfind("blob:", 0) == 0) {
      throw invalid_field("input_bundle_path", "a blob: path is blob:<sha256>:<size>");
    }
  }
  if (auto img = opt_string(b, "worker_image_key", limits::image_key_bytes)) {
    if (img->find_first_not_of(" \t") == std::string::npos) throw invalid_field("worker_image_key", "must not be blank");
    c.worker_image_key = *img;
  }
  if (auto arr = opt_array(b, "preferred_clusters", limits::preferred_clusters_entries)) {
    std::vector<std::string> pins;
    for (const auto& p : *arr) {
      if (!p.is_string()) throw invalid_field("preferred_clusters", "must be a list of cluster names");
      auto name = util::trimmed(p.get<std::string>(), " \t");
      if (name.empty()) throw invalid_field("preferred_clusters", "must not contain blank names");
      if (name.size() > limits::id_bytes)
        throw invalid_field("preferred_clusters", "names must be at most " + std::to_string(limits::id_bytes) + " bytes");
      pins.push_back(std::move(name));
    }
    c.preferred_clusters = core::first_seen(std::move(pins));
  }
  // (Surrounding blanks do not count: the body's own limit bounds them.)
  if (auto comment = opt_string(b, "comment", limits::body_bytes)) {
    c.comment = util::trimmed(*comment);
    if (c.comment.size() > limits::message_bytes)
      throw invalid_field("comment", "must be at most " + std::to_string(limits::message_bytes) + " characters");
  }
  if (auto m = opt_int(b, "max_attempts", 1, 1000)) c.max_attempts = static_cast<uint32_t>(*m);
  // Who goes first: names the policy knows (checked by the core against the config).
  for (auto [field, slot] : {std::pair<const char*, std::optional<std::string>*>{"user", &c.user},
                             {"account", &c.account},
                             {"partition", &c.partition},
                             {"qos", &c.qos}})
    if (auto v = opt_string(b, field, limits::name_bytes)) *slot = checked_name(*v, field);
  if (auto n = opt_int(b, "nice", 0, 2147483645)) c.nice = *n;
  if (auto g = opt_int(b, "gpu_count", 1, 1024)) c.gpu_count = static_cast<uint32_t>(*g);
  if (auto t = opt_int(b, "time_limit_seconds", 1, 366LL * 86400)) c.time_limit_seconds = *t;
  if (auto cp = opt_bool(b, "checkpoints")) c.checkpoints = *cp;
  if (auto rq = opt_bool(b, "requeue")) c.requeue = *rq;
  if (auto in = opt_bool(b, "interactive")) c.interactive = *in;
  if (auto cf = opt_string(b, "conformance", limits::conformance_bytes); cf && !cf->empty()) c.conformance = *cf;
  if (auto h = opt_bool(b, "hold")) c.hold = *h;
  if (auto deps = opt_array(b, "depends_on", limits::depends_on_entries)) c.depends_on = dependencies(*deps);
  return c;
}

std::vector<uint32_t> array_indices(const std::string& spec) {
  auto bad = [&](const std::string& why) {
    return invalid_field("array", why + " (the form is Slurm's --array: 0-999, 1,3,5-7 or 0-99:2), got '" + spec + "'");
  };
  if (spec.empty()) throw bad("is empty");
  if (spec.size() > limits::array_spec_bytes)
    throw invalid_field("array", "must be at most " + std::to_string(limits::array_spec_bytes) + " bytes");
  if (spec.find('%') != std::string::npos) throw bad("a %limit on running tasks is not supported");
  constexpr uint64_t max_index = 4'000'000'000ULL;
  auto number = [&](const std::string& text) {
    if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos)
      throw bad("'" + text + "' is not an index");
    uint64_t v = std::stoull(text);
    if (v > max_index) throw bad("indices go up to " + std::to_string(max_index));
    return v;
  };
  std::set<uint32_t> out;
  size_t start = 0;
  while (start <= spec.size()) {
    auto comma = spec.find(',', start);
    auto part = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    uint64_t step = 1;
    if (auto colon = part.find(':'); colon != std::string::npos) {
      step = number(part.substr(colon + 1));
      if (step == 0) throw bad("a step must be at least 1");
      part = part.substr(0, colon);
    }
    auto dash = part.find('-');
    uint64_t lo = number(part.substr(0, dash)), hi = dash == std::string::npos ? lo : number(part.substr(dash + 1));
    if (hi < lo) throw bad("a range goes up: " + part);
    if ((hi - lo) / step + 1 + out.size() > core::commands::max_batch_jobs)
      throw invalid_field("array", "names more than " + std::to_string(core::commands::max_batch_jobs) + " tasks");
    for (uint64_t i = lo; i <= hi; i += step) out.insert(static_cast<uint32_t>(i));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {out.begin(), out.end()};
}

C::create_jobs create_jobs(const request& req, const std::function<std::string()>& fresh_id) {
  auto b = object_body(req, false, limits::batch_body_bytes);
  check_known_fields(b, {"jobs", "array", "job"});
  C::create_jobs c;
  json refused = json::array();
  size_t refused_count = 0;
  auto take = [&](size_t index, const json& entry) {
    try {
      if (!entry.is_object()) throw invalid_field("jobs", "each job must be an object (a POST /jobs body)");
      c.jobs.push_back(create_job(entry, fresh_id()));
    } catch (const invalid_field& e) {
      ++refused_count;
      refused.push_back({{"index", index}, {"field", e.field}, {"error", "validation_error"}, {"detail", e.what()}});
    }
  };
  if (b.contains("array") || b.contains("job")) {
    if (b.contains("jobs")) throw invalid_field("jobs", "give jobs, or array and job, not both");
    auto spec = req_string(b, "array", limits::array_spec_bytes);
    auto it = b.find("job");
    if (it == b.end() || !it->is_object()) throw invalid_field("job", "job is required with array: the tasks' POST /jobs body");
    if (it->contains("id")) throw invalid_field("job.id", "each task of an array gets its own id");
    auto indices = array_indices(spec);
    C::create_job task;
    try {
      task = create_job(*it, "");
    } catch (invalid_field& e) {
      e.field = "job." + e.field;  // the tasks' body, once for all of them
      throw;
    }
    c.array_id = fresh_id();
    task.array_id = c.array_id;
    c.jobs.reserve(indices.size());
    for (uint32_t i : indices) {
      c.jobs.push_back(task);
      c.jobs.back().id = fresh_id();
      c.jobs.back().array_index = i;
    }
  } else {
    auto it = b.find("jobs");
    if (it == b.end() || !it->is_array() || it->empty())
      throw invalid_field("jobs", "jobs is required: a list of POST /jobs bodies (or give array and job)");
    if (it->size() > limits::batch_jobs_entries)
      throw invalid_field("jobs", "must have at most " + std::to_string(limits::batch_jobs_entries) + " entries, has " +
                                      std::to_string(it->size()));
    c.jobs.reserve(it->size());
    for (size_t i = 0; i < it->size(); ++i) take(i, (*it)[i]);
  }
  if (refused_count) {
    invalid_field e("jobs", std::to_string(refused_count) + " of " + std::to_string(refused_count + c.jobs.size()) +
                                " jobs refused; none was created (each refusal names its index)");
    e.extra = {{"refused", std::move(refused)}, {"refused_count", refused_count}};
    throw e;
  }
  return c;
}

C::rotate_operator_token rotate_operator_token(const request& req, const std::string& token_sha256) {
  C::rotate_operator_token c;
  c.name = path_name(req);
  c.grace_seconds = grace_seconds(req, c.grace_seconds);
  c.token_sha256 = token_sha256;
  return c;
}

C::rotate_pilot_token rotate_pilot_token(const request& req, const std::string& token_sha256,
                                         const core::pilot_configured& configured) {
  C::rotate_pilot_token c;
  c.grace_seconds = grace_seconds(req, c.grace_seconds);
  c.token_sha256 = token_sha256;
  c.configured = configured;
  return c;
}

C::rotate_worker_credential rotate_worker_credential(const request& req, const std::string& credential_sha256) {
  C::rotate_worker_credential c;
  c.worker_id = path_uuid(req);
  c.grace_seconds = grace_seconds(req, c.grace_seconds);
  c.credential_sha256 = credential_sha256;
  return c;
}

C::create_operator create_operator(const request& req, const std::string& token_sha256) {
  auto b = object_body(req, false);
  check_known_fields(b, {"name", "role", "accounts"});
  C::create_operator c;
  c.name = req_string(b, "name", limits::name_bytes);
  if (c.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
    throw invalid_field("name", "must be 1 to 64 letters, digits, _ or -");
  auto role = opt_string(b, "role", limits::platform_bytes).value_or("user");
  if (role != "admin" && role != "user") throw invalid_field("role", "must be admin or user");
  c.admin = role == "admin";
  if (auto arr = opt_array(b, "accounts", limits::accounts_entries))
    for (const auto& a : *arr) {
      if (!a.is_string()) throw invalid_field("accounts", "must be a list of account names");
      c.accounts.push_back(checked_name(a.get<std::string>(), "accounts"));
    }
  c.token_sha256 = token_sha256;
  return c;
}

C::list_jobs list_jobs(const request& req) {
  C::list_jobs q;
  q.limit = static_cast<size_t>(query_int(req, "limit", 500, 1, 10000));
  q.offset = static_cast<size_t>(query_int(req, "offset", 0, 0, INT64_MAX));
  q.include_pruned = query_bool(req, "include_pruned", false);
  q.statuses = repeated(
      req, "status", [](const std::string& s) { return core::job_status_from(s).has_value(); }, "unknown job status");
  q.worker_id = query_text(req, "worker_id", limits::id_bytes);
  q.worker_image_key = query_text(req, "worker_image_key", limits::image_key_bytes);
  if (auto a = query_text(req, "array_id", limits::id_bytes); !a.empty()) q.array_id = checked_uuid(a, "array_id");
  return q;
}

C::audit_export audit_export(const request& req) {
  C::audit_export c;
  auto& f = c.filter;
  for (auto [name, out] : {std::pair<const char*, std::optional<int64_t>*>{"from", &f.from_us}, {"to", &f.to_us}}) {
    if (!req.has_param(name)) continue;
    auto text = req.get_param_value(name);
    *out = util::parse_time_us(text);
    if (!*out) throw invalid_field(name, std::string(name) + " must be an RFC 3339 time with an offset, got '" + text + "'");
  }
  if (f.from_us && f.to_us && *f.from_us > *f.to_us) throw invalid_field("to", "to must not be before from");
  for (auto [name, out] : {std::pair<const char*, std::string*>{"stream", &f.stream}, {"type", &f.type}, {"actor", &f.actor}}) {
    if (!req.has_param(name)) continue;
    *out = req.get_param_value(name);
    if (out->empty() || out->size() > limits::query_text_bytes)
      throw invalid_field(name, std::string(name) + " must be 1 to " + std::to_string(limits::query_text_bytes) + " characters");
  }
  if (req.has_param("format")) {
    auto f = req.get_param_value("format");
    if (f != "jsonl" && f != "csv") throw invalid_field("format", "format must be jsonl or csv, got '" + f + "'");
    c.csv = f == "csv";
  }
  return c;
}

C::list_priorities list_priorities(const request& req) {
  C::list_priorities q;
  if (req.has_param("limit")) q.limit = static_cast<size_t>(query_int(req, "limit", 0, 1, 10000));
  q.offset = static_cast<size_t>(query_int(req, "offset", 0, 0, INT64_MAX));
  return q;
}

C::minute_stats minute_stats(const request& req) {
  C::minute_stats c;
  if (!req.has_param("since")) return c;
  auto text = req.get_param_value("since");
  if (text.size() > limits::short_text_bytes)
    throw invalid_field("since", "since must be at most " + std::to_string(limits::short_text_bytes) + " characters");
  auto t = util::parse_time_us(text);
  if (!t || *t <= 0) throw invalid_field("since", "since must be an RFC 3339 time with an offset, got '" + text + "'");
  c.since_us = *t;
  return c;
}

C::prune_jobs prune_jobs(const request& req) {
  C::prune_jobs c;
  c.statuses = repeated(
      req, "status",
      [](const std::string& s) {
        auto parsed = core::job_status_from(s);
        return parsed && core::is_terminal(*parsed);
      },
      "only terminal statuses (completed, failed, cancelled) can be pruned");
  if (c.statuses.empty()) c.statuses = {"completed", "failed", "cancelled"};
  // RelayMD's retention in days (at least one); older_than_minutes, baton's, keeps a shorter one
  // (0: everything ended so far), so a campaign's memory can stay bounded by its pace.
  if (req.has_param("older_than_minutes")) {
    if (req.has_param("older_than_days"))
      throw invalid_field("older_than_minutes", "give older_than_days or older_than_minutes, not both");
    c.older_than_seconds = 60 * query_int(req, "older_than_minutes", 0, 0, 100000LL * 1440);
  } else {
    c.older_than_seconds = 86'400 * query_int(req, "older_than_days", 30, 1, 100000);
  }
  return c;
}

C::list_workers list_workers(const request& req) {
  C::list_workers q;
  q.limit = static_cast<size_t>(query_int(req, "limit", 500, 1, 10000));
  q.offset = static_cast<size_t>(query_int(req, "offset", 0, 0, INT64_MAX));
  q.states = repeated(
      req, "state",
      [](const std::string& s) { return s == "idle" || s == "busy" || s == "stale" || s == "provisioning" || s == "gone"; },
      "must be one of idle, busy, stale, provisioning, gone");
  q.worker_image_key = query_text(req, "worker_image_key", limits::image_key_bytes);
  q.cluster = query_text(req, "cluster", limits::id_bytes);
  return q;
}

C::set_clusters_enabled clusters_enabled(const request& req) {
  auto b = object_body(req, false);
  check_known_fields(b, {"enabled", "reason"});  // RelayMD's {"enabled": {..}}, and why
  if (!b.contains("enabled") || !b["enabled"].is_object())
    throw invalid_field("enabled", "enabled must be an object of cluster name -> true/false");
  if (b["enabled"].size() > limits::clusters_enabled_entries)
    throw invalid_field("enabled", "enabled must name at most " + std::to_string(limits::clusters_enabled_entries) + " clusters");
  C::set_clusters_enabled c;
  for (const auto& [name, value] : b["enabled"].items()) {
    if (name.size() > limits::id_bytes)
      throw invalid_field("enabled", "cluster names must be at most " + std::to_string(limits::id_bytes) + " bytes");
    if (!value.is_boolean()) throw invalid_field("enabled." + name, "must be true or false");
    c.enabled[name] = value.get<bool>();
  }
  c.reason = opt_string(b, "reason", limits::cluster_reason_bytes).value_or("");
  return c;
}

C::set_cluster_enabled cluster_enabled(const request& req, bool enable) {
  C::set_cluster_enabled c;
  c.cluster = path_name(req);
  auto b = object_body(req, true);
  check_known_fields(b, {"reason"});
  c.enabled = enable;
  c.reason = opt_string(b, "reason", limits::cluster_reason_bytes).value_or("");
  return c;
}

C::register_worker register_worker(const request& req, const std::string& fresh_id, const std::string& credential_sha256) {
  auto b = object_body(req, false);
  // RelayMD's worker sends platform, gpu_model, gpu_count, vram_gb, worker_image_key and
  // provider_id; baton-worker adds the rest.
  check_known_fields(b, {"platform", "gpu_model", "gpu_count", "vram_gb", "worker_image_key", "provider_id", "slurm_job_id",
                         "driver_version", "allocation_ends_at"});
  C::register_worker c;
  auto platform = core::platform_from(req_string(b, "platform", limits::platform_bytes));
  if (!platform) throw invalid_field("platform", "must be 'hpc' or 'salad'");
  c.kind = *platform;
  c.gpu_model = opt_string(b, "gpu_model", limits::gpu_model_bytes).value_or("");
  c.gpu_count = static_cast<int>(opt_int(b, "gpu_count", 0, 1024).value_or(1));
  c.vram_gb = opt_number(b, "vram_gb", 0, 100000).value_or(0);
  if (auto v = opt_string(b, "driver_version", limits::name_bytes); v && !v->empty())
    c.driver_version = checked_name(*v, "driver_version");
  c.worker_image_key = opt_string(b, "worker_image_key", limits::image_key_bytes);
  // RelayMD sends provider_id; baton-worker may send slurm_job_id as "<cluster>:<id>".
  auto provider = opt_string(b, "provider_id", limits::id_bytes);
  if (!provider) provider = opt_string(b, "slurm_job_id", limits::id_bytes);
  if (provider && !provider->empty()) c.provider_id = checked_id(*provider, "provider_id");
  // When the worker's allocation ends (pilot workers know it); whether it is still ahead is the core's to judge.
  if (auto ends = opt_string(b, "allocation_ends_at", limits::short_text_bytes)) {
    c.allocation_ends_at = util::parse_time_us(*ends);
    if (!c.allocation_ends_at)
      throw invalid_field("allocation_ends_at",
                          "must be an RFC 3339 time with an offset, e.g. 2030-01-01T12:00:00Z, got '" + *ends + "'");
  }
  c.new_id = fresh_id;
  c.credential_sha256 = credential_sha256;
  return c;
}

C::heartbeat heartbeat(const request& req) {
  C::heartbeat c;
  c.worker_id = path_uuid(req);
  auto b = object_body(req, true);
  check_known_fields(b, {"job_id", "progress", "progress_codes"});
  if (auto j = opt_string(b, "job_id", limits::id_bytes)) c.job_id = *j;
  c.progress = opt_number(b, "progress", 0, 1);
  c.progress_codes = opt_worker_json(b, "progress_codes");
  return c;
}

C::request_job request_job(const request& req) {
  if (!req.has_param("worker_id")) throw invalid_field("worker_id", "query parameter worker_id is required");
  return {checked_uuid(req.get_param_value("worker_id"), "worker_id")};
}

void fill(const request& req, C::checkpoint_job& c) { c.report = report_body(req, true); }
void fill(const request& req, C::handoff_complete& c) { c.report = report_body(req, false); }

void fill(const request& req, C::handoff_start& c) {
  auto b = object_body(req, false);
  check_known_fields(b, {"reason", "progress", "progress_codes", "deadline_epoch_seconds", "message"});
  c.reason = req_string(b, "reason", limits::reason_bytes);
  c.progress_codes = opt_worker_json(b, "progress_codes").value_or(json::array());
  c.progress = opt_number(b, "progress", 0, 1);
  c.deadline_epoch_seconds = opt_number(b, "deadline_epoch_seconds", 0, 1e12);
  c.message = opt_string(b, "message", limits::message_bytes);
}

void fill(const request& req, C::fail_job& c) {
  auto b = object_body(req, true);
  check_known_fields(b, {"failure_artifact_path", "reason", "detail"});
  c.failure_artifact_path = opt_string(b, "failure_artifact_path", limits::path_bytes);
  c.reason = opt_string(b, "reason", limits::reason_bytes);
  c.detail = opt_string(b, "detail", limits::detail_bytes);
}

}  // namespace baton::http::build
