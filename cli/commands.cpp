#include "cli/commands.hpp"
#include "cli/event_follower.hpp"

#include "core/jobs/ids.hpp"
#include "core/util/csv.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <tuple>

#include "cli/bundles.hpp"
#include "cli/format.hpp"
#include "cli/request_helpers.hpp"

namespace baton::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::vector<column> job_columns = {{"ID", "id"},
                                         {"STATUS", "status"},
                                         {"TITLE", "title"},
                                         {"WORKER", "assigned_worker_id"},
                                         {"PROGRESS", "progress"},
                                         {"ATTEMPTS", "attempts"},
                                         {"CREATED", "created_at"},
                                         {"BLOCKED", "queue_blocked_reason"}};

}  // namespace

int submit(context& c, const submit_options& o) {
  if (!o.id.empty() && !o.array.empty()) {
    c.err << "baton: --id names one job; an array's tasks each get their own (the array gets an id too)\n";
    return usage_error;
  }
  if (!o.id.empty() && !core::canonical_uuid(o.id)) {
    c.err << "baton: --id must be a UUID (8-4-4-4-12 hexadecimal digits), got '" << o.id << "'\n";
    return usage_error;
  }
  json depends_on = json::array();
  for (auto [flag, condition, ids] : {std::tuple{"--after-ok", "afterok", &o.after_ok},
                                      {"--after-any", "afterany", &o.after_any},
                                      {"--after-not-ok", "afternotok", &o.after_not_ok}})
    for (const auto& id : *ids) {
      if (!core::canonical_uuid(id)) {
        c.err << "baton: " << flag << " must be a job id (a UUID), got '" << id << "'\n";
        return usage_error;
      }
      depends_on.push_back({{"job_id", id}, {"condition", condition}});
    }
  // Everything is checked before anything is sent.
  std::error_code ec;
  fs::path bundle = fs::absolute(o.path, ec);
  if (o.path.empty() || !fs::exists(bundle, ec)) {
    c.err << "baton: " << o.path << ": no such file or directory\n";
    return usage_error;
  }
  const bool archive = !o.shared_path && fs::is_regular_file(bundle, ec) && is_targz(bundle.string());
  if (archive && !o.command.empty()) {
    c.err << "baton: --command writes baton-job.json into a bundle directory; " << o.path
          << " is an archive (put baton-job.json in it)\n";
    return usage_error;
  }
  if (!archive && !fs::is_directory(bundle, ec)) {
    c.err << "baton: " << o.path
          << (o.shared_path ? ": with --shared-path the input bundle must be a directory on the shared filesystem\n"
                            : ": the input bundle must be a directory or a .tar.gz/.tgz file\n");
    return usage_error;
  }
  auto spec_path = bundle / "baton-job.json";
  if (!archive && o.command.empty() && !fs::exists(spec_path, ec)) {
    c.err << "baton: give --command, or put a baton-job.json in " << bundle.string() << "\n";
    return usage_error;
  }
  for (const auto& g : o.checkpoints)
    if (g.empty() || g[0] == '/' || g.find("..") != std::string::npos) {
      c.err << "baton: --checkpoint '" << g << "' must be a relative glob inside the bundle\n";
      return usage_error;
    }
  if (!o.command.empty()) {
    json spec = {{"command", o.command}, {"checkpoint_globs", o.checkpoints}};
    if (!o.progress_file.empty()) spec["progress_file"] = o.progress_file;
    std::ofstream out(spec_path);
    out << spec.dump(2) << "\n";
    if (!out) {
      c.err << "baton: cannot write " << spec_path.string() << "\n";
      return usage_error;
    }
  }
  json body = {{"title", o.title.empty() ? bundle.filename().string() : o.title}};
  if (o.shared_path) {
    body["input_bundle_path"] = bundle.string();
  } else {
    // Packed (a directory) and uploaded: the job names its bundle by digest, and any site's
    // worker downloads it from batond (docs/storage.md).
    stored_bundle sb;
    if (!upload_bundle(c, bundle.string(), sb)) return api_error;
    if (!c.json)  // on stderr: stdout stays the job's line for scripts
      c.err << "bundle " << sb.sha256 << " (" << sb.size << " bytes) " << (sb.already_stored ? "already stored" : "uploaded")
            << "\n";
    body["input_bundle"] = sb.as_json();
  }
  if (!o.image.empty()) body["worker_image_key"] = o.image;
  if (!o.comment.empty()) body["comment"] = o.comment;
  if (!o.id.empty()) body["id"] = o.id;
  if (!o.pins.empty()) body["preferred_clusters"] = o.pins;
  for (auto [field, value] : {std::pair<const char*, const std::string*>{"user", &o.user},
                              {"account", &o.account},
                              {"partition", &o.partition},
                              {"qos", &o.qos}})
    if (!value->empty()) body[field] = *value;
  if (o.nice) body["nice"] = o.nice;
  if (o.gpus) body["gpu_count"] = o.gpus;
  if (o.time_limit_seconds) body["time_limit_seconds"] = o.time_limit_seconds;
  if (o.hold) body["hold"] = true;
  if (o.no_requeue) body["requeue"] = false;
  if (o.interactive) body["interactive"] = true;
  if (!depends_on.empty()) body["depends_on"] = std::move(depends_on);
  result r;
  if (!o.array.empty()) {  // one request for every task (POST /jobs/batch)
    if (int code = run(c, "POST", "/jobs/batch", r, json{{"array", o.array}, {"job", std::move(body)}})) return code;
    if (!r.body["jobs"].empty() && r.body["jobs"][0].contains("pending_detail"))
      c.err << "baton: warning: no site could ever run these tasks: " << r.body["jobs"][0]["pending_detail"].get<std::string>()
            << "\n";
    return reply(c, r.body, [&](std::ostream& o) {
      o << "submitted array " << r.body.value("array_id", "") << ": " << r.body.value("created", 0)
        << " tasks (baton jobs list --array " << r.body.value("array_id", "") << ")";
    });
  }
  if (int code = run(c, "POST", "/jobs", r, body)) return code;
  if (r.body.value("pending_detail", json()).is_string())
    c.err << "baton: warning: no site could ever run this job: " << r.body["pending_detail"].get<std::string>() << "\n";
  return reply(c, r.body, [&](std::ostream& o) {
    o << "submitted " << r.body["id"].get<std::string>() << " (" << r.body["status"].get<std::string>() << ")";
  });
}

