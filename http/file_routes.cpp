#include "http/file_routes.hpp"

#include "core/util/sha256.hpp"
#include "core/util/time.hpp"
#include "http/caller.hpp"
#include "http/json_reply.hpp"
#include "http/reply_shapes.hpp"
#include "http/request_commands.hpp"
#include "http/request_parsing.hpp"
#include "http/storage/backend.hpp"

namespace baton::http {
namespace {

using core::command_kind;
using nlohmann::json;
namespace C = core::commands;
namespace R = core::results;

constexpr core::time_us second = 1'000'000;

json transfer_json(const storage::transfer& t) {
  json headers = json::object();
  for (const auto& [k, v] : t.headers) headers[k] = v;
  json out = {{"url", t.url}, {"method", t.method}, {"headers", std::move(headers)}, {"offset", t.offset}, {"size", t.size}};
  if (t.part_number) out["part_number"] = t.part_number;
  if (t.expires_at_us) out["expires_at"] = util::format_time_us(t.expires_at_us);
  return out;
}

// An upload the backend grants, as the answer shows it; empty when res holds the 503.
std::optional<json> granted_upload(const api_context& ctx, const std::string& holder, const std::string& id,
                                   const core::blob_ref& b, core::time_us now, response& res) {
  storage::upload_grant g;
  try {
    g = ctx.storage->grant_upload(holder, id, b.sha256, b.size, now, ctx.transfer_ttl_seconds);
  } catch (const std::exception& e) {  // (S3: the store refused to start a multipart upload)
    refuse(res, {core::error_kind::unavailable, "storage_unavailable", std::string("the store: ") + e.what(), {}, ""});
    return std::nullopt;
  }
  json parts = json::array();
  for (const auto& p : g.parts) parts.push_back(transfer_json(p));
  return json{
      {"upload_id", g.upload_id}, {"sha256", b.sha256}, {"size", b.size}, {"offset", g.have}, {"parts", std::move(parts)}};
}

// A stored blob with a download of it granted to holder.
json download_json(const api_context& ctx, const std::string& holder, const core::blob_ref& b, core::time_us now) {
  return {{"sha256", b.sha256},
          {"size", b.size},
          {"download", transfer_json(ctx.storage->grant_download(holder, b.sha256, b.size, now, ctx.transfer_ttl_seconds))}};
}

bool storage_off(const api_context& ctx, response& res) {
  if (ctx.storage && ctx.transfers) return false;
  refuse(res, {core::error_kind::unavailable, "storage_unavailable", "no storage backend is configured", {}, ""});
  return true;
}

// The scheduler's reply to a storage command; empty when res holds the answer: its error, the
// 503, or the 507 naming the quota that refused the plan (its event is recorded already).
std::optional<core::reply> ask_plan(const api_context& ctx, core::envelope e, response& res) {
  auto r = ask(ctx, std::move(e), res);
  if (!r) return r;
  if (r->error) {
    to_response(*r, res);
    return std::nullopt;
  }
  if (auto* plan = std::get_if<R::storage_plan>(&r->value); plan && plan->refused) {
    refuse(res, *plan->refused);
    return std::nullopt;
  }
  return r;
}

core::time_us now_of(const api_context& ctx) {
  return ctx.clock
             ? ctx.clock()
             : std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What finish_upload said, as the answer to the caller when it is not `stored`.
void refuse_finish(const storage::finish_result& f, const std::string& what, response& res) {
  using S = storage::finish_status;
  switch (f.status) {
    case S::stored:
      return;
    case S::incomplete:
      return refuse(res, {core::error_kind::conflict, "upload_incomplete", what + " is not complete: " + f.detail, {}, ""});
    case S::digest_mismatch:
      return refuse(res, {core::error_kind::invalid,
                          "digest_mismatch",
                          what + ": the bytes that arrived do not match the digest (" + f.detail + "); send it again",
                          {},
                          ""});
    case S::no_space:
      return refuse(res,
                    {core::error_kind::no_space, "storage_full", what + ": the store has no room (" + f.detail + ")", {}, ""});
    case S::unavailable:
      break;
  }
  refuse(res,
         {core::error_kind::unavailable, "storage_unavailable", what + ": the store did not answer (" + f.detail + ")", {}, ""});
}

std::vector<storage::part_etag> parts_of(const json& list, const std::string& field) {
  std::vector<storage::part_etag> out;
  if (!list.is_array()) throw invalid_field(field, field + " must be a list of {part_number, etag}");
  if (list.size() > 10000) throw invalid_field(field, field + " holds more than 10000 parts");
  for (size_t i = 0; i < list.size(); ++i) {
    const auto at = field + "[" + std::to_string(i) + "]";
    if (!list[i].is_object()) throw invalid_field(field, at + " must be an object");
    check_known_fields(list[i], {"part_number", "etag"}, at + ".");
    auto n = opt_int(list[i], "part_number", 1, 10000);
    if (!n) throw invalid_field(field, at + ".part_number is required");
    out.push_back({static_cast<int>(*n), req_string(list[i], "etag", 256)});
  }
  return out;
}

std::vector<core::stored_file> manifest_of(const json& b) {
  auto list = opt_array(b, "files", core::max_files_per_set);
  if (!list) throw invalid_field("files", "files is required: [{path, sha256, size}]");
  std::vector<core::stored_file> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const auto at = "files[" + std::to_string(i) + "]";
    const auto& f = (*list)[i];
    if (!f.is_object()) throw invalid_field(at, at + " must be an object {path, sha256, size}");
    check_known_fields(f, {"path", "sha256", "size"}, at + ".");
    auto path = req_string(f, "path", core::max_stored_path_bytes);
    if (auto why = core::stored_path_problem(path); !why.empty()) throw invalid_field(at + ".path", at + ".path " + why);
    out.push_back({path, build::blob_of(f, at)});
  }
  return out;
}

void post_bundle_upload(const api_context& ctx, const request& req, response& res) {
  auto e = admit(ctx, req, res, command_kind::blob_upload);
  if (!e || storage_off(ctx, res)) return;
  core::blob_ref blob;
  try {
    auto b = object_body(req, false);
    check_known_fields(b, {"purpose", "sha256", "size"});
    auto purpose = opt_string(b, "purpose", 32).value_or("bundle");
    if (purpose != "bundle") throw invalid_field("purpose", "operators upload bundles only (purpose: bundle)");
    blob = build::blob_of(b, "body");
  } catch (const invalid_field& bad) {
    return reply_json(res, bad.status, validation_body(bad));
  }
  const std::string holder = e->caller.actor();
  e->cmd = C::blob_upload{blob};
  auto r = ask_plan(ctx, std::move(*e), res);
  if (!r) return;
  const auto& plan = std::get<R::storage_plan>(r->value);
  if (plan.to_upload.empty()) return reply_json(res, 200, {{"status", "stored"}, {"sha256", blob.sha256}, {"size", blob.size}});
  const auto now = now_of(ctx);
  const std::string id = upload_id_of(plan.user, blob);
  auto out = granted_upload(ctx, holder, id, blob, now, res);
  if (!out) return;
  if (!ctx.transfers->put_upload(id, {holder, blob, now + ctx.transfer_ttl_seconds * second}, now))
    return refuse(res,
                  {core::error_kind::over_limit, "too_many_uploads", "too many uploads are open; finish some first", {}, ""});
  (*out)["status"] = "upload";
  reply_json(res, 200, *out);
}

void complete_bundle_upload(const api_context& ctx, const request& req, response& res) {
  auto e = admit(ctx, req, res, command_kind::blob_uploaded);
  if (!e || storage_off(ctx, res)) return;
  const std::string id = req.path_params.at(0);
  std::vector<storage::part_etag> parts;
  try {
    auto b = object_body(req, true);
    check_known_fields(b, {"parts"});
    if (b.contains("parts")) parts = parts_of(b["parts"], "parts");
  } catch (const invalid_field& bad) {
    return reply_json(res, bad.status, validation_body(bad));
  }
  auto up = ctx.transfers->find_upload(id, now_of(ctx));
  if (!up || up->holder != e->caller.actor())
    return refuse(res, {core::error_kind::not_found,
                        "upload_unknown",
                        "no open upload " + id + " of yours (expired or batond restarted): ask again with POST /blobs/uploads",
                        {{"upload_id", id}},
                        ""});
  if (!up->finished) {
    auto f = ctx.storage->finish_upload(id, up->blob.sha256, up->blob.size, parts);
    if (f.status != storage::finish_status::stored) return refuse_finish(f, "upload " + id, res);
    ctx.transfers->mark_upload_finished(id);
  }
  e->cmd = C::blob_uploaded{up->blob};
  if (!ask_plan(ctx, std::move(*e), res)) return;
  ctx.transfers->drop_upload(id);
  reply_json(res, 200, {{"status", "stored"}, {"sha256", up->blob.sha256}, {"size", up->blob.size}});
}

void post_file_set(const api_context& ctx, const request& req, response& res) {
  auto e = admit(ctx, req, res, command_kind::files_begin);
  if (!e || storage_off(ctx, res)) return;
  C::files_begin c;
  core::checkpoint_report report;
  try {
    c.job_id = build::path_uuid(req);
  } catch (const invalid_field& bad) {
    return reply_json(res, bad.status, validation_body(bad));
  }
  try {
    auto b = object_body(req, false);
    auto known = build::checkpoint_report_fields;  // and the report a checkpoint's set carries
    known.insert(known.end(), {"kind", "attempt", "files"});
    check_known_fields(b, known);
    c.kind = req_string(b, "kind", 16);
    auto attempt = opt_int(b, "attempt", 1, 1 << 30);
    if (!attempt) throw invalid_field("attempt", "attempt is required: the attempt the files belong to");
    c.attempt = static_cast<uint32_t>(*attempt);
    c.files = manifest_of(b);
    report = build::checkpoint_report(b, false);
    report.manifest_path.reset();
  } catch (const invalid_field& bad) {
    // Whether this caller holds the job is the scheduler's to say, and comes first.
    e->invalid = core::invalid_field_report{bad.field, bad.what(), validation_body(bad), bad.status == 413};
  }
  const std::string holder = e->caller.actor();
  e->cmd = c;
  auto r = ask_plan(ctx, std::move(*e), res);
  if (!r) return;
  const auto& plan = std::get<R::storage_plan>(r->value);
  const auto now = now_of(ctx);
  transfer_book::file_set set{holder, c.job_id, c.kind, c.attempt, c.files, {}, report, now + ctx.transfer_ttl_seconds * second,
                              false,  {}};
  json uploads = json::array();
  for (const auto& blob : plan.to_upload) {
    const std::string id = upload_id_of(plan.user, blob);
    auto u = granted_upload(ctx, holder, id, blob, now, res);
    if (!u) return;
    json paths = json::array();
    for (const auto& f : c.files)
      if (f.blob == blob) paths.push_back(f.path);
    (*u)["paths"] = std::move(paths);
    uploads.push_back(std::move(*u));
    set.uploads.emplace(id, blob);
  }
  const std::string set_id = new_uuid();
  if (!ctx.transfers->put_set(set_id, std::move(set), now))
    return refuse(res, {core::error_kind::over_limit,
                        "too_many_file_sets",
                        "this caller has too many file sets open; commit or drop some first",
                        {},
                        ""});
  reply_json(res, 200, {{"set_id", set_id}, {"kind", c.kind}, {"uploads", std::move(uploads)}});
}

void commit_file_set(const api_context& ctx, const request& req, response& res) {
  auto e = admit(ctx, req, res, command_kind::files_commit);
  if (!e || storage_off(ctx, res)) return;
  std::string job_id, set_id;
  std::map<std::string, std::vector<storage::part_etag>> parts;
  try {
    job_id = build::path_uuid(req);
    set_id = checked_uuid(req.path_params.at(1), "set_id");
    auto b = object_body(req, true);
    check_known_fields(b, {"uploads"});
    if (auto list = opt_array(b, "uploads", core::max_files_per_set))
      for (size_t i = 0; i < list->size(); ++i) {
        const auto at = "uploads[" + std::to_string(i) + "]";
        if (!(*list)[i].is_object()) throw invalid_field(at, at + " must be an object {upload_id, parts}");
        check_known_fields((*list)[i], {"upload_id", "parts"}, at + ".");
        auto id = req_string((*list)[i], "upload_id", 64);
        if ((*list)[i].contains("parts")) parts[id] = parts_of((*list)[i]["parts"], at + ".parts");
      }
  } catch (const invalid_field& bad) {
    return reply_json(res, bad.status, validation_body(bad));
  }
  auto set = ctx.transfers->find_set(set_id, now_of(ctx));
  if (!set || set->holder != e->caller.actor() || set->job_id != job_id)
    return refuse(res, {core::error_kind::not_found,
                        "file_set_unknown",
                        "no open file set " + set_id + " of yours for job " + job_id +
                            " (expired or batond restarted): post the manifest again",
                        {{"set_id", set_id}},
                        ""});
  C::files_commit c{job_id, set_id, set->kind, set->attempt, set->files, {}, set->report};
  if (!set->committed) {
    for (const auto& [id, blob] : set->uploads) {
      if (set->finished.count(id)) {
        c.verified.push_back(blob);
        continue;
      }
      auto it = parts.find(id);
      auto f = ctx.storage->finish_upload(id, blob.sha256, blob.size,
                                          it == parts.end() ? std::vector<storage::part_etag>{} : it->second);
      if (f.status == storage::finish_status::stored) {
        ctx.transfers->mark_finished(set_id, id);
        c.verified.push_back(blob);
        continue;
      }
      std::string path;
      for (const auto& file : set->files)
        if (file.blob == blob) path = file.path;
      refuse_finish(f, "file " + path, res);
      auto body = json::parse(res.body);
      body["path"] = path;
      body["sha256"] = blob.sha256;
      body["upload_id"] = id;
      return reply_json(res, res.status, body);
    }
  }
  e->cmd = std::move(c);
  if (!ask_plan(ctx, std::move(*e), res)) return;
  ctx.transfers->mark_committed(set_id);
  reply_json(res, 200, {{"status", "stored"}, {"set_id", set_id}});
}

json set_json(const api_context& ctx, const std::string& holder, const core::file_set& s, core::time_us now) {
  json files = json::array();
  for (const auto& f : s.files) {
    json one = download_json(ctx, holder, f.blob, now);
    one["path"] = f.path;
    files.push_back(std::move(one));
  }
  return {{"set_id", s.id},
          {"kind", s.kind},
          {"attempt", s.attempt},
          {"stored_at", util::format_time_us(s.stored_at)},
          {"files", std::move(files)}};
}

void get_job_files(const api_context& ctx, const request& req, response& res) {
  auto e = admit(ctx, req, res, command_kind::job_files);
  if (!e || storage_off(ctx, res)) return;
  try {
    e->cmd = C::job_files{build::path_uuid(req)};
  } catch (const invalid_field& bad) {
    return reply_json(res, bad.status, validation_body(bad));
  }
  const std::string holder = e->caller.actor();
  auto r = ask(ctx, std::move(*e), res);
  if (!r) return;
  if (r->error) return to_response(*r, res);
  const auto& v = std::get<R::job_files>(r->value);
  const auto now = now_of(ctx);
  json out = {{"job_id", v.job_id}, {"input_bundle", nullptr}, {"checkpoints", json::array()}, {"outputs", nullptr}};
  if (v.bundle) out["input_bundle"] = download_json(ctx, holder, *v.bundle, now);
  for (const auto& s : v.checkpoints) out["checkpoints"].push_back(set_json(ctx, holder, s, now));
  if (v.outputs) out["outputs"] = set_json(ctx, holder, *v.outputs, now);
  reply_json(res, 200, out);
}

}  // namespace

std::string upload_id_of(const std::string& user, const core::blob_ref& b) {
  return util::sha256_hex("baton-upload\n" + user + "\n" + b.sha256 + "\n" + std::to_string(b.size)).substr(0, 40);
}

void transfer_book::expire(core::time_us now) {
  for (auto it = uploads_.begin(); it != uploads_.end();) it = it->second.expires < now ? uploads_.erase(it) : std::next(it);
  for (auto it = sets_.begin(); it != sets_.end();) it = it->second.expires < now ? sets_.erase(it) : std::next(it);
}

bool transfer_book::put_upload(const std::string& id, upload u, core::time_us now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (uploads_.size() >= max_entries && !uploads_.count(id)) expire(now);
  if (uploads_.size() >= max_entries && !uploads_.count(id)) return false;
  uploads_[id] = std::move(u);
  return true;
}

std::optional<transfer_book::upload> transfer_book::find_upload(const std::string& id, core::time_us now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = uploads_.find(id);
  if (it == uploads_.end() || it->second.expires < now) return std::nullopt;
  return it->second;
}

void transfer_book::drop_upload(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  uploads_.erase(id);
}

bool transfer_book::put_set(const std::string& id, file_set s, core::time_us now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sets_.size() >= max_entries) expire(now);
  size_t mine = 0;
  for (const auto& [_, other] : sets_) mine += other.holder == s.holder && !other.committed;
  if (sets_.size() >= max_entries || mine >= max_sets_per_holder) {
    expire(now);
    mine = 0;
    for (const auto& [_, other] : sets_) mine += other.holder == s.holder && !other.committed;
    if (sets_.size() >= max_entries || mine >= max_sets_per_holder) return false;
  }
  sets_[id] = std::move(s);
  return true;
}

