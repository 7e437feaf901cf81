#include "core/app/storage_decide.hpp"

#include <algorithm>
#include <set>

#include "core/access/access.hpp"
#include "core/jobs/job.hpp"
#include "core/util/sha256.hpp"

namespace baton::core {
namespace {

namespace C = commands;
namespace R = results;
using nlohmann::json;

uint64_t used_by(const storage_book& b, const std::string& user) {
  auto it = b.used_by_user.find(user);
  return it == b.used_by_user.end() ? 0 : it->second;
}

// The quota's word on `more` bytes for `user`: a refusal and its event, or nothing.
std::optional<std::pair<domain_error, domain_event>> over_quota(const storage_book& b, const storage_rules& rules,
                                                                const std::string& user, uint64_t more) {
  if (rules.user_quota_bytes == 0 || more == 0) return std::nullopt;
  uint64_t used = used_by(b, user);
  if (used + more <= rules.user_quota_bytes) return std::nullopt;
  domain_error e{error_kind::no_space,
                 "storage_quota_exceeded",
                 "user '" + user + "' holds " + std::to_string(used) + " bytes; " + std::to_string(more) +
                     " more would pass the quota storage.user_quota_bytes (" + std::to_string(rules.user_quota_bytes) + ")",
                 {{"quota", "storage.user_quota_bytes"},
                  {"user", user},
                  {"quota_bytes", rules.user_quota_bytes},
                  {"used_bytes", used},
                  {"requested_bytes", more}},
                 ""};
  return std::make_pair(std::move(e), quota_refused_event(user, rules.user_quota_bytes, used, more));
}

domain_error being_removed(const std::string& sha) {
  return {error_kind::conflict,
          "blob_being_removed",
          "blob " + sha + " is being removed by the collector; send it again",
          {{"sha256", sha}, {"retry", true}},
          ""};
}

// The job a worker's file set is for: held by this worker, in its current attempt, in a
// state that still takes files of that kind.
std::optional<domain_error> worker_may_write(const principal& who, const job& j, command_kind k, const std::string& kind,
                                             uint32_t attempt) {
  if (auto e = authorize_job(who, k, j)) return e;
  if (kind != "checkpoint" && kind != "output")
    return domain_error{error_kind::invalid, "validation_error", "kind must be checkpoint or output", {}, "kind"};
  if (attempt != j.attempts)
    return domain_error{error_kind::conflict,
                        "attempt_finished",
                        "attempt " + std::to_string(attempt) + " of job " + j.id + " is over (the current one is " +
                            std::to_string(j.attempts) + ")",
                        {{"job_id", j.id}, {"attempt", j.attempts}},
                        "attempt"};
  bool takes =
      kind == "checkpoint" ? occupies_worker(j.status) : (j.status == job_status::assigned || j.status == job_status::running);
  if (!takes)
    return domain_error{error_kind::conflict,
                        "job_not_accepting_files",
                        "job " + j.id + " is " + to_string(j.status) + " and takes no " + kind + " now",
                        {{"job_id", j.id}, {"current_status", to_string(j.status)}},
                        "kind"};
  return std::nullopt;
}

std::optional<domain_error> check_manifest(const std::vector<stored_file>& files) {
  auto bad = [](const std::string& field, const std::string& msg) {
    return domain_error{error_kind::invalid, "validation_error", field + " " + msg, {}, field};
  };
  if (files.size() > max_files_per_set) return bad("files", "holds more than " + std::to_string(max_files_per_set) + " entries");
  std::set<std::string> paths;
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    const std::string at = "files[" + std::to_string(i) + "]";
    if (auto why = stored_path_problem(f.path); !why.empty()) return bad(at + ".path", why);
    if (!util::is_sha256_hex(f.blob.sha256)) return bad(at + ".sha256", "must be 64 lowercase hex digits");
    if (f.blob.size > max_blob_bytes) return bad(at + ".size", "is larger than 5 TiB");
    if (!paths.insert(f.path).second) return bad(at + ".path", "names a file twice");
  }
  return std::nullopt;
}

// The blobs of `files` the user does not hold yet, each once, in digest order.
std::vector<blob_ref> missing_blobs(const storage_book& b, const std::string& user, const std::vector<stored_file>& files) {
  std::map<std::string, uint64_t> out;
  for (const auto& f : files)
    if (!holds_blob(b, user, f.blob.sha256) || !is_stored(b, f.blob)) out.emplace(f.blob.sha256, f.blob.size);
  std::vector<blob_ref> v;
  for (auto& [sha, size] : out) v.push_back({sha, size});
  return v;
}

// The checkpoints a new one releases: the oldest beyond the last `keep`, the new one counted.
std::vector<std::string> released_checkpoints(const storage_book& b, const std::string& job_id, size_t keep) {
  std::vector<std::string> out;
  const job_storage* js = job_files_of(b, job_id);
  size_t have = js ? js->checkpoints.size() : 0;
  for (size_t i = 0; js && have + 1 > keep && i < have + 1 - keep; ++i) out.push_back(js->checkpoints[i].id);
  return out;
}

bool job_has_set(const storage_book& b, const std::string& job_id, const std::string& set_id) {
  const job_storage* js = job_files_of(b, job_id);
  if (!js) return false;
  if (js->outputs && js->outputs->id == set_id) return true;
  return std::any_of(js->checkpoints.begin(), js->checkpoints.end(), [&](const file_set& s) { return s.id == set_id; });
}

outcome files_commit(const world& w, const scheduler_settings& s, const principal& who, const C::files_commit& c, time_us now) {
  const job* j = w.find_job(c.job_id);
  if (!j) return refused(not_found("Job", c.job_id), now);
  // A commit whose reply was lost, sent again: the set is recorded already.
  if (job_has_set(w.storage, j->id, c.set_id)) return answered(R::stored{{}, c.set_id}, now);
  if (auto e = worker_may_write(who, *j, command_kind::files_commit, c.kind, c.attempt)) return refused(*e, now);
  if (auto e = check_manifest(c.files)) return refused(*e, now);
  const std::string& user = j->user;
  std::map<std::string, uint64_t> verified;
  for (const auto& v : c.verified) verified.emplace(v.sha256, v.size);
  std::vector<domain_event> events;
  std::set<std::string> new_blobs;
  for (const auto& f : c.files) {
    const auto& r = f.blob;
    auto st = w.storage.blobs.find(r.sha256);
    if (st != w.storage.blobs.end() && st->second.removing) return refused(being_removed(r.sha256), now);
    bool held = holds_blob(w.storage, user, r.sha256) && is_stored(w.storage, r);
    auto v = verified.find(r.sha256);
    bool arrived = v != verified.end() && v->second == r.size;
    if (!held && !arrived)
      return refused({error_kind::conflict,
                      "upload_incomplete",
                      "file " + f.path + " (" + r.sha256 + ") is not stored yet",
                      {{"path", f.path}, {"sha256", r.sha256}},
                      "files"},
                     now);
    if (!held && !is_stored(w.storage, r) && new_blobs.insert(r.sha256).second)
      events.push_back(blob_stored_event(r, user, c.kind, j->id));
  }
  // The quota, once more: other uploads may have filled it since the set began.
  uint64_t more = 0;
  std::set<std::string> counted;
  for (const auto& f : c.files)
    if (!w.storage.holds.count({user, f.blob.sha256}) && counted.insert(f.blob.sha256).second) more += f.blob.size;
  if (auto q = over_quota(w.storage, s.storage, user, more))
    return answered(R::storage_plan{user, {}, q->first}, now, {q->second});
  file_set set{c.set_id, c.kind, c.attempt, 0, c.files};
  std::vector<std::string> released;
  if (c.kind == "checkpoint")
    released = released_checkpoints(w.storage, j->id, std::max<uint32_t>(1, s.storage.keep_checkpoints));
  events.push_back(
      {storage_stream, ev::files_stored{j->id, s.storage.keep_checkpoints, std::move(released), file_set_row_of(set), user}});
  if (c.kind == "checkpoint") {
    checkpoint_report r = c.report;
    r.manifest_path = set_uri(c.set_id);
    auto d = decide_checkpoint(*j, r, now);
    if (d.error) return refused(*d.error, now);
    for (auto& e : d.events) events.push_back(std::move(e));
  }
  return answered(R::stored{{}, c.set_id}, now, std::move(events));
}

}  // namespace

