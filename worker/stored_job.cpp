// Stored-bundle jobs (docs/storage.md): the poll answer names the bundle by digest, and the
// bundle, the checkpoints and the outputs travel as blobs through batond's data plane, so the
// worker needs no filesystem it shares with the submitter or with the job's other workers.
#include <spdlog/spdlog.h>

#include <filesystem>

#include "core/util/sha256.hpp"
#include "worker/agent.hpp"
#include "worker/bundle.hpp"
#include "worker/bundle_archive.hpp"
#include "worker/checkpoint.hpp"

namespace baton::worker {

namespace fs = std::filesystem;
using nlohmann::json;

xfer::link agent::blob_link(bool interruptible) {
  xfer::link l;
  l.base_url = cfg_.url;
  l.ca_file = cfg_.ca_file;
  l.store_ca_file = cfg_.store_ca_file;
  l.credential = {{"X-Worker-Token", current_session().token}};
  l.attempts = cfg_.retry_attempts;
  l.base_seconds = cfg_.retry_base_seconds;
  l.max_seconds = cfg_.retry_max_seconds;
  if (interruptible) l.sleep = [this](double s) { return interruptible_sleep(s); };
  return l;
}

namespace {

bool same_blob(const json& a, const json& b) {
  return a.is_object() && b.is_object() && a.value("sha256", "") == b.value("sha256", "") && a.contains("size") &&
         b.contains("size") && a["size"] == b["size"];
}

}  // namespace

std::optional<agent::refusal> agent::fetch_stored_bundle(const std::string& job_id, const json& wanted,
                                                         const std::string& workdir, json& listing) {
  auto sha =
      wanted.is_object() && wanted.contains("sha256") && wanted["sha256"].is_string() ? wanted["sha256"].get<std::string>() : "";
  if (sha.size() != 64 || !wanted.contains("size") || !wanted["size"].is_number_unsigned())
    return refusal{"bundle_unavailable", "the assignment's input_bundle is not {sha256, size}: " + wanted.dump()};
  auto l = blob_link(true);
  try {
    listing = xfer::job_files(l, job_id);
  } catch (const xfer::transfer_error& e) {
    return refusal{"bundle_unavailable", e.what()};
  }
  json listed = listing.contains("input_bundle") ? listing["input_bundle"] : json();
  if (!listed.is_object()) return refusal{"bundle_unavailable", "GET /jobs/" + job_id + "/files lists no input_bundle"};
  if (!same_blob(listed, wanted))
    return refusal{"bundle_digest_mismatch", "GET /jobs/" + job_id + "/files lists bundle " + listed.value("sha256", "?") +
                                                 ", the assignment names " + sha};
  const auto archive = workdir + ".bundle.tar.gz";  // beside the working dir, which the archive is unpacked into
  if (std::error_code ec; !fs::create_directories(fs::path(workdir).parent_path(), ec) && ec)
    return refusal{"bundle_unavailable", "cannot create " + fs::path(workdir).parent_path().string() + ": " + ec.message()};
  auto pick = [](const json& fresh) { return fresh.contains("input_bundle") ? fresh["input_bundle"] : json(); };
  // A second try for a digest mismatch: bytes damaged on their way are worth one more download.
  for (int tries = 1;; ++tries) {
    try {
      xfer::download_listed(l, job_id, listed, pick, archive);
      break;
    } catch (const xfer::transfer_error& e) {
      std::error_code ec;
      fs::remove(archive, ec);
      if (e.kind == xfer::failure::mismatch && tries < 2) {
        spdlog::warn("job {}: bundle {}: {}; downloading it again", job_id, sha, e.what());
        continue;
      }
      return refusal{e.kind == xfer::failure::mismatch ? "bundle_digest_mismatch" : "bundle_unavailable",
                     "bundle " + sha + ": " + e.what()};
    }
  }
  spdlog::info("job {}: bundle {} ({} bytes) downloaded and verified", job_id, sha, wanted["size"].get<uint64_t>());
  std::optional<refusal> out;
  try {
    extract_bundle_archive(archive, workdir, {cfg_.bundle_max_bytes, cfg_.bundle_max_members});
  } catch (const invalid_bundle& e) {
    out = refusal{"invalid_bundle", e.what()};
  } catch (const std::exception& e) {
    out = refusal{"bundle_unavailable", e.what()};
  }
  std::error_code ec;
  fs::remove(archive, ec);
  return out;
}

bool agent::restore_stored_checkpoint(const std::string& job_id, const json& listing, checkpoint_store& store,
                                      const std::string& workdir) {
  auto cps = listing.find("checkpoints");
  if (cps == listing.end() || !cps->is_array() || cps->empty()) return false;
  const json latest = cps->back();
  if (!latest.is_object() || !latest.contains("files") || !latest["files"].is_array())
    throw std::runtime_error("GET /jobs/" + job_id + "/files: the latest checkpoint has no 'files' list");
  const std::string set_id = latest.value("set_id", "");
  const int from_attempt = latest.contains("attempt") && latest["attempt"].is_number_integer() ? latest["attempt"].get<int>() : 0;
  // The files are downloaded beside the working dir as a manifest with its objects, then
  // restored like any manifest (hash-checked again, copied in, adopted by this attempt's store).
  const auto resume = workdir + ".resume";
  fs::remove_all(resume);
  fs::create_directories(fs::path(resume) / "objects");
  auto l = blob_link(true);
  json files = json::object();
  for (const auto& f : latest["files"]) {
    const std::string path = f.is_object() && f.contains("path") && f["path"].is_string() ? f["path"].get<std::string>() : "";
    if (!is_safe_relative(path)) throw std::runtime_error("checkpoint " + set_id + ": unsafe file path '" + path + "'");
    const std::string sha = f.value("sha256", "");
    if (!util::is_sha256_hex(sha)) throw std::runtime_error("checkpoint " + set_id + ": file " + path + " has no valid sha256");
    auto object = (fs::path(resume) / "objects" / sha).string();
    if (!fs::exists(object)) {
      auto pick = [&](const json& fresh) -> json {
        if (fresh.contains("checkpoints") && fresh["checkpoints"].is_array())
          for (const auto& cp : fresh["checkpoints"])
            if (cp.is_object() && cp.value("set_id", "") == set_id && cp.contains("files") && cp["files"].is_array())
              for (const auto& g : cp["files"])
                if (g.is_object() && g.value("path", "") == path) return g;
        return nullptr;
      };
      try {
        xfer::download_listed(l, job_id, f, pick, object);
      } catch (const xfer::transfer_error& e) {
        throw std::runtime_error("checkpoint " + set_id + ": file " + path + ": " + e.what());
      }
    }
    files[path] = {{"sha256", sha}, {"size", f["size"]}, {"attempt", from_attempt}, {"object", "objects/" + sha}};
  }
  const auto manifest_path = (fs::path(resume) / ("manifest-attempt-" + std::to_string(from_attempt) + ".json")).string();
  write_atomically(manifest_path, json{{"schema_version", 1},
                                       {"job_id", job_id},
                                       {"attempt", from_attempt},
                                       {"worker_id", ""},
                                       {"updated_at", latest.value("stored_at", "")},
                                       {"files", files}}
                                      .dump(2));
  store.restore(manifest_path, workdir);
  fs::remove_all(resume);
  stored_.set_id = set_id;
  return true;
}

bool agent::store_checkpoint_set(const std::string& job_id, const checkpoint_store& store, const json& report, bool final,
                                 bool& lost) {
  std::vector<xfer::set_file> files;
  for (const auto& [name, e] : store.current().files)
    files.push_back({name, e.sha256, e.size, (fs::path(store.dir()) / e.object).string()});
  auto l = blob_link(!final);
  // Between cycles the next cycle is the retry: a few tries, not minutes of them, so the
  // payload's supervision and the allocation deadline are watched again soon.
  if (!final) l.attempts = std::min(l.attempts, 3);
  try {
    stored_.set_id = xfer::store_file_set(l, job_id, "checkpoint", stored_.attempt, files, report);
    stored_.unsent = false;
    return true;
  } catch (const xfer::transfer_error& e) {
    auto code = e.error_code();
    // Refusals that say the job moved on without this worker (batond's worker_may_write).
    if (code == "job_not_assigned_to_worker" || code == "attempt_finished" || code == "job_not_accepting_files") lost = true;
    spdlog::warn("job {}: checkpoint not stored: {}; its files stay in {}{}", job_id, e.what(), store.dir(),
                 final ? "" : " for the next cycle");
    return false;
  }
}

std::string agent::store_outputs(const std::string& job_id, int attempt, const std::string& workdir, const job_spec& spec) {
  auto names = matching_files(workdir, spec.output_globs);
  if (names.empty()) {
    spdlog::info("job {}: no file matches output_globs; no outputs to store", job_id);
    return "";
  }
  std::vector<xfer::set_file> files;
  uint64_t bytes = 0;
  try {
    for (const auto& n : names) {
      auto local = (fs::path(workdir) / n).string();
      auto [sha, size] = xfer::hash_file(local);  // the payload has ended: the files stay as hashed
      files.push_back({n, sha, size, local});
      bytes += size;
    }
    auto set_id = xfer::store_file_set(blob_link(false), job_id, "output", attempt, files);
    spdlog::info("job {}: outputs stored: {} file(s), {} bytes, set {}", job_id, files.size(), bytes, set_id);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace baton::worker
