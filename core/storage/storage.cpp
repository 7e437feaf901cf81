#include "core/storage/storage.hpp"

#include <algorithm>

#include "core/util/sha256.hpp"

namespace baton::core {
namespace {

using nlohmann::json;

void hold(storage_book& b, const std::string& user, const std::string& sha) {
  auto it = b.blobs.find(sha);
  if (it == b.blobs.end()) return;  // decisions never refer to a blob not stored; an old log might
  if (b.holds[{user, sha}]++ == 0) b.used_by_user[user] += it->second.size;
  if (it->second.holds++ == 0) b.unreferenced.erase(sha);
}

void release(storage_book& b, const std::string& user, const std::string& sha) {
  auto h = b.holds.find({user, sha});
  auto it = b.blobs.find(sha);
  if (h == b.holds.end() || it == b.blobs.end()) return;
  if (--h->second == 0) {
    b.holds.erase(h);
    auto& used = b.used_by_user[user];
    used -= std::min(used, it->second.size);
    if (used == 0) b.used_by_user.erase(user);
  }
  if (it->second.holds > 0 && --it->second.holds == 0 && !it->second.removing) b.unreferenced.insert(sha);
}

void hold_set(storage_book& b, const std::string& user, const file_set& s) {
  for (const auto& f : s.files) hold(b, user, f.blob.sha256);
}
void release_set(storage_book& b, const std::string& user, const file_set& s) {
  for (const auto& f : s.files) release(b, user, f.blob.sha256);
}

json to_json(const blob_ref& r) { return {{"sha256", r.sha256}, {"size", r.size}}; }
blob_ref blob_from_json(const json& j) { return {j.at("sha256").get<std::string>(), j.at("size").get<uint64_t>()}; }

void release_job(storage_book& b, const std::string& job_id) {
  auto it = b.jobs.find(job_id);
  if (it == b.jobs.end()) return;
  auto& js = it->second;
  if (js.bundle) release(b, js.user, js.bundle->sha256);
  for (const auto& s : js.checkpoints) release_set(b, js.user, s);
  if (js.outputs) release_set(b, js.user, *js.outputs);
  b.jobs.erase(it);
}

}  // namespace

std::string blob_uri(const blob_ref& b) { return "blob:" + b.sha256 + ":" + std::to_string(b.size); }

std::optional<blob_ref> parse_blob_uri(const std::string& s) {
  if (s.rfind("blob:", 0) != 0 || s.size() < 5 + 64 + 2 || s[5 + 64] != ':') return std::nullopt;
  blob_ref r{s.substr(5, 64), 0};
  if (!util::is_sha256_hex(r.sha256)) return std::nullopt;
  const std::string digits = s.substr(5 + 64 + 1);
  if (digits.empty() || digits.size() > 19 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  r.size = std::stoull(digits);
  return r;
}

std::string set_uri(const std::string& set_id) { return "blob-set:" + set_id; }

std::optional<std::string> parse_set_uri(const std::string& s) {
  if (s.rfind("blob-set:", 0) != 0 || s.size() == 9) return std::nullopt;
  return s.substr(9);
}

std::string stored_path_problem(const std::string& path) {
  if (path.empty()) return "is empty";
  if (path.size() > max_stored_path_bytes) return "is longer than " + std::to_string(max_stored_path_bytes) + " bytes";
  if (path.front() == '/') return "is absolute";
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) return "holds a control character";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return "has an empty, '.' or '..' component";
    start = end + 1;
  }
  return "";
}

std::string caller_user(const std::string& caller_name) { return caller_name.empty() ? "admin" : caller_name; }

bool holds_blob(const storage_book& b, const std::string& user, const std::string& sha256) {
  auto it = b.blobs.find(sha256);
  return it != b.blobs.end() && !it->second.removing && b.holds.count({user, sha256});
}

bool is_stored(const storage_book& b, const blob_ref& r) {
  auto it = b.blobs.find(r.sha256);
  return it != b.blobs.end() && !it->second.removing && it->second.size == r.size;
}

const job_storage* job_files_of(const storage_book& b, const std::string& job_id) {
  auto it = b.jobs.find(job_id);
  return it == b.jobs.end() ? nullptr : &it->second;
}

