#pragma once
// One function per CLI command; each returns the process exit code and writes its output
// (table or --json) to out, problems to err.
#include <ostream>
#include <string>
#include <vector>

#include "cli/client.hpp"

namespace baton::cli {

struct context {
  endpoint daemon;
  bool json = false;
  std::ostream& out;
  std::ostream& err;
};

struct submit_options {
  std::string path, command, title, image, comment, id, progress_file;
  std::vector<std::string> checkpoints, pins;
  std::string user, account, partition, qos;  // who goes first; empty: the daemon's defaults
  int64_t nice = 0, time_limit_seconds = 0;
  int gpus = 0;
  bool hold = false;
  bool no_requeue = false, interactive = false;                // a preemption cancels such a job instead of requeueing it
  std::vector<std::string> after_ok, after_any, after_not_ok;  // job ids this one waits for (depends_on)
  bool shared_path = false;  // send the bundle's path (every site sees it) instead of uploading it
  std::string array;         // a job array's indices ("0-999"): one task each, in one request
};

int submit(context& c, const submit_options& o);
int jobs_list(context& c, const std::vector<std::string>& statuses, int limit, const std::string& array_id = "");
int jobs_show(context& c, const std::string& id);
// The answer to a cancel, hold or release that named a job array (verb: what was done).
int array_acted(context& c, const nlohmann::json& body, const std::string& verb);
int jobs_history(context& c, const std::string& id);
int jobs_cancel(context& c, const std::string& id, bool force);
int jobs_requeue(context& c, const std::string& id);
// older_than_minutes >= 0 replaces the retention in days.
int jobs_prune(context& c, const std::vector<std::string>& statuses, int older_than_days, int older_than_minutes = -1);
int jobs_export_csv(context& c, const std::string& output);
int workers_list(context& c, const std::vector<std::string>& states);
int clusters_list(context& c);
int clusters_set(context& c, const std::string& name, bool enable, const std::string& reason);
int monitor(context& c, double interval_seconds, int iterations);
// A campaign from a JSON-lines file ("-": stdin), one POST /jobs body per line (cli/import_command.cpp).
// Bundle directories named by input_bundle_path are packed and uploaded (once each) unless shared_path.
int jobs_import(context& c, const std::string& file, bool shared_path = false);
// A job's stored outputs downloaded into dir (default ./<id>-outputs), each digest checked (cli/bundles.cpp).
int jobs_fetch(context& c, const std::string& id, const std::string& dir);
// Until no job is active (exit 0) or timeout_seconds passed (exit 4; 0 = no timeout).
int jobs_wait(context& c, double timeout_seconds);
// Who goes first (cli/priority_commands.cpp).
int jobs_hold(context& c, const std::string& id, bool hold);
int jobs_why(context& c, const std::string& id);
int priority(context& c, const std::string& job_id);  // every queued job when job_id is empty
int fairshare(context& c);
// The audit export (cli/audit_commands.cpp), for admins: GET /audit/export into a file.
struct audit_export_options {
  std::string from, to, stream, type, actor, format = "jsonl", output;
};
int audit_export(context& c, const audit_export_options& o);
// Named operators (cli/operator_commands.cpp), for admins.
int operators_add(context& c, const std::string& name, const std::string& role, const std::vector<std::string>& accounts);
int operators_rotate(context& c, const std::string& name, int64_t grace_seconds);
int pilot_token_rotate(context& c, int64_t grace_seconds);
int operators_revoke(context& c, const std::string& name);
int operators_list(context& c);

}  // namespace baton::cli
