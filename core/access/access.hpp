#pragma once
// Who may do what: the one place that decides it. The HTTP layer calls authorize() as soon
// as it knows who is calling (before it reads a body), the scheduler calls authorize_job()
// before a worker may act on a job. Tests drive both over every command kind and caller.
#include <optional>
#include <string>

#include "core/access/command_kind.hpp"
#include "core/events/domain.hpp"
#include "core/jobs/job.hpp"

namespace baton::core {

// Who is calling, once their credential has been checked.
struct principal {
  enum class kind : uint8_t {
    nobody,     // no credential (only /healthz)
    operator_,  // X-API-Token: the admin token (BATON_API_TOKEN) or a named operator's own token
    pilot,      // the registration-only pilot token
    worker,     // X-Worker-Token that matched a registered worker's credential
    internal,   // batond's own loops and actors (cluster, Salad, reaper)
    scraper,    // the scrape token (BATON_METRICS_TOKEN): GET /metrics only
  };
  kind k = kind::nobody;
  std::string
      worker_id;       // kind::worker: its id; kind::pilot: the placeholder whose one-time credential it is ("": the pilot token)
  std::string name;    // operator: a named operator's name, or for the admin token what X-Baton-Operator says
  bool admin = true;   // operator: the admin token, or a named operator with role admin
  bool named = false;  // operator: identified by their own token (the name is theirs, not declared)

  // The admin token's holder (the name is what the caller declares, for the log).
  static principal operator_named(std::string n) { return {kind::operator_, {}, std::move(n), true, false}; }
  // A named operator, identified by their own token.
  static principal named_operator(std::string n, bool is_admin) { return {kind::operator_, {}, std::move(n), is_admin, true}; }
  static principal of_worker(std::string id) { return {kind::worker, std::move(id), {}}; }
  static principal pilot_token() { return {kind::pilot, {}, {}}; }
  // A pilot that presented its placeholder's one-time registration credential.
  static principal pilot_of(std::string placeholder_id) { return {kind::pilot, std::move(placeholder_id), {}}; }
  static principal scrape_token() { return {kind::scraper, {}, {}, false}; }
  static principal loop() { return {kind::internal, {}, {}}; }

  // The envelope's actor: "worker:<id>", "operator:<name>", "pilot" (the pilot token),
  // "pilot:<placeholder id>" (a one-time credential), "loop".
  std::string actor() const;
};

// What a command kind needs from its caller.
enum class access_class : uint8_t {
  open,           // anyone (health)
  operator_only,  // any operator: the admin token or a named operator (users see their own jobs only)
  admin_only,     // the admin token or a named operator with role admin
  monitoring,     // an admin or the scrape token (GET /metrics)
  registration,   // the operator or the pilot token
  worker_self,    // the worker named by the target (heartbeat, deregister, poll)
  operator_self,  // an admin, or the named operator the target names (their own token)
  worker_job,     // a worker acting on a job it holds (or held, for control)
  job_reader,     // a job's files: any operator (their own jobs) or a worker (the job it holds)
  internal,       // batond's own actors only
};
access_class access_of(command_kind k);

struct access_settings {
  // RelayMD's workers know only the shared operator token: accepted on worker calls when set.
  bool accept_shared_token = false;
};

// Refuses a caller who may not send this kind of command at all (401 no/forged credential is
// settled before this; here: 401 when a worker credential is required, 403 otherwise).
// target: the worker id in the path for worker_self commands.
std::optional<domain_error> authorize(const principal& who, command_kind k, const std::string& target, const access_settings& s);

// A worker acting on a job: it must be the job's current worker; control may also be read
// by a worker that held the job before (so it learns of a cancellation after the fact).
// The operator (shared-token mode) passes. 409 job_not_assigned_to_worker, as RelayMD's
// status for a wrong worker, or 403 for control.
std::optional<domain_error> authorize_job(const principal& who, command_kind k, const job& j);

// Whether who may see the job: admins any job, users their own. Another user's job is answered
// as if it did not exist (404), so ids of other people's jobs leak nothing.
bool may_see(const principal& who, const job& j);
// The same rule for what only names a job's user (the live event stream).
bool may_see_user_of(const principal& who, const std::string& job_user);
// Whether who sees every job (admins, workers, batond's loops): else only their own.
bool sees_every_job(const principal& who);

// Equal strings, in time that depends only on their lengths (credentials).
bool constant_time_equal(const std::string& a, const std::string& b);

}  // namespace baton::core
