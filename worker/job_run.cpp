// One assignment: bundle (dir or tar) -> working dir, restore the checkpoint, run the payload under
// supervision (checkpoint ticks, cancel, SIGTERM or allocation-deadline handoff, lost session),
// report the end (with failure artifacts for a failed payload).
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/util/process.hpp"
#include "worker/agent.hpp"
#include "worker/bundle.hpp"
#include "worker/bundle_archive.hpp"
#include "worker/checkpoint.hpp"
#include "worker/progress.hpp"

namespace baton::worker {

namespace fs = std::filesystem;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tail_of(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  auto size = static_cast<size_t>(in.tellg());
  in.seekg(static_cast<std::streamoff>(size > n ? size - n : 0));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::chrono::milliseconds ms(double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); }

// A 409 saying the job is already where we wanted it (a retried request that got through).
bool already_done(const api_result& r, const std::string& wanted) {
  return r.status == 409 && r.body.is_object() && r.body.value("current_status", "") == wanted;
}

// Copies the payload log (its last 16 MiB at most) and writes failure.json (which names the last
// checkpoint manifest) into <home>/.baton-failures/<job>/attempt-<n>/. Best effort: returns the
// directory, or "" if it could not be written.
std::string save_failure_artifacts(const std::string& home, const std::string& job_id, int attempt, const std::string& log_path,
                                   const json& info) {
  const std::uintmax_t cap = 16u << 20;
  auto dir = (fs::path(home) / failures_subdir / job_id / ("attempt-" + std::to_string(attempt))).string();
  try {
    fs::create_directories(dir);
    std::ifstream in(log_path, std::ios::binary);
    std::ofstream out(fs::path(dir) / "baton-payload.log", std::ios::binary | std::ios::trunc);
    std::error_code ec;
    auto size = fs::file_size(log_path, ec);
    if (in && !ec && size > cap) in.seekg(static_cast<std::streamoff>(size - cap));
    if (in) out << in.rdbuf();
    out.close();
    if (!out) throw std::runtime_error("cannot write " + dir + "/baton-payload.log");
    json j = info;
    j["log_truncated_to_last_bytes"] = (!ec && size > cap) ? json(cap) : json(nullptr);
    write_atomically((fs::path(dir) / "failure.json").string(), j.dump(2) + "\n");
    spdlog::info("job {}: failure artifacts in {}", job_id, dir);
    return dir;
  } catch (const std::exception& e) {
    spdlog::warn("job {}: cannot save failure artifacts in {}: {}", job_id, dir, e.what());
    return "";
  }
}

}  // namespace

job_outcome agent::refuse_job(const std::string& job_id, const std::string& reason, const std::string& detail) {
  spdlog::error("job {}: not started: {}: {}", job_id, reason, detail);
  finish_report(job_id, "fail", {{"reason", reason}, {"detail", detail.substr(0, 9000)}});
  return job_outcome::refused;
}

void agent::finish_report(const std::string& job_id, const std::string& action, const json& body) {
  auto r = api_.job_action(current_session(), job_id, action, body, false);
  std::string wanted = action == "complete" ? "completed" : "failed";
  if (r.ok() || already_done(r, wanted)) {
    spdlog::info("job {}: reported {}", job_id, action);
  } else if (r.retryable()) {
    spdlog::error("job {}: {} not delivered ({}); will retry before the next poll", job_id, action, r.describe());
    pending_ = pending_report{job_id, action, body};
  } else {
    spdlog::warn("job {}: {} refused: {}", job_id, action, r.describe());
  }
}