file_set file_set_of(const ev::file_set_row& row) {
  file_set s;
  s.id = row.id;
  s.kind = row.kind;
  s.attempt = row.attempt;
  s.stored_at = row.stored_at_us;
  for (const auto& f : row.files) s.files.push_back({f.path, {f.sha256, f.size}});
  return s;
}

void evolve_storage(storage_book& b, const ev::payload& payload, time_us at) {
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, ev::blob_stored>) {
          auto& st = b.blobs[p.sha256];
          if (st.size == 0 && st.holds == 0) b.stored_bytes += p.size;
          st.size = p.size;
          st.removing = false;
          st.stored_at = at;
          if (st.holds == 0) b.unreferenced.insert(p.sha256);
        } else if constexpr (std::is_same_v<T, ev::upload_held>) {
          if (b.unclaimed.emplace(std::make_pair(p.user, p.sha256), at).second) hold(b, p.user, p.sha256);
        } else if constexpr (std::is_same_v<T, ev::upload_released>) {
          if (b.unclaimed.erase({p.user, p.sha256})) release(b, p.user, p.sha256);
        } else if constexpr (std::is_same_v<T, ev::job_bound>) {
          release_job(b, p.job_id);  // (a job is bound once; a repeated event replaces, never doubles)
          auto& js = b.jobs[p.job_id];
          js.user = p.user;
          if (p.bundle) {
            js.bundle = blob_ref{p.bundle->sha256, p.bundle->size};
            hold(b, js.user, js.bundle->sha256);
          }
          if (p.checkpoints)
            for (const auto& s : *p.checkpoints) {
              js.checkpoints.push_back(file_set_of(s));
              hold_set(b, js.user, js.checkpoints.back());
            }
          // The upload that brought the bundle is used now: its own hold goes.
          if (p.claimed && b.unclaimed.erase({p.claimed->user, p.claimed->sha256}))
            release(b, p.claimed->user, p.claimed->sha256);
        } else if constexpr (std::is_same_v<T, ev::files_stored>) {
          auto& js = b.jobs[p.job_id];
          if (js.user.empty()) js.user = p.user;
          file_set s = file_set_of(p.set);
          s.stored_at = at;
          hold_set(b, js.user, s);
          if (s.kind == "output") {
            if (js.outputs) release_set(b, js.user, *js.outputs);
            js.outputs = std::move(s);
          } else {
            js.checkpoints.push_back(std::move(s));
          }
          for (const auto& gid : p.released) {
            auto it = std::find_if(js.checkpoints.begin(), js.checkpoints.end(), [&](const file_set& c) { return c.id == gid; });
            if (it == js.checkpoints.end()) continue;
            release_set(b, js.user, *it);
            js.checkpoints.erase(it);
          }
        } else if constexpr (std::is_same_v<T, ev::storage_job_released>) {
          release_job(b, p.job_id);
        } else if constexpr (std::is_same_v<T, ev::blob_removing>) {
          for (const auto& sha : p.sha256s) {
            auto it = b.blobs.find(sha);
            if (it == b.blobs.end() || it->second.holds) continue;
            it->second.removing = true;
            b.unreferenced.erase(it->first);
          }
        } else if constexpr (std::is_same_v<T, ev::blob_removed>) {
          for (const auto& sha : p.sha256s) {
            auto it = b.blobs.find(sha);
            if (it == b.blobs.end() || it->second.holds) continue;
            b.stored_bytes -= std::min(b.stored_bytes, it->second.size);
            b.unreferenced.erase(it->first);
            b.blobs.erase(it);
          }
        }
        // storage.quota_refused and storage.blob_corrupt change nothing: they are the record.
      },
      payload);
}

domain_event blob_stored_event(const blob_ref& r, const std::string& user, const std::string& purpose,
                               const std::string& job_id) {
  ev::blob_stored p;
  p.sha256 = r.sha256;
  p.size = r.size;
  p.user = user;
  p.purpose = purpose;
  if (!job_id.empty()) p.job_id = job_id;
  return {storage_stream, std::move(p)};
}

domain_event upload_held_event(const std::string& user, const blob_ref& r) {
  return {storage_stream, ev::upload_held{r.sha256, r.size, user}};
}

domain_event job_bound_event(const std::string& job_id, const std::string& user, const std::optional<blob_ref>& bundle,
                             const std::vector<file_set>& checkpoints) {
  ev::job_bound p;
  p.job_id = job_id;
  p.user = user;
  if (bundle) p.bundle = ev::blob{bundle->sha256, bundle->size};
  if (!checkpoints.empty()) {
    p.checkpoints.emplace();
    for (const auto& s : checkpoints) p.checkpoints->push_back(file_set_row_of(s));
  }
  return {storage_stream, std::move(p)};
}