outcome decide_storage(const world& w, const scheduler_settings& s, const envelope& env, time_us now) {
  const principal& who = env.caller;
  const command& cmd = env.cmd;
  const storage_book& b = w.storage;
  // A file set's body that did not read: refused once the caller is known to hold the job.
  if (env.invalid && (std::holds_alternative<C::files_begin>(cmd) || std::holds_alternative<C::files_commit>(cmd))) {
    const std::string& id = std::holds_alternative<C::files_begin>(cmd) ? std::get<C::files_begin>(cmd).job_id
                                                                        : std::get<C::files_commit>(cmd).job_id;
    const job* j = w.find_job(id);
    if (!j) return refused(not_found("Job", id), now);
    if (auto e = authorize_job(who, kind_of(cmd), *j)) return refused(*e, now);
    return refused(invalid_body(*env.invalid), now);
  }
  if (auto* c = std::get_if<C::blob_upload>(&cmd)) {
    const std::string user = caller_user(who.name);
    if (holds_blob(b, user, c->blob.sha256) && is_stored(b, c->blob)) return answered(R::storage_plan{user, {}, {}}, now);
    if (auto q = over_quota(b, s.storage, user, c->blob.size))
      return answered(R::storage_plan{user, {}, q->first}, now, {q->second});
    return answered(R::storage_plan{user, {c->blob}, {}}, now);
  }
  if (auto* c = std::get_if<C::blob_uploaded>(&cmd)) {
    const std::string user = caller_user(who.name);
    auto st = b.blobs.find(c->blob.sha256);
    if (st != b.blobs.end() && st->second.removing) return refused(being_removed(c->blob.sha256), now);
    std::vector<domain_event> events;
    if (!holds_blob(b, user, c->blob.sha256)) {
      if (auto q = over_quota(b, s.storage, user, c->blob.size))
        return answered(R::storage_plan{user, {}, q->first}, now, {q->second});
      if (!is_stored(b, c->blob)) events.push_back(blob_stored_event(c->blob, user, "bundle", ""));
      events.push_back(upload_held_event(user, c->blob));
    }
    return answered(R::stored{c->blob, ""}, now, std::move(events));
  }
  if (auto* c = std::get_if<C::files_begin>(&cmd)) {
    const job* j = w.find_job(c->job_id);
    if (!j) return refused(not_found("Job", c->job_id), now);
    if (auto e = worker_may_write(who, *j, command_kind::files_begin, c->kind, c->attempt)) return refused(*e, now);
    if (auto e = check_manifest(c->files)) return refused(*e, now);
    auto missing = missing_blobs(b, j->user, c->files);
    uint64_t more = 0;
    for (const auto& r : missing)
      if (!b.holds.count({j->user, r.sha256})) more += r.size;
    if (auto q = over_quota(b, s.storage, j->user, more))
      return answered(R::storage_plan{j->user, {}, q->first}, now, {q->second});
    return answered(R::storage_plan{j->user, std::move(missing), {}}, now);
  }
  if (auto* c = std::get_if<C::files_commit>(&cmd)) return files_commit(w, s, who, *c, now);
  if (auto* c = std::get_if<C::job_files>(&cmd)) {
    const job* j = w.find_job(c->job_id);
    // A worker reads the job it holds; an operator their own (others' jobs do not exist for them).
    if (!j || (who.k == principal::kind::operator_ && !may_see(who, *j))) return refused(not_found("Job", c->job_id), now);
    if (who.k == principal::kind::worker)
      if (auto e = authorize_job(who, command_kind::job_files, *j)) return refused(*e, now);
    R::job_files out{j->id, {}, {}, {}};
    if (const job_storage* js = job_files_of(b, j->id)) {
      out.bundle = js->bundle;
      if (who.k == principal::kind::worker) {
        if (!js->checkpoints.empty()) out.checkpoints.push_back(js->checkpoints.back());
      } else {
        out.checkpoints = js->checkpoints;
        out.outputs = js->outputs;
      }
    }
    return answered(std::move(out), now);
  }
  if (auto* c = std::get_if<C::storage_collect>(&cmd)) {
    std::vector<domain_event> events;
    // Bundles uploaded and never used by a job, past their time: released first, so their
    // blobs are collected on a later pass.
    for (const auto& [key, at] : b.unclaimed)
      if (now - at >= s.storage.unclaimed_upload_seconds * 1'000'000)
        events.push_back({storage_stream, ev::upload_released{key.second, key.first}});
    R::blobs_to_remove out;
    std::vector<std::string> marked;
    for (const auto& sha : b.unreferenced) {
      if (out.items.size() >= c->max) break;
      out.items.push_back({sha, b.blobs.at(sha).size});
      marked.push_back(sha);
    }
    // Removals a restart interrupted are tried again.
    for (const auto& [sha, st] : b.blobs)
      if (st.removing && out.items.size() < c->max) out.items.push_back({sha, st.size});
    if (!marked.empty()) events.push_back({storage_stream, ev::blob_removing{std::move(marked)}});
    return answered(std::move(out), now, std::move(events));
  }
  if (auto* c = std::get_if<C::storage_removed>(&cmd)) {
    std::vector<std::string> gone;
    for (const auto& sha : c->sha256s) {
      auto it = b.blobs.find(sha);
      if (it != b.blobs.end() && it->second.removing && it->second.holds == 0) gone.push_back(sha);
    }
    if (gone.empty()) return answered(std::monostate{}, now);
    return answered(std::monostate{}, now, {{storage_stream, ev::blob_removed{std::move(gone)}}});
  }
  const auto& c = std::get<C::blob_corrupt>(cmd);
  return answered(std::monostate{}, now, {{storage_stream, ev::blob_corrupt{c.found, c.sha256}}});
}

