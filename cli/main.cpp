// baton: the operator CLI. Talks to batond over its HTTP API; finds it (and its token)
// through the same config file batond reads, of which it reads only its own few keys
// (cli/cli_config.hpp).
#include <CLI/CLI.hpp>

#include <csignal>
#include <fstream>
#include <iostream>

#include "cli/cli_config.hpp"
#include "cli/commands.hpp"
#include "cli/request_helpers.hpp"

using namespace baton::cli;

namespace {

// --url / $BATON_URL, else batond's listen address from the config; the token from
// $BATON_API_TOKEN, else <data_dir>/api_token (written by batond).
bool resolve(const std::string& url, const std::string& ca_file, const std::string& config_file, endpoint& e, std::string& why) {
  auto env = baton::config::process_env();
  auto loaded = load_cli_config(baton::config::choose_config(config_file, env), env);
  if (!loaded.value) {
    why = loaded.error->what();
    return false;
  }
  const auto& s = *loaded.value;
  std::string target = url.empty() ? env("BATON_URL").value_or("") : url;
  if (target.empty()) {
    e.host = s.listen.host == "0.0.0.0" ? "127.0.0.1" : s.listen.host;
    e.port = s.listen.port;
    e.https = s.https;
  } else if (!parse_url(target, e)) {
    why = "--url: expected http://HOST:PORT or https://HOST:PORT, got '" + target + "'";
    return false;
  }
  e.ca_file = ca_file.empty() ? env("BATON_CA_FILE").value_or("") : ca_file;
  e.token = s.api_token;
  if (e.token.empty()) {
    std::ifstream in(s.data_dir + "/api_token");
    std::getline(in, e.token);
  }
  if (e.token.empty()) {
    why = "no API token: set BATON_API_TOKEN (or run where batond's data dir " + s.data_dir + " is readable)";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // A connection cut while a bundle is being sent must be an error the transfer retries, not
  // the end of the process.
  signal(SIGPIPE, SIG_IGN);
  CLI::App app{"baton: submit and watch jobs on batond"};
  app.require_subcommand(1);
  std::string url, ca_file, config_file, op_name, store_ca_file;
  bool json = false;
  app.add_option("--url", url, "batond address (default: $BATON_URL, else the config's listen address)");
  app.add_option("--ca-file", ca_file,
                 "HTTPS: the CA certificate batond's is checked against (default: $BATON_CA_FILE, else the system's CAs)");
  app.add_option("--store-ca-file", store_ca_file,
                 "bundles and outputs in an https object store: the CA its certificate is checked against "
                 "(default: $BATON_STORE_CA_FILE, else the system's CAs)");
  app.add_option("--config", config_file, "config file (default: $BATON_CONFIG, else ~/.config/baton/config.yaml)");
  app.add_option("--operator", op_name, "who the event log records (default: $USER)");
  app.add_flag("--json", json, "machine-readable output");

  submit_options so;
  auto* submit_cmd = app.add_subcommand("submit", "submit a job: a bundle directory or .tar.gz, uploaded to batond");
  submit_cmd->add_option("bundle", so.path, "the input bundle: a directory (packed and uploaded) or a .tar.gz")->required();
  submit_cmd->add_flag("--shared-path", so.shared_path, "send the bundle's path instead: a directory every site's workers see");
  submit_cmd->add_option("--command", so.command, "what to run in the working copy (written to baton-job.json)");
  submit_cmd->add_option("--checkpoint", so.checkpoints, "checkpoint glob, relative (repeatable)");
  submit_cmd->add_option("--progress-file", so.progress_file, "file the payload writes its progress (0..1) to");
  submit_cmd->add_option("--title", so.title, "title (default: the bundle's name)");
  submit_cmd->add_option("--image", so.image, "worker image key");
  submit_cmd->add_option("--pin", so.pins, "only run on this cluster (repeatable)");
  submit_cmd->add_option("--comment", so.comment, "free text");
  submit_cmd->add_option("--id", so.id, "job id (default: batond picks one)");
  submit_cmd->add_option("--user", so.user, "submit for this user (admin only; default: you)");
  submit_cmd->add_option("--account", so.account, "account to charge (default: your first)");
  submit_cmd->add_option("--partition", so.partition, "partition (default: the configured default)");
  submit_cmd->add_option("--qos", so.qos, "quality of service (default: the configured default)");
  submit_cmd->add_option("--nice", so.nice, "lower your own priority by this much")->check(CLI::Range(0LL, 2147483645LL));
  submit_cmd->add_option("--gpus", so.gpus, "GPUs the job needs on one worker")->check(CLI::Range(1, 1024));
  submit_cmd->add_option("--time-limit", so.time_limit_seconds, "run-time estimate in seconds")
      ->check(CLI::Range(1LL, 31622400LL));
  submit_cmd->add_flag("--hold", so.hold, "submit held (release with baton jobs release)");
  submit_cmd->add_option("--array", so.array,
                         "a job array, one task per index (0-999, 1,3,5-7, 0-99:2; at most 10,000): each task's payload "
                         "gets BATON_ARRAY_INDEX; cancel, hold and release take the array's id");
  submit_cmd->add_flag("--no-requeue", so.no_requeue, "if preempted, cancel it rather than requeue it");
  submit_cmd->add_flag("--interactive", so.interactive, "an interactive session: if preempted, it is cancelled");
  submit_cmd->add_option("--after-ok", so.after_ok, "run only once this job completed (repeatable)");
  submit_cmd->add_option("--after-any", so.after_any, "run only once this job ended, however (repeatable)");
  submit_cmd->add_option("--after-not-ok", so.after_not_ok, "run only if this job failed or was cancelled (repeatable)");

  auto* jobs = app.add_subcommand("jobs", "list, inspect and manage jobs");
  jobs->require_subcommand(1);
  std::vector<std::string> statuses;
  int limit = 500, older = 30, older_minutes = -1;
  std::string id, output;
  bool force = false;
  auto* jl = jobs->add_subcommand("list", "jobs, newest first");
  jl->add_option("--status", statuses, "only these statuses (repeatable)");
  jl->add_option("--limit", limit, "at most this many")->check(CLI::Range(1, 10000));
  std::string list_array;
  jl->add_option("--array", list_array, "only this job array's tasks, by index");
  auto* js = jobs->add_subcommand("show", "one job");
  auto* jh = jobs->add_subcommand("history", "a job's events and runtime per worker");
  auto* jc = jobs->add_subcommand("cancel", "cancel a job (running jobs need --force)");
  jc->add_flag("--force", force, "also cancel a running job");
  auto* jr = jobs->add_subcommand("requeue", "run a finished job again, from its last checkpoint");
  auto* jhold = jobs->add_subcommand("hold", "keep a queued job from starting");
  auto* jrel = jobs->add_subcommand("release", "let a held job start again");
  auto* jwhy = jobs->add_subcommand("why", "why a job waits: its pending reason and priority factors");
  for (auto* sub : {js, jh, jc, jr, jhold, jrel, jwhy})
    sub->add_option("id", id, "job id (cancel, hold, release: or a job array's id)")->required();
  auto* jp = jobs->add_subcommand("prune", "hide old finished jobs from lists (history stays)");
  jp->add_option("--status", statuses, "completed, failed, cancelled (repeatable; default all three)");
  auto* older_days =
      jp->add_option("--older-than-days", older, "only jobs last updated this long ago")->check(CLI::Range(1, 100000));
  jp->add_option("--older-than-minutes", older_minutes, "a shorter retention, in minutes (0: all that ended)")
      ->check(CLI::Range(0, 144000000))
      ->excludes(older_days);
  double wait_timeout_seconds = 0;
  auto* jw = jobs->add_subcommand("wait", "wait until no job is queued or running (a campaign has ended); exit 4 on --timeout");
  jw->add_option("--timeout", wait_timeout_seconds, "give up after this many seconds (0 = never)")
      ->check(CLI::Range(0.0, 31622400.0));
  std::string import_file;
  auto* ji = jobs->add_subcommand("import",
                                  "submit a campaign: one POST /jobs body per line of a JSON-lines file; "
                                  "running it again submits only what is missing");
  ji->add_option("file", import_file, "the file, or - for stdin")->required();
  bool import_shared = false;
  ji->add_flag("--shared-path", import_shared, "send input_bundle_path as it is (every site sees it) instead of uploading it");
  std::string fetch_dir;
  auto* jf = jobs->add_subcommand("fetch", "download a job's stored outputs, each digest checked");
  jf->add_option("id", id, "job id")->required();
  jf->add_option("dir", fetch_dir, "where to write them (default: ./<job id>-outputs)");
  auto* je = jobs->add_subcommand("export-csv", "every job as CSV");
  je->add_option("--output,-o", output, "file (default: stdout)");

  auto* workers = app.add_subcommand("workers", "workers");
  workers->require_subcommand(1);
  std::vector<std::string> states;
  auto* wl = workers->add_subcommand("list", "workers, newest first");
  wl->add_option("--state", states, "idle, busy, stale, provisioning, gone (repeatable)");

  auto* clusters = app.add_subcommand("clusters", "Slurm partitions batond provisions on");
  clusters->require_subcommand(1);
  std::string name, reason;
  auto* cl = clusters->add_subcommand("list", "configured clusters");
  auto* ce = clusters->add_subcommand("enable", "allow submissions");
  auto* cd = clusters->add_subcommand("disable", "stop submissions");
  for (auto* sub : {ce, cd}) {
    sub->add_option("name", name, "cluster name")->required();
    sub->add_option("--reason", reason, "why (recorded)");
  }

  std::string prio_job;
  auto* prio = app.add_subcommand("priority", "queued jobs' priorities and factors (sprio -l)");
  prio->add_option("job", prio_job, "only this job");
  auto* fs = app.add_subcommand("fairshare", "the fair-share tree (sshare -l)");

  auto* ops = app.add_subcommand("operators", "named operators with their own tokens (admins only)");
  ops->require_subcommand(1);
  std::string op_role = "user";
  std::vector<std::string> op_accounts;
  auto* opadd = ops->add_subcommand("add", "create an operator and print their token once");
  opadd->add_option("name", name, "operator name (letters, digits, _ -)")->required();
  opadd->add_option("--role", op_role, "admin or user")->check(CLI::IsMember({"admin", "user"}));
  opadd->add_option("--account", op_accounts, "an account they may charge (repeatable)");
  auto* oprev = ops->add_subcommand("revoke", "revoke an operator's token");
  oprev->add_option("name", name, "operator name")->required();
  auto* oplist = ops->add_subcommand("list", "every operator, revoked ones too");
  int64_t op_grace = 3600;
  auto* oprot = ops->add_subcommand("rotate", "a new token for an operator (yours, or anyone's for an admin), printed once");
  oprot->add_option("name", name, "operator name")->required();
  oprot->add_option("--grace-seconds", op_grace, "the old token keeps working this long (0: stops at once)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{30} * 24 * 3600));

  auto* pilot = app.add_subcommand("pilot-token", "the token pilot jobs and cloud containers register with (admins only)");
  pilot->require_subcommand(1);
  int64_t pilot_grace = 3600;
  auto* pilot_rot = pilot->add_subcommand("rotate", "a new pilot token, printed once and written where batch scripts read it");
  pilot_rot->add_option("--grace-seconds", pilot_grace, "the old token keeps registering workers this long (0: stops at once)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{30} * 24 * 3600));

  double interval = 2;
  int iterations = 0;
  audit_export_options ao;
  auto* audit = app.add_subcommand("audit", "the audit trail (admins only)");
  audit->require_subcommand(1);
  auto* aexp =
      audit->add_subcommand("export", "every event with its hash chain, and a trailer (verify with baton-replay verify-export)");
  aexp->add_option("--from", ao.from, "events recorded at or after this time (RFC 3339, e.g. 2026-11-17T00:00:00Z)");
  aexp->add_option("--to", ao.to, "events recorded at or before this time (RFC 3339)");
  aexp->add_option("--stream", ao.stream, "only this stream (job/<id>, worker/<id>, ...)");
  aexp->add_option("--type", ao.type, "only this event type");
  aexp->add_option("--actor", ao.actor, "only this actor (operator:<name>, worker:<id>, loop:<name>)");
  aexp->add_option("--format", ao.format, "jsonl | csv")->check(CLI::IsMember({"jsonl", "csv"}));
  aexp->add_option("--output,-o", ao.output, "file (default: stdout)");

  auto* mon = app.add_subcommand("monitor", "live view of jobs and workers");
  mon->add_option("--interval", interval,
                  "at most one redraw per this many seconds (it redraws when the live stream brings events)")
      ->check(CLI::Range(0.1, 3600.0));
  mon->add_option("--iterations", iterations, "stop after this many refreshes (0 = until interrupted)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return usage_error;
  }

  context c{endpoint{}, json, std::cout, std::cerr};
  std::string why;
  if (!resolve(url, ca_file, config_file, c.daemon, why)) {
    std::cerr << "baton: " << why << "\n";
    return usage_error;
  }
  auto env = baton::config::process_env();
  c.daemon.store_ca_file = store_ca_file.empty() ? env("BATON_STORE_CA_FILE").value_or("") : store_ca_file;
  c.daemon.operator_name = op_name.empty() ? env("USER").value_or("") : op_name;

  return guarded(c, [&]() -> int {
    if (*submit_cmd) return submit(c, so);
    if (*jl) return jobs_list(c, statuses, limit, list_array);
    if (*js) return jobs_show(c, id);
    if (*jh) return jobs_history(c, id);
    if (*jc) return jobs_cancel(c, id, force);
    if (*jr) return jobs_requeue(c, id);
    if (*jp) return jobs_prune(c, statuses, older, older_minutes);
    if (*je) return jobs_export_csv(c, output);
    if (*jw) return jobs_wait(c, wait_timeout_seconds);
    if (*ji) return jobs_import(c, import_file, import_shared);
    if (*jf) return jobs_fetch(c, id, fetch_dir);
    if (*wl) return workers_list(c, states);
    if (*cl) return clusters_list(c);
    if (*ce || *cd) return clusters_set(c, name, static_cast<bool>(*ce), reason);
    if (*mon) return monitor(c, interval, iterations);
    if (*aexp) return audit_export(c, ao);
    if (*jhold || *jrel) return jobs_hold(c, id, static_cast<bool>(*jhold));
    if (*jwhy) return jobs_why(c, id);
    if (*prio) return priority(c, prio_job);
    if (*fs) return fairshare(c);
    if (*opadd) return operators_add(c, name, op_role, op_accounts);
    if (*oprev) return operators_revoke(c, name);
    if (*oplist) return operators_list(c);
    if (*oprot) return operators_rotate(c, name, op_grace);
    if (*pilot_rot) return pilot_token_rotate(c, pilot_grace);
    return usage_error;
  });
}