void agent::report_handoff(const std::string& job_id, const checkpoint_store& store, const std::string& progress_path,
                           json start) {
  auto progress = read_progress(progress_path);
  start["progress_codes"] = json::array();
  if (progress) start["progress"] = *progress;
  auto hs = api_.job_action(current_session(), job_id, "handoff/start", start, false);
  if (!hs.ok()) {
    spdlog::warn("job {}: handoff/start failed: {}; deregistering requeues it", job_id, hs.describe());
    return;
  }
  json done = json::object();
  // A stored-bundle job's checkpoint is its latest committed file set: no path to name.
  if (!stored_.on && !store.manifest_path().empty()) done["checkpoint_manifest_path"] = store.manifest_path();
  if (progress) done["progress"] = *progress;
  auto hc = api_.job_action(current_session(), job_id, "handoff/complete", done, false);
  if (hc.ok() && stored_.on)
    spdlog::info("job {}: handed off ({}; checkpoint set {})", job_id, start.value("reason", ""),
                 stored_.set_id.empty() ? "none" : stored_.set_id);
  else if (hc.ok())
    spdlog::info("job {}: handed off ({}; manifest {})", job_id, start.value("reason", ""),
                 store.manifest_path().empty() ? "unchanged" : store.manifest_path());
  else
    spdlog::warn("job {}: handoff/complete failed: {}; deregistering requeues it", job_id, hc.describe());
}

bool agent::checkpoint_cycle(const std::string& job_id, checkpoint_store& store, const std::string& workdir, const job_spec& spec,
                             bool final) {
  auto globs = spec.checkpoint_globs;
  if (!spec.progress_file.empty()) globs.push_back(spec.progress_file);  // resume with the progress it had
  // Before a manifest moves, one heartbeat proves batond still counts this worker (and renews
  // its lease, so no reap can follow before the rename): a reaped worker writes nothing more.
  auto still_ours = [&] {
    auto hb = api_.heartbeat(current_session(), {{"job_id", job_id}});
    if (hb.status != 404 && hb.status != 401) return true;  // no answer: keep checkpointing to disk meanwhile
    std::lock_guard<std::mutex> lock(m_);
    lost_worker_id_ = session_.worker_id;
    cv_.notify_all();
    return false;
  };
  sync_result r;
  auto began = clock_type::now();
  try {
    r = store.sync(workdir, globs, still_ours);
  } catch (const std::exception& e) {
    spdlog::error("job {}: checkpoint cycle failed: {}", job_id, e.what());
    return true;
  }
  for (const auto& f : r.failures) spdlog::warn("job {}: checkpoint: {}", job_id, f);
  if (r.vetoed) {
    spdlog::warn("job {}: batond no longer knows worker {}; checkpoint not committed", job_id, current_session().worker_id);
    return false;
  }
  if (r.changed && stored_.on) stored_.unsent = true;
  if (!r.changed && !(stored_.on && stored_.unsent)) {
    spdlog::debug("job {}: checkpoint cycle: nothing changed", job_id);
    return true;
  }
  auto progress = read_progress(spec.progress_file.empty() ? "" : (fs::path(workdir) / spec.progress_file).string());
  // How long the checkpoint took to store: batond's Lattice f8 prefers jobs that checkpoint fast.
  double took = std::chrono::duration<double>(clock_type::now() - began).count();
  json body = {{"checkpoint_manifest_path", store.manifest_path()},
               {"checkpoint_cycle_status", r.failures.empty() ? "success" : "partial_failure"},
               {"checkpoint_seconds", took}};
  if (!r.failures.empty()) body["checkpoint_cycle_failures"] = r.failures;
  if (progress) body["progress"] = *progress;
  if (stored_.on) {
    // Stored only once batond committed the set; until then the files wait in the store's
    // local directory and the next cycle sends them (nothing is reported that is not stored).
    body.erase("checkpoint_manifest_path");
    bool lost = false;
    if (store_checkpoint_set(job_id, store, body, final, lost)) {
      spdlog::info("job {}: checkpoint{} stored as set {}: {} file(s), {} changed this cycle, progress {}", job_id,
                   final ? " (final)" : "", stored_.set_id, store.current().files.size(), r.copied.size(),
                   progress ? std::to_string(*progress) : "n/a");
      return true;
    }
    return !lost;
  }
  auto rep = api_.job_action(current_session(), job_id, "checkpoint", body, !final);
  if (rep.ok()) {
    spdlog::info("job {}: checkpoint{} stored {} file(s), manifest {}, progress {}, {} old object(s) removed", job_id,
                 final ? " (final)" : "", r.copied.size(), store.manifest_path(), progress ? std::to_string(*progress) : "n/a",
                 r.objects_removed);
    return true;
  }
  spdlog::warn("job {}: checkpoint report failed: {}", job_id, rep.describe());
  return rep.error_code() != "job_not_assigned_to_worker";
}