bool is_storage_decision(size_t kind) {
  return kind == ev::index_of_v<ev::files_stored> || kind == ev::index_of_v<ev::blob_removing> ||
         kind == ev::index_of_v<ev::blob_removed>;
}

std::optional<std::string> rederive_storage(const world& w, const ev::payload& recorded) {
  const storage_book& b = w.storage;
  if (const auto* p = std::get_if<ev::files_stored>(&recorded)) {
    std::vector<std::string> want;
    // batond writes keep 1 or more (the config's range); none (0, a hand-made log) reads as the
    // default, as the JSON reader before typed events did.
    if (p->set.kind == "checkpoint")
      want = released_checkpoints(b, p->job_id, p->keep == 0 ? storage_rules{}.keep_checkpoints : p->keep);
    if (want != p->released)
      return "checkpoints released re-derived as " + json(want).dump() + ", logged " + json(p->released).dump();
    return std::nullopt;
  }
  const bool removed = std::holds_alternative<ev::blob_removed>(recorded);
  const auto& sha256s = removed ? std::get<ev::blob_removed>(recorded).sha256s : std::get<ev::blob_removing>(recorded).sha256s;
  for (const auto& s : sha256s) {
    auto it = b.blobs.find(s);
    if (it == b.blobs.end()) return "blob " + s + " was not stored";
    if (it->second.holds) return "blob " + s + " was still held " + std::to_string(it->second.holds) + " times";
    if (removed && !it->second.removing) return "blob " + s + " was removed unmarked";
  }
  return std::nullopt;
}