// A cancel, hold or release that named a job array: how many tasks it changed, and the rest by status.
int array_acted(context& c, const json& body, const std::string& verb) {
  return reply(c, body, [&](std::ostream& o) {
    o << "array " << body.value("array_id", "") << ": " << verb << " " << body.value("changed", 0) << " tasks";
    if (body.contains("unchanged") && body["unchanged"].is_object() && !body["unchanged"].empty()) {
      o << "; left as they were:";
      for (const auto& [status, n] : body["unchanged"].items()) o << " " << n.get<size_t>() << " " << status;
    }
  });
}

int jobs_list(context& c, const std::vector<std::string>& statuses, int limit, const std::string& array_id) {
  std::string path = "/jobs?limit=" + std::to_string(limit);
  if (!array_id.empty()) path += "&array_id=" + encode(array_id);
  for (const auto& s : statuses) path += "&status=" + encode(s);
  result r;
  if (int code = run(c, "GET", path, r)) return code;
  return print(c, r.body, job_columns);
}

int jobs_show(context& c, const std::string& id) {
  result r;
  if (int code = run(c, "GET", "/jobs/" + encode(id), r)) return code;
  if (c.json) return print(c, r.body, {});
  for (auto it = r.body.begin(); it != r.body.end(); ++it) c.out << it.key() << ": " << cell(it.value()) << "\n";
  return ok;
}