domain_event quota_refused_event(const std::string& user, uint64_t quota, uint64_t used, uint64_t requested) {
  ev::quota_refused p;
  p.user = user;
  p.quota_bytes = quota;
  p.used_bytes = used;
  p.requested_bytes = requested;
  return {storage_stream, std::move(p)};
}

ev::file_set_row file_set_row_of(const file_set& s) {
  ev::file_set_row row;
  row.id = s.id;
  row.kind = s.kind;
  row.attempt = s.attempt;
  row.stored_at_us = s.stored_at;
  for (const auto& f : s.files) row.files.push_back({f.path, f.blob.sha256, f.blob.size});
  return row;
}

json to_json(const file_set& s) {
  json files = json::array();
  for (const auto& f : s.files) files.push_back({{"path", f.path}, {"sha256", f.blob.sha256}, {"size", f.blob.size}});
  json out = {{"id", s.id}, {"kind", s.kind}, {"attempt", s.attempt}, {"files", std::move(files)}};
  if (s.stored_at) out["stored_at_us"] = s.stored_at;
  return out;
}

file_set file_set_from_json(const json& j) {
  file_set s;
  s.id = j.at("id").get<std::string>();
  s.kind = j.value("kind", "checkpoint");
  s.attempt = j.value("attempt", 0u);
  s.stored_at = j.value("stored_at_us", time_us{0});
  for (const auto& f : j.at("files")) s.files.push_back({f.at("path").get<std::string>(), blob_from_json(f)});
  return s;
}

json to_json(const storage_book& b) {
  // What rebuilds the book: the blobs (with their removal mark), the jobs' references and
  // the unclaimed uploads. Holds, use and the unreferenced set follow from those.
  json blobs = json::array();
  for (const auto& [sha, st] : b.blobs) blobs.push_back({sha, st.size, st.removing, st.stored_at});
  json jobs = json::array();
  for (const auto& [id, js] : b.jobs) {
    json sets = json::array();
    for (const auto& s : js.checkpoints) sets.push_back(to_json(s));
    jobs.push_back({{"id", id},
                    {"user", js.user},
                    {"bundle", js.bundle ? to_json(*js.bundle) : json()},
                    {"checkpoints", std::move(sets)},
                    {"outputs", js.outputs ? to_json(*js.outputs) : json()}});
  }
  json unclaimed = json::array();
  for (const auto& [key, at] : b.unclaimed) unclaimed.push_back({key.first, key.second, at});
  return {{"blobs", std::move(blobs)}, {"jobs", std::move(jobs)}, {"unclaimed", std::move(unclaimed)}};
}

storage_book storage_book_from_json(const json& j) {
  storage_book b;
  for (const auto& e : j.at("blobs")) {
    auto& st = b.blobs[e.at(0).get<std::string>()];
    st.size = e.at(1).get<uint64_t>();
    st.removing = e.at(2).get<bool>();
    st.stored_at = e.at(3).get<time_us>();
    b.stored_bytes += st.size;
  }
  for (const auto& e : j.at("jobs")) {
    auto& js = b.jobs[e.at("id").get<std::string>()];
    js.user = e.at("user").get<std::string>();
    if (e.at("bundle").is_object()) {
      js.bundle = blob_from_json(e.at("bundle"));
      hold(b, js.user, js.bundle->sha256);
    }
    for (const auto& s : e.at("checkpoints")) {
      js.checkpoints.push_back(file_set_from_json(s));
      hold_set(b, js.user, js.checkpoints.back());
    }
    if (e.at("outputs").is_object()) {
      js.outputs = file_set_from_json(e.at("outputs"));
      hold_set(b, js.user, *js.outputs);
    }
  }
  for (const auto& e : j.at("unclaimed")) {
    std::pair<std::string, std::string> key{e.at(0).get<std::string>(), e.at(1).get<std::string>()};
    b.unclaimed[key] = e.at(2).get<time_us>();
    hold(b, key.first, key.second);
  }
  for (const auto& [sha, st] : b.blobs)
    if (st.holds == 0 && !st.removing) b.unreferenced.insert(sha);
  return b;
}

}  // namespace baton::core