bundle_binding bind_bundle(const world& w, const principal& caller, const std::string& job_id, const std::string& job_user,
                           const std::optional<blob_ref>& bundle) {
  bundle_binding out;
  if (!bundle) return out;
  const std::string uploader = caller_user(caller.name);
  bool mine = holds_blob(w.storage, uploader, bundle->sha256) || holds_blob(w.storage, job_user, bundle->sha256);
  if (!is_stored(w.storage, *bundle) || (!mine && !sees_every_job(caller))) {
    // (Another user's blob is answered like a missing one: its existence is theirs to know.)
    out.error = domain_error{error_kind::invalid,
                             "unknown_bundle",
                             "no stored bundle " + bundle->sha256 + " of " + std::to_string(bundle->size) +
                                 " bytes is yours: upload it first (POST /blobs/uploads)",
                             {{"sha256", bundle->sha256}},
                             "input_bundle"};
    return out;
  }
  auto e = job_bound_event(job_id, job_user, bundle, {});
  if (w.storage.unclaimed.count({uploader, bundle->sha256}))
    std::get<ev::job_bound>(e.payload).claimed = ev::upload_claim{bundle->sha256, uploader};
  out.bound = std::move(e);
  return out;
}

std::optional<domain_event> bind_clone(const world& w, const job& original, const std::string& clone_id) {
  const job_storage* js = job_files_of(w.storage, original.id);
  if (!js) return std::nullopt;
  std::vector<file_set> latest;
  if (!js->checkpoints.empty()) latest.push_back(js->checkpoints.back());
  if (!js->bundle && latest.empty()) return std::nullopt;
  return job_bound_event(clone_id, js->user, js->bundle, latest);
}

std::optional<domain_event> release_pruned(const world& w, const std::string& job_id) {
  if (!job_files_of(w.storage, job_id)) return std::nullopt;
  return domain_event{storage_stream, ev::storage_job_released{job_id}};
}

}  // namespace baton::core