job_outcome agent::run_job(const json& a) {
  auto job_id = a.value("job_id", "");
  auto attempt = a.value("attempt", 1);
  auto bundle_path = a.value("input_bundle_path", "");
  std::string resume_from = a.contains("latest_checkpoint_manifest_path") && a["latest_checkpoint_manifest_path"].is_string()
                                ? a["latest_checkpoint_manifest_path"].get<std::string>()
                                : "";
  auto s = current_session();
  // A stored bundle (named by digest) comes through batond's data plane, with its checkpoints
  // and outputs; a bundle path is read from a filesystem this machine shares with the others.
  const bool stored = a.contains("input_bundle") && a["input_bundle"].is_object();
  stored_ = stored_checkpoints{};
  stored_.on = stored;
  stored_.attempt = attempt;
  const auto& ib = stored ? a["input_bundle"] : a;
  const std::string bundle_name =
      stored ? "blob " + (ib.contains("sha256") && ib["sha256"].is_string() ? ib["sha256"].get<std::string>() : "?")
             : bundle_path;
  spdlog::info("job {}: assigned (attempt {}, bundle {}, resume from {})", job_id, attempt, bundle_name,
               stored                ? "its latest stored checkpoint, if any"
               : resume_from.empty() ? "scratch"
                                     : resume_from);

  auto workdir = (fs::path(cfg_.work_dir) / (job_id + "-attempt-" + std::to_string(attempt))).string();
  std::string home, ckdir;  // where failure artifacts and the checkpoint copies go
  auto remove_local = [&] {
    if (cfg_.keep_work_dirs) return;
    std::error_code ec;
    fs::remove_all(workdir, ec);
    if (stored) fs::remove_all(ckdir, ec);
  };
  auto refuse_clean = [&](const std::string& reason, const std::string& detail) {
    remove_local();
    return refuse_job(job_id, reason, detail);
  };
  bool is_tar = false;
  nlohmann::json listing;  // GET /jobs/{id}/files, for a stored bundle
  if (stored) {
    // Failure artifacts stay on this machine, under the work dir (the log says where), and the
    // checkpoint copies beside the working dir, where the payload does not write.
    home = cfg_.work_dir;
    ckdir = workdir + ".checkpoints";
    std::error_code ec;
    fs::remove_all(workdir, ec);
    fs::remove_all(ckdir, ec);
    if (auto no = fetch_stored_bundle(job_id, a["input_bundle"], workdir, listing)) return refuse_clean(no->reason, no->detail);
    spdlog::info("job {}: bundle unpacked to {}", job_id, workdir);
  } else {
    // Bundle: a directory (copied) or a tar archive (checked, then unpacked) into the working dir.
    auto bundle = resolve_bundle_dir(bundle_path);
    if (!bundle)
      return refuse_job(job_id, "bundle_unavailable",
                        "input_bundle_path must be an absolute path or file:// URL: " + bundle_path);
    std::error_code sec;
    auto bundle_status = fs::status(*bundle, sec);
    is_tar = fs::is_regular_file(bundle_status) && is_tar_path(*bundle);
    if (!is_tar && !fs::is_directory(bundle_status)) {
      if (fs::is_regular_file(bundle_status))
        return refuse_job(job_id, "invalid_bundle",
                          "bundle " + *bundle + " is neither a directory nor a .tar/.tar.gz/.tgz archive");
      return refuse_job(job_id, "bundle_unavailable", "bundle " + *bundle + " is not readable here");
    }
    // Checkpoints and failure artifacts live next to the bundle: in its dir, or beside the archive.
    home = is_tar ? fs::path(*bundle).parent_path().string() : *bundle;
    ckdir = (fs::path(home) / checkpoint_subdir / job_id).string();
    try {
      fs::remove_all(workdir);
      if (is_tar)
        extract_bundle_archive(*bundle, workdir, {cfg_.bundle_max_bytes, cfg_.bundle_max_members});
      else
        copy_bundle(*bundle, workdir);
    } catch (const invalid_bundle& e) {
      return refuse_clean("invalid_bundle", e.what());
    } catch (const std::exception& e) {
      return refuse_clean("bundle_unavailable", e.what());
    }
    spdlog::info("job {}: bundle {} to {}", job_id, is_tar ? "unpacked" : "copied", workdir);
  }
  job_spec spec;
  auto spec_path = fs::path(workdir) / job_spec_file;
  if (std::error_code ec; !fs::is_regular_file(fs::symlink_status(spec_path, ec)))
    return refuse_clean("invalid_bundle", std::string(job_spec_file) + " is missing from the top of " +
                                              (stored || is_tar ? "the archive " : "the bundle ") + bundle_name);
  try {
    spec = parse_job_spec(read_text(spec_path.string()));
  } catch (const std::exception& e) {
    return refuse_clean("invalid_bundle", e.what());
  }
  if (!stored && !spec.output_globs.empty())
    spdlog::info("job {}: output_globs is for stored bundles; this job's outputs stay in its bundle's filesystem", job_id);

  // The restore: from the manifest on the shared filesystem, or the latest stored checkpoint.
  checkpoint_store store(ckdir, job_id, attempt, s.worker_id);
  try {
    fs::create_directories(ckdir);
    if (stored) {
      if (restore_stored_checkpoint(job_id, listing, store, workdir))
        spdlog::info("job {}: restored {} checkpoint file(s) from set {}", job_id, store.current().files.size(), stored_.set_id);
    } else if (!resume_from.empty()) {
      store.restore(resume_from, workdir);
      spdlog::info("job {}: restored {} checkpoint file(s) from {}", job_id, store.current().files.size(), resume_from);
    }
  } catch (const std::exception& e) {
    return refuse_clean("checkpoint_hydration_failed", e.what());  // never silently start from scratch
  }

  if (stopping() || inside_handoff_margin()) {  // before the payload ran: deregistering hands the job straight back
    spdlog::info("job {}: {} before start; giving it back", job_id,
                 stopping() ? "shutdown requested" : "the allocation is ending");
    remove_local();
    return job_outcome::handed_off;
  }
  // Start: tell batond first, so a job cancelled while assigned never runs.
  auto started = api_.job_action(s, job_id, "start", json::object(), true);
  if (!started.ok()) {
    spdlog::warn("job {}: start refused: {}; not running it", job_id, started.describe());
    remove_local();
    if (started.status == 409) return job_outcome::cancelled;  // the next poll settles the job
    return job_outcome::lost;
  }
  std::string progress_path = spec.progress_file.empty() ? "" : (fs::path(workdir) / spec.progress_file).string();
  // The payload: `/bin/sh -c <command>` in its own process group under a supervisor that kills
  // the group if the worker dies, in the job's working dir, its output appended to
  // baton-payload.log there, and without any of the worker's credentials in its environment.
  util::spawn_spec ls;
  ls.argv = {"/bin/sh", "-c", spec.command};
  ls.cwd = workdir;
  ls.extra_env = {"BATON_JOB_ID=" + job_id, "BATON_ATTEMPT=" + std::to_string(attempt), "BATON_CHECKPOINT_DIR=" + ckdir,
                  "BATON_WORKER_ID=" + s.worker_id, "BATON_WORK_DIR=" + workdir};
  ls.strip_env = util::secret_env_names();
  ls.log_path = (fs::path(workdir) / "baton-payload.log").string();
  ls.supervised = true;
  // A job array's task learns which one it is, as Slurm's SLURM_ARRAY_TASK_ID and
  // SLURM_ARRAY_JOB_ID (both made by batond: a UUID and a number).
  if (a.contains("array_index") && a["array_index"].is_number_unsigned() && a.contains("array_id") && a["array_id"].is_string()) {
    ls.extra_env.push_back("BATON_ARRAY_INDEX=" + std::to_string(a["array_index"].get<uint64_t>()));
    ls.extra_env.push_back("BATON_ARRAY_ID=" + a["array_id"].get<std::string>());
  }
  std::optional<util::process> p;
  try {
    p.emplace(ls);
  } catch (const std::exception& e) {
    return refuse_clean("payload_start_failed", e.what());
  }
  {
    std::lock_guard<std::mutex> lock(m_);
    job_id_ = job_id;
    progress_path_ = progress_path;
    preempt_job_id_.clear();  // a job preempted here before may come back to this worker
  }
  spdlog::info("job {}: payload started (pid {}): {}", job_id, p->pid(), spec.command);

  auto cleanup = [&] {
    {
      std::lock_guard<std::mutex> lock(m_);
      job_id_.clear();
      progress_path_.clear();
    }
    remove_local();
  };
  // Stops the payload and takes a last checkpoint (a handoff, or a requeued clone, resumes from it),
  // reports the handoff `start` describes (none when null), cleans up and returns `outcome`.
  auto stop_with_checkpoint = [&](job_outcome outcome, const json& start = nullptr) {
    int code = util::exit_code_of(p->stop(ms(cfg_.kill_grace_seconds)));
    spdlog::info("job {}: payload stopped (code {})", job_id, code);
    checkpoint_cycle(job_id, store, workdir, spec, true);
    if (!start.is_null()) report_handoff(job_id, store, progress_path, start);
    cleanup();
    return outcome;
  };

  // A failed attempt: no checkpoint from it (ADR-0004; RelayMD uploads one anyway), its log
  // and failure.json kept beside the bundle, and the reason reported.
  auto fail_attempt = [&](const std::string& reason, const std::string& what, int code) {
    json fail = {{"reason", reason}, {"detail", what + "; payload log tail:\n" + tail_of(ls.log_path, 1500)}};
    auto last_manifest = stored ? "" : store.manifest_path().empty() ? resume_from : store.manifest_path();
    json info = {{"job_id", job_id},
                 {"attempt", attempt},
                 {"worker_id", s.worker_id},
                 {"reason", reason},
                 {"detail", what},
                 {"exit_code", code},
                 {"last_checkpoint_manifest_path", last_manifest.empty() ? json(nullptr) : json(last_manifest)}};
    if (stored) info["last_checkpoint_set_id"] = stored_.set_id.empty() ? json(nullptr) : json(stored_.set_id);
    auto artifacts = save_failure_artifacts(home, job_id, attempt, ls.log_path, info);
    if (!artifacts.empty()) fail["failure_artifact_path"] = artifacts;
    finish_report(job_id, "fail", fail);
  };

  payload_watch watch(spec.supervision, ls.log_path, progress_path, clock_type::now());
  auto next_supervision = clock_type::now() + std::chrono::seconds(1);
  auto next_checkpoint = clock_type::now() + ms(cfg_.checkpoint_seconds);
  while (true) {
    bool stop, cancel, gone, preempted;
    std::string preempted_by;
    double preempt_deadline;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait_for(lock, std::chrono::milliseconds(100), [&] {  // (its last call is after the wait, under the lock)
        stop = stop_;
        cancel = cancel_job_id_ == job_id;
        preempted = preempt_job_id_ == job_id;
        gone = !lost_worker_id_.empty() && lost_worker_id_ == session_.worker_id;
        return stop || cancel || preempted || gone;
      });
      preempted_by = preempted_by_;
      preempt_deadline = preempt_grace_until_;
    }
    if (auto st = p->poll()) {
      int code = util::exit_code_of(*st);
      if (code == 0) {
        spdlog::info("job {}: payload exited 0", job_id);
        checkpoint_cycle(job_id, store, workdir, spec, true);
        std::string outputs_failed = stored && !spec.output_globs.empty() ? store_outputs(job_id, attempt, workdir, spec) : "";
        if (outputs_failed.empty()) {
          finish_report(job_id, "complete", json::object());
        } else {
          // Its results could not be stored: not complete (a retry runs from the last checkpoint).
          spdlog::error("job {}: outputs not stored: {}", job_id, outputs_failed);
          fail_attempt("output_upload_failed", "outputs not stored: " + outputs_failed, 0);
        }
      } else {
        spdlog::warn("job {}: payload exited with code {}", job_id, code);
        fail_attempt("payload_failed", "exit code " + std::to_string(code), code);
      }
      cleanup();
      return job_outcome::finished;
    }
    if (clock_type::now() >= next_supervision) {
      if (auto verdict = watch.check(clock_type::now())) {
        spdlog::warn("job {}: {}: {}; stopping the payload", job_id, verdict->reason, verdict->detail);
        int code = util::exit_code_of(p->stop(ms(cfg_.kill_grace_seconds)));
        fail_attempt(verdict->reason, verdict->detail, code);
        cleanup();
        return job_outcome::finished;
      }
      next_supervision = clock_type::now() + std::chrono::seconds(1);
    }
    if (gone) {
      // The job was requeued without us: stop at once and write nothing more (no split brain).
      spdlog::warn("job {}: worker {} lost its registration; killing the payload without a checkpoint", job_id, s.worker_id);
      p->stop(ms(cfg_.kill_grace_seconds));
      cleanup();
      return job_outcome::lost;
    }
    if (cancel) {
      spdlog::info("job {}: stopping the payload for cancellation", job_id);
      return stop_with_checkpoint(job_outcome::cancelled);
    }
    if (preempted) {
      // Another job needs this worker: checkpoint, hand this one back (it resumes later from
      // the checkpoint, no attempt charged), then poll for the next job.
      spdlog::info("job {}: preempted by {}; stopping the payload for a handoff", job_id, preempted_by);
      json start = {{"reason", "preempted"}, {"message", "preempted by job " + preempted_by}};
      if (preempt_deadline > 0) start["deadline_epoch_seconds"] = preempt_deadline;
      return stop_with_checkpoint(job_outcome::preempted, start);
    }
    if (stop) {
      spdlog::info("job {}: shutdown requested; stopping the payload for a handoff", job_id);
      return stop_with_checkpoint(job_outcome::handed_off,
                                  {{"reason", "worker_shutdown"}, {"message", "baton-worker received SIGTERM"}});
    }
    if (inside_handoff_margin()) {
      spdlog::info("job {}: the allocation ends at epoch {}, within the {} s margin; stopping the payload for a handoff", job_id,
                   cfg_.allocation_deadline, cfg_.handoff_margin_seconds);
      return stop_with_checkpoint(job_outcome::handed_off,
                                  {{"reason", "allocation_ending"},
                                   {"deadline_epoch_seconds", cfg_.allocation_deadline},
                                   {"message", "the Slurm allocation ends within " +
                                                   std::to_string(static_cast<int64_t>(cfg_.handoff_margin_seconds)) + " s"}});
    }
    if (clock_type::now() >= next_checkpoint) {
      if (!checkpoint_cycle(job_id, store, workdir, spec, false)) {
        spdlog::warn("job {}: batond says the job is no longer ours; killing the payload", job_id);
        p->stop(ms(cfg_.kill_grace_seconds));
        cleanup();
        return job_outcome::lost;
      }
      next_checkpoint = clock_type::now() + ms(cfg_.checkpoint_seconds);
    }
  }
}

}  // namespace baton::worker