std::optional<transfer_book::file_set> transfer_book::find_set(const std::string& id, core::time_us now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end() || it->second.expires < now) return std::nullopt;
  return it->second;
}

void transfer_book::mark_committed(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = sets_.find(id); it != sets_.end()) it->second.committed = true;
}

void transfer_book::mark_finished(const std::string& set_id, const std::string& upload_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = sets_.find(set_id); it != sets_.end()) it->second.finished.insert(upload_id);
}

void transfer_book::mark_upload_finished(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = uploads_.find(id); it != uploads_.end()) it->second.finished = true;
}

void add_file_routes(router& s, api_context ctx) {
  s.Post("/blobs/uploads", [ctx](const request& req, response& res) { post_bundle_upload(ctx, req, res); });
  s.Post(R"(/blobs/uploads/([0-9a-f]{1,64})/complete)",
         [ctx](const request& req, response& res) { complete_bundle_upload(ctx, req, res); });
  s.Post(R"(/jobs/([^/]+)/files)", [ctx](const request& req, response& res) { post_file_set(ctx, req, res); });
  s.Post(R"(/jobs/([^/]+)/files/([^/]+)/commit)", [ctx](const request& req, response& res) { commit_file_set(ctx, req, res); });
  s.Get(R"(/jobs/([^/]+)/files)", [ctx](const request& req, response& res) { get_job_files(ctx, req, res); });
}

}  // namespace baton::http