int jobs_history(context& c, const std::string& id) {
  result r;
  if (int code = run(c, "GET", "/jobs/" + encode(id) + "/history", r)) return code;
  if (c.json) return print(c, r.body, {});
  print_table(c.out, r.body["events"],
              {{"SEQ", "event_seq"},
               {"AT", "occurred_at"},
               {"EVENT", "event_type"},
               {"WORKER", "worker_id"},
               {"FROM", "status_from"},
               {"TO", "status_to"}});
  if (!r.body["worker_segments"].empty()) {
    c.out << "\n";
    print_table(c.out, r.body["worker_segments"],
                {{"WORKER", "worker_id"}, {"STARTED", "started_at"}, {"ENDED", "ended_at"}, {"SECONDS", "duration_seconds"}});
  }
  return ok;
}

int jobs_cancel(context& c, const std::string& id, bool force) {
  result r = call(c.daemon, "DELETE", "/jobs/" + encode(id) + (force ? "?force=true" : ""));
  // batond's words are RelayMD's ("requires force=true", the query parameter); here it is a flag.
  if (r.status == 409 && r.body.is_object() && r.body.value("error", "") == "force_required") {
    c.err << "baton: job " << id
          << " is running: cancelling it stops its payload; to do so, add --force (baton jobs cancel --force " << id << ")\n";
    return r.code();
  }
  if (r.code() != ok) {
    c.err << "baton: " << r.message() << "\n";
    return r.code();
  }
  if (r.body.is_object() && r.body.contains("array_id")) return array_acted(c, r.body, "cancelled");
  return reply(c, json{{"job_id", id}, {"cancel_requested", true}}, [&](std::ostream& o) { o << "cancel requested for " << id; });
}

int jobs_requeue(context& c, const std::string& id) {
  result r;
  if (int code = run(c, "POST", "/jobs/" + encode(id) + "/requeue", r)) return code;
  return reply(c, r.body, [&](std::ostream& o) { o << "requeued " << id << " as " << r.body["id"].get<std::string>(); });
}

int jobs_prune(context& c, const std::vector<std::string>& statuses, int older_than_days, int older_than_minutes) {
  std::string path = older_than_minutes >= 0 ? "/jobs?older_than_minutes=" + std::to_string(older_than_minutes)
                                             : "/jobs?older_than_days=" + std::to_string(older_than_days);
  for (const auto& s : statuses) path += "&status=" + encode(s);
  result r;
  if (int code = run(c, "DELETE", path, r)) return code;
  return reply(c, r.body, [&](std::ostream& o) {
    o << "pruned " << cell(field(r.body, "pruned")) << " jobs (their history stays in the log)";
  });
}

int jobs_export_csv(context& c, const std::string& output) {
  const std::vector<std::string> fields = {"id",
                                           "title",
                                           "status",
                                           "worker_image_key",
                                           "assigned_worker_id",
                                           "attempts",
                                           "progress",
                                           "created_at",
                                           "started_at",
                                           "updated_at",
                                           "runtime_seconds",
                                           "failure_reason",
                                           "input_bundle_path",
                                           "latest_checkpoint_manifest_path"};
  std::ofstream file;
  std::ostream* out = output_to(c, output, file);
  if (!out) return usage_error;
  for (size_t i = 0; i < fields.size(); ++i) *out << (i ? "," : "") << fields[i];
  *out << "\n";
  // Page through: a campaign has many thousands of jobs.
  const int page = 1000;
  size_t written = 0;
  bool progress = file.is_open() && isatty(2);
  for (int offset = 0;; offset += page) {
    result r;
    if (int code =
            run(c, "GET", "/jobs?include_pruned=true&limit=" + std::to_string(page) + "&offset=" + std::to_string(offset), r))
      return code;
    for (const auto& j : r.body) {
      for (size_t i = 0; i < fields.size(); ++i)
        *out << (i ? "," : "") << util::csv_field(cell(j.contains(fields[i]) ? j[fields[i]] : nullptr));
      *out << "\n";
      ++written;
    }
    if (progress) c.err << "\rexported " << written << " jobs" << std::flush;
    if (r.body.size() < static_cast<size_t>(page)) break;
  }
  if (progress) c.err << "\n";
  if (file.is_open()) c.out << "wrote " << written << " jobs to " << output << "\n";
  return ok;
}

int workers_list(context& c, const std::vector<std::string>& states) {
  std::string path = "/workers?limit=10000";
  for (const auto& s : states) path += "&state=" + encode(s);
  result r;
  if (int code = run(c, "GET", path, r)) return code;
  return print(c, r.body,
               {{"ID", "id"},
                {"STATE", "state"},
                {"PLATFORM", "platform"},
                {"GPU", "gpu_model"},
                {"GPUS", "gpu_count"},
                {"IMAGE", "worker_image_key"},
                {"PROVIDER", "provider_id"},
                {"JOB", "job_id"},
                {"LAST HEARTBEAT", "last_heartbeat"}});
}

int clusters_list(context& c) {
  result r;
  if (int code = run(c, "GET", "/clusters", r)) return code;
  if (!c.json)
    for (auto& cl : r.body)
      cl["failure"] = cl["last_submission_failure"].is_object() ? cl["last_submission_failure"]["stage"] : json(nullptr);
  return print(c, r.body,
               {{"NAME", "name"},
                {"ENABLED", "enabled"},
                {"STRATEGY", "strategy"},
                {"PENDING", "pending_placeholders"},
                {"WORKERS", "workers"},
                {"LAST FAILURE", "failure"}});
}

int clusters_set(context& c, const std::string& name, bool enable, const std::string& reason) {
  result r;
  json body = reason.empty() ? json::object() : json{{"reason", reason}};
  if (int code = run(c, "POST", "/clusters/" + encode(name) + (enable ? "/enable" : "/disable"), r, body)) return code;
  return reply(c, r.body, [&](std::ostream& o) { o << name << (enable ? " enabled" : " disabled"); });
}

// Draws once, then again each time the live stream brings events (at most once per
// interval: a burst is one redraw). Without a stream (an older batond, or it dropped) it
// falls back to redrawing every interval.
int monitor(context& c, double interval_seconds, int iterations) {
  bool tty = isatty(1);
  auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(interval_seconds));
  event_follower live(c.daemon);
  bool following = live.wait_live(std::chrono::seconds(5));
  uint64_t seen = 0;
  for (int i = 0; iterations <= 0 || i < iterations; ++i) {
    if (i > 0) {
      if (following && !live.ended()) {
        uint64_t now = live.wait_beyond(seen, std::chrono::hours(24));
        if (now > seen) std::this_thread::sleep_for(interval);  // let the burst finish: one redraw for it
      } else {
        std::this_thread::sleep_for(interval);
      }
    }
    seen = live.events();  // everything so far is in this redraw
    result jobs, workers;
    if (int code = run(c, "GET", "/jobs?limit=10000", jobs)) return code;
    if (int code = run(c, "GET", "/workers?limit=10000&state=idle&state=busy&state=stale&state=provisioning", workers))
      return code;
    std::map<std::string, int> by_status, by_state;
    for (const auto& j : jobs.body) ++by_status[j.value("status", "?")];
    for (const auto& w : workers.body) ++by_state[w.value("state", "?")];
    if (c.json) {
      c.out << json{{"jobs", by_status}, {"workers", by_state}, {"live", following && !live.ended()}}.dump() << "\n"
            << std::flush;
      continue;
    }
    if (tty) c.out << "\x1b[H\x1b[2J";  // redraw in place
    c.out << "jobs:   ";
    for (const auto& [k, v] : by_status) c.out << k << " " << v << "   ";
    c.out << "\nworkers: ";
    for (const auto& [k, v] : by_state) c.out << k << " " << v << "   ";
    c.out << (following && !live.ended() ? "\n(live)" : "\n(polling every " + std::to_string(interval_seconds) + " s)");
    c.out << "\n\n";
    json active = json::array();
    for (const auto& j : jobs.body)
      if (j.value("status", "") == "running" || j.value("status", "") == "assigned" || j.value("status", "") == "handoff")
        active.push_back(j);
    print_table(c.out, active, job_columns);
    c.out << std::flush;
  }
  return ok;
}

}  // namespace baton::cli
