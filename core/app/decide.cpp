#include "core/app/decide.hpp"
#include "core/app/storage_decide.hpp"
#include "core/util/time.hpp"

#include "core/world/dag.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/world/preemption.hpp"
#include "core/provisioning/provisioning_basis.hpp"
#include "core/world/scheduling.hpp"
#include "events/envelope.hpp"

namespace baton::core {
namespace {

using nlohmann::json;
namespace C = commands;
namespace R = results;

// kind_of() is the variant's index: the alternatives must stay in command_kind's order.
static_assert(kind_of_v<C::create_job> == command_kind::create_job && kind_of_v<C::job_history> == command_kind::job_history &&
              kind_of_v<C::register_worker> == command_kind::register_worker &&
              kind_of_v<C::fail_job> == command_kind::fail_job &&
              kind_of_v<C::health_warnings> == command_kind::health_warnings &&
              kind_of_v<C::stale_allocations_checked> == command_kind::stale_allocations_checked &&
              kind_of_v<C::salad_failed> == command_kind::salad_failed && kind_of_v<C::hold_job> == command_kind::hold_job &&
              kind_of_v<C::recalculate_priorities> == command_kind::recalculate_priorities &&
              kind_of_v<C::list_operators> == command_kind::list_operators && kind_of_v<C::plan_now> == command_kind::plan_now &&
              kind_of_v<C::audit_export> == command_kind::audit_export && kind_of_v<C::metrics> == command_kind::metrics &&
              kind_of_v<C::event_stream> == command_kind::event_stream &&
              kind_of_v<C::rotate_operator_token> == command_kind::rotate_operator_token &&
              kind_of_v<C::rotate_worker_credential> == command_kind::rotate_worker_credential &&
              kind_of_v<C::rotate_pilot_token> == command_kind::rotate_pilot_token &&
              kind_of_v<C::blob_upload> == command_kind::blob_upload &&
              kind_of_v<C::files_commit> == command_kind::files_commit &&
              kind_of_v<C::blob_corrupt> == command_kind::blob_corrupt &&
              kind_of_v<C::create_jobs> == command_kind::create_jobs && kind_of_v<C::summary> == command_kind::summary &&
              kind_of_v<C::minute_stats> == command_kind::minute_stats &&
              std::variant_size_v<command> == static_cast<size_t>(command_kind::minute_stats) + 1);

// A decision's events with the result, or its error refusing the command.
outcome from(decision d, result value, time_us at) {
  if (d.error) return refused(std::move(*d.error), at);
  return answered(std::move(value), at, std::move(d.events));
}

// --- liveness and lookups ---
std::string derived_state(const world& w, const worker& wk, const lease_book& leases, const scheduler_settings& s, time_us now) {
  if (wk.gone) return "gone";
  if (wk.placeholder) return "provisioning";
  if (!leases.fresh(wk.id, s.liveness, now)) return "stale";
  return w.held_job(wk.id) ? "busy" : "idle";
}

bool on_configured_cluster(const scheduler_settings& s, const worker& wk) {
  auto c = wk.cluster();
  return !c.empty() && find_named(s.clusters, c) != nullptr;
}

// A Slurm worker silent this long is reaped without waiting for squeue's word (the silence
// counts from no earlier than the start-up grace, as leases do).
bool silent_past_cap(const scheduler_settings& s, time_us last_heartbeat, time_us now) {
  return now - std::max(last_heartbeat, s.liveness.grace_from_us) >= s.hpc_silent_cap_us;
}

// The lease facts a reap rests on, recorded with it (rereap() decides it again from them):
// the staleness rule in force, and for a Slurm worker reaped without squeue's word the cap
// on its silence; for one reaped on squeue's word, that squeue did not list its allocation.
ev::lease_facts lease_facts(const scheduler_settings& s, const std::string& why) {
  ev::lease_facts facts;
  facts.stale_after_us = s.liveness.stale_after_us;
  facts.grace_from = util::format_time_us(s.liveness.grace_from_us);
  if (why == "silent_past_cap") facts.hpc_silent_cap_us = s.hpc_silent_cap_us;
  if (why == "allocation_gone") facts.squeue_listed = false;
  return facts;
}

decision reap_one(const world& w, const worker& wk, time_us lease, time_us now, const std::string& why,
                  const scheduler_settings& s) {
  auto d = decide_reap(wk, lease, now);
  for (auto& e : d.events)
    if (auto* reaped = std::get_if<ev::worker_reaped>(&e.payload)) {
      reaped->why = why;
      reaped->lease = lease_facts(s, why);
    }
  if (const std::string* held = w.held_job(wk.id)) d.append(decide_worker_lost(*w.find_job(*held), loss_cause::reaped, now));
  return d;
}

R::job_row row_of(const world& w, const scheduler_settings& s, const job& j) {
  std::optional<planned_slot> slot;
  if (const planned_slot* r = reservation_of(w, j.id); r && j.status == job_status::queued) slot = *r;
  R::job_row row{j, queue_blocked_reason(w, s.clusters, j), pending_reason(w, j), cannot_run_reason(w, j), slot, false, {}};
  if (const array_task* a = w.array_of(j.id)) row.array = *a;
  return row;
}

// --- validation the domain owns (what the config knows) ---
std::optional<domain_error> unknown_image(const scheduler_settings& s, const std::string& image) {
  if (known_images(s).count(image)) return std::nullopt;
  // RelayMD's wording for a job naming an image no profile has; baton asks the same of workers.
  return domain_error{error_kind::invalid, "unknown_worker_image", "Unknown worker image profile: " + image, json::object(),
                      "worker_image_key"};
}

// RelayMD's 422 for a pin no configured cluster has. With no clusters configured, pins name
// the cluster part of hand-started workers' provider ids, and any name is accepted.
std::optional<domain_error> unknown_pin(const scheduler_settings& s, const std::vector<std::string>& pins) {
  if (s.clusters.empty()) return std::nullopt;
  json known = json::array();
  for (const auto& c : s.clusters) known.push_back(c.name);
  for (const auto& p : pins)
    if (!find_named(s.clusters, p))
      return domain_error{
          error_kind::invalid,
          "unknown_preferred_cluster",
          "unknown preferred cluster '" + p + "'",
          {{"detail", {{"error", "unknown_preferred_cluster"}, {"cluster_name", p}, {"known_cluster_names", known}}}},
          "preferred_clusters"};
  return std::nullopt;
}

// --- jobs ---
// The reply to a create or requeue: the new job as it will be once its events are applied.
job preview_of(const std::string& id, const decision& d, time_us now) {
  job preview;
  preview.id = id;
  for (const auto& e : d.events)
    if (e.stream == job_stream(id)) evolve(preview, e.payload, now);
  return preview;
}

// A job the caller may see (admins: any; users: their own), or nullptr: another user's job
// is answered as not found.
const job* visible_job(const world& w, const principal& who, const std::string& id) {
  const job* j = w.find_job(id);
  return j && may_see(who, *j) ? j : nullptr;
}

// The same for a pruned job (its stub).
std::optional<pruned_job> visible_pruned(const world& w, const principal& who, const std::string& id) {
  auto p = w.find_pruned(id);
  if (p && !may_see_user_of(who, p->user)) return std::nullopt;
  return p;
}

// Why a command on a job visible_job() did not find is refused: the caller's pruned job is a
// 409 (nothing more can happen to it), anything else not found.
domain_error no_such_job(const world& w, const principal& who, const std::string& id) {
  auto p = visible_pruned(w, who, id);
  return p ? job_pruned(id, p->status) : not_found("Job", id);
}

// A pruned job's row as the world has it: what its stub keeps, marked for the HTTP layer to
// fill from the job's stream in the log.
R::job_row archived_row(const std::string& id, const pruned_job& p) {
  R::job_row row;
  row.j.id = id;
  row.j.status = p.status;
  row.j.created_at = p.created_at;
  row.j.user = p.user;
  row.j.worker_image_key = p.worker_image_key;
  row.j.assigned_worker_id = p.assigned_worker_id;
  row.j.pruned = true;
  row.archived = true;
  return row;
}

// The accounts a user may charge: those their operator record names, else those whose users
// list them in the tree (config order).
std::vector<std::string> chargeable_accounts(const world& w, const priority_policy& pol, const std::string& user) {
  if (auto it = w.operators.find(user); it != w.operators.end() && !it->second.revoked && !it->second.accounts.empty())
    return it->second.accounts;
  return pol.accounts_of(user);
}

// What the jobs before this one in a batch (POST /jobs/batch) change for it: their ids are
// taken, they count against their users' caps, a later one may depend on them, and only the
// first of them claims an unclaimed upload. Empty for POST /jobs.
struct batch_so_far {
  std::set<std::string> ids;
  std::map<std::string, uint32_t> jobs_of_user;
  std::set<std::pair<std::string, std::string>> claimed;  // (uploader, sha256)
};

// The priority fields of a new job, with the policy's defaults; an unknown name is a 422
// naming the field, a user at the job cap a 429 naming the limit.
std::optional<domain_error> fill_priority_fields(const world& w, const priority_policy& pol, const principal& caller,
                                                 const C::create_job& c, create_job& cj, const batch_so_far& batch) {
  auto unknown = [](const std::string& field, const std::string& value, json known) {
    return domain_error{
        error_kind::invalid, "unknown_" + field, "unknown " + field + " '" + value + "'", {{"known", std::move(known)}}, field};
  };
  auto names = [](const auto& defs, json out = json::array()) {
    for (const auto& d : defs) out.push_back(d.name);
    return out;
  };
  bool user_caller = caller.k == principal::kind::operator_ && !caller.admin;
  if (user_caller && c.user && *c.user != caller.name)
    return domain_error{error_kind::forbidden,
                        "submit_for_another_user",
                        "only an admin submits jobs for another user",
                        {{"user", *c.user}},
                        "user"};
  cj.user = c.user.value_or(caller_user(caller.name));
  cj.partition = c.partition.value_or(pol.default_partition);
  if (!pol.partition(cj.partition)) return unknown("partition", cj.partition, names(pol.partitions));
  cj.qos = c.qos.value_or(pol.default_qos);
  if (!pol.find_qos(cj.qos)) return unknown("qos", cj.qos, names(pol.qos));
  auto mine = chargeable_accounts(w, pol, cj.user);
  cj.account = c.account.value_or(mine.empty() ? pol.default_account : mine.front());
  if (cj.account != "root" && !pol.account(cj.account))
    return unknown("account", cj.account, names(pol.accounts, json::array({"root"})));
  if (user_caller && std::find(mine.begin(), mine.end(), cj.account) == mine.end() &&
      !(mine.empty() && cj.account == pol.default_account))
    return domain_error{error_kind::forbidden,
                        "account_not_chargeable",
                        "user '" + cj.user + "' may not charge account '" + cj.account + "'",
                        {{"account", cj.account}, {"chargeable", mine}},
                        "account"};
  cj.nice = c.nice;
  cj.gpu_count = c.gpu_count;
  cj.time_limit_seconds = c.time_limit_seconds;
  cj.checkpoints = c.checkpoints;
  cj.requeue = c.requeue;
  cj.interactive = c.interactive;
  cj.conformance = c.conformance;
  cj.hold = c.hold;
  auto active = w.active_jobs_by_user.find(cj.user);
  auto earlier = batch.jobs_of_user.find(cj.user);
  uint64_t n =
      (active == w.active_jobs_by_user.end() ? 0 : active->second) + (earlier == batch.jobs_of_user.end() ? 0 : earlier->second);
  if (n >= pol.max_jobs_per_user)
    return domain_error{
        error_kind::over_limit,
        "max_jobs_per_user",
        "user '" + cj.user + "' has " + std::to_string(n) + " pending or running jobs, the limit (max_jobs_per_user)",
        {{"limit", "max_jobs_per_user"}, {"max", pol.max_jobs_per_user}, {"user", cj.user}},
        ""};
  return std::nullopt;
}

outcome create(const world& w, const scheduler_settings& s, const principal& caller, const C::create_job& c, time_us now,
               const batch_so_far& batch = {}) {
  if (auto e = unknown_pin(s, c.preferred_clusters)) return refused(*e, now);
  create_job cj;
  cj.id = c.id;
  cj.title = c.title;
  cj.input_bundle_path = c.input_bundle ? blob_uri(*c.input_bundle) : c.input_bundle_path;
  cj.worker_image_key = c.worker_image_key.value_or(s.default_worker_image);
  cj.comment = c.comment;
  cj.preferred_clusters = c.preferred_clusters;
  cj.max_attempts = c.max_attempts.value_or(s.max_attempts);
  if (auto e = unknown_image(s, cj.worker_image_key)) return refused(*e, now);
  if (auto e = fill_priority_fields(w, s.priority, caller, c, cj, batch)) return refused(*e, now);
  cj.depends_on = without_duplicates(c.depends_on);
  cj.array_id = c.array_id;
  cj.array_index = c.array_index;
  if (w.find_pruned(c.id) || batch.ids.count(c.id)) return refused(job_exists(c.id), now);
  auto d = decide_create(w.find_job(c.id), cj, now);
  if (d.error) return refused(*d.error, now);
  // Parents made earlier in the same batch are the caller's new, queued jobs: nothing to
  // check (and no cycle can pass through a job that has no children yet).
  std::vector<dependency> in_world;
  for (const auto& dep : cj.depends_on)
    if (!batch.ids.count(dep.job_id)) in_world.push_back(dep);
  if (auto e = check_new_dependencies(w, caller, cj.id, in_world, s.priority)) return refused(*e, now);
  auto bound = bind_bundle(w, caller, cj.id, cj.user, c.input_bundle);
  if (bound.error) return refused(*bound.error, now);
  if (bound.bound) {
    auto& claim = std::get<ev::job_bound>(bound.bound->payload).claimed;
    if (claim && batch.claimed.count({claim->user, claim->sha256})) claim.reset();  // an earlier job of the batch claimed it
    d.events.push_back(std::move(*bound.bound));
  }
  auto preview = preview_of(c.id, d, now);
  set_priority(w, preview);  // the priority GET shows right after, as applying the creation sets it
  return from(std::move(d), row_of(w, s, preview), now);
}

// POST /jobs/batch: each job decided as POST /jobs decides it, after the ones before it; all
// are made, or none. Every refusal is reported with its index (a batch is bounded, so its
// refusals are: a rerun of an import finds each existing id in one answer).
outcome create_batch(const world& w, const scheduler_settings& s, const principal& caller, const C::create_jobs& c, time_us now) {
  batch_so_far so_far;
  decision all;
  R::jobs_created made;
  made.array_id = c.array_id;
  made.items.reserve(c.jobs.size());
  json refusals = json::array();
  size_t refused_count = 0;
  std::optional<error_kind> kind;  // the refusals' kind when they share one
  bool mixed = false;
  for (size_t i = 0; i < c.jobs.size(); ++i) {
    const auto& job_cmd = c.jobs[i];
    outcome o = create(w, s, caller, job_cmd, now, so_far);
    if (o.answer.error) {
      const auto& e = *o.answer.error;
      if (kind && *kind != e.kind) mixed = true;
      kind = e.kind;
      ++refused_count;
      json r = {{"index", i}, {"error", e.code}, {"detail", e.message}};
      if (!e.field.empty()) r["field"] = e.field;
      if (!job_cmd.id.empty()) r["id"] = job_cmd.id;
      if (e.details.is_object() && e.details.contains("known")) r["known"] = e.details["known"];
      refusals.push_back(std::move(r));
      continue;
    }
    const auto& row = std::get<R::job_row>(o.answer.value);
    so_far.ids.insert(row.j.id);
    ++so_far.jobs_of_user[row.j.user];
    for (auto& ev : o.events) {
      if (auto* bound = std::get_if<ev::job_bound>(&ev.payload); bound && bound->claimed)
        so_far.claimed.emplace(bound->claimed->user, bound->claimed->sha256);
      all.events.push_back(std::move(ev));
    }
    std::optional<uint32_t> index;
    if (!c.array_id.empty()) index = job_cmd.array_index;
    made.items.push_back({row.j.id, row.j.priority, index, row.pending_detail});
  }
  if (refused_count)
    return refused({mixed ? error_kind::invalid : *kind,
                    "batch_refused",
                    std::to_string(refused_count) + " of " + std::to_string(c.jobs.size()) +
                        " jobs refused; none was created (each refusal names its index)",
                    {{"refused", std::move(refusals)}, {"refused_count", refused_count}, {"jobs", c.jobs.size()}},
                    "jobs"},
                   now);
  return from(std::move(all), std::move(made), now);
}

// A cancel, hold or release naming a job array's id: applied to each task it applies to
// (Slurm's scancel and scontrol hold of an array job), in index order, in one decision.
// Empty when the id names no array the caller may see.
enum class array_action { cancel, hold, release };
std::optional<outcome> act_on_array(const world& w, const principal& who, const std::string& id, array_action action, bool force,
                                    time_us now) {
  auto arr = w.arrays.find(id);
  if (arr == w.arrays.end()) return std::nullopt;
  bool by_admin = who.k != principal::kind::operator_ || who.admin;
  R::array_acted out;
  out.array_id = id;
  decision all;
  bool any_visible = false;
  for (const auto& [index, job_id] : arr->second) {
    const job* j = visible_job(w, who, job_id);
    if (!j) continue;
    any_visible = true;
    decision d;
    if (action == array_action::cancel) {
      if (!is_terminal(j->status) && j->status != job_status::cancelling) d = decide_cancel(*j, force, now);
    } else if (j->status == job_status::queued) {
      d = action == array_action::hold ? decide_hold(*j, by_admin, now) : decide_release(*j, by_admin, now);
    }
    if (d.error || d.events.empty()) {
      ++out.unchanged[to_string(j->status)];
      continue;
    }
    all.append(std::move(d));
    ++out.changed;
  }
  if (!any_visible) return std::nullopt;
  return from(std::move(all), std::move(out), now);
}

outcome list_jobs(const world& w, const scheduler_settings& s, const principal& who, const C::list_jobs& q, time_us now) {
  R::job_page page;
  page.offset = q.offset;
  page.limit = q.limit;
  // A job (or a pruned one's stub) the query asks for and the caller may see.
  auto wanted = [&](job_status status, const std::string& worker_id, const std::string& image, const std::string& user) {
    return (q.statuses.empty() || q.statuses.count(to_string(status))) && (q.worker_id.empty() || worker_id == q.worker_id) &&
           (q.worker_image_key.empty() || image == q.worker_image_key) && may_see_user_of(who, user);
  };
  auto on_page = [&] { return page.total++ >= q.offset && page.items.size() < q.limit; };
  // j: the job, found once by the walk; nullptr for a pruned job's stub.
  auto add_job = [&](const std::string& id, const job* j) {
    if (j) {
      if ((!j->pruned || q.include_pruned) && wanted(j->status, j->assigned_worker_id, j->worker_image_key, j->user) && on_page())
        page.items.push_back(row_of(w, s, *j));
    } else if (auto p = w.find_pruned(id)) {
      if (wanted(p->status, p->assigned_worker_id, p->worker_image_key, p->user) && on_page())
        page.items.push_back(archived_row(id, *p));
    }
  };
  if (!q.array_id.empty()) {
    if (auto arr = w.arrays.find(q.array_id); arr != w.arrays.end())
      for (const auto& [index, id] : arr->second) add_job(id, w.jobs.find(id));
  } else if (q.include_pruned)
    for_each_job_by_created(w, true, add_job);
  else
    for (auto it = w.by_created.rbegin(); it != w.by_created.rend(); ++it) {
      const job* j = w.jobs.find(it->second);
      add_job(j->id, j);
    }
  return answered(std::move(page), now);
}

outcome requeue(const world& w, const scheduler_settings& s, const principal& who, const C::requeue_job& c, time_us now) {
  const job* j = visible_job(w, who, c.id);
  if (!j) return refused(no_such_job(w, who, c.id), now);
  auto d = decide_requeue(*j, c.new_id, now);
  if (d.error) return refused(*d.error, now);
  if (auto e = check_requeue_dependencies(w, *j, s.priority)) return refused(*e, now);
  if (auto bound = bind_clone(w, *j, c.new_id)) d.events.push_back(std::move(*bound));
  auto preview = preview_of(c.new_id, d, now);
  set_priority(w, preview);
  return from(std::move(d), row_of(w, s, preview), now);
}

outcome prune(const world& w, const C::prune_jobs& c, time_us now) {
  time_us cutoff = now - c.older_than_seconds * 1'000'000LL;
  decision d;
  for (const auto& [id, j] : w.jobs.by_id())  // (the events in id order)
    if (is_terminal(j.status) && !j.pruned && c.statuses.count(to_string(j.status)) && j.updated_at < cutoff) {
      d.append(decide_prune(j, now));
      if (auto gone = release_pruned(w, j.id)) d.events.push_back(std::move(*gone));
    }
  size_t n = 0;
  for (const auto& e : d.events) n += std::holds_alternative<ev::job_pruned>(e.payload);
  return from(std::move(d), R::pruned{n}, now);
}

// --- workers ---
// What a pilot's credential may register (operators: anything). A placeholder's one-time
// credential registers its own pilot once, as that placeholder's provider id (filled in when
// the worker named none); the pilot token registers Salad workers only, while fewer than
// salad.max_replicas are live. So a stolen credential registers nothing new: a one-time one
// is spent or bound to an allocation that already has its worker, and the pilot token cannot
// pose as a Slurm pilot nor grow past the container group.
std::optional<domain_error> pilot_scope(const world& w, const scheduler_settings& s, const principal& who, register_worker& r) {
  if (who.k != principal::kind::pilot) return std::nullopt;
  if (!who.worker_id.empty()) {
    const worker* ph = w.find_worker(who.worker_id);
    if (!ph || !ph->placeholder || ph->gone || ph->registration_sha256.empty())
      return domain_error{error_kind::unauthenticated,
                          "pilot_credential_spent",
                          "this one-time pilot credential has registered its worker already, or its allocation ended",
                          {},
                          ""};
    if (r.kind != platform::hpc || (!r.provider_id.empty() && r.provider_id != ph->provider_id))
      return domain_error{error_kind::forbidden,
                          "pilot_credential_scope",
                          "this pilot credential registers only the worker of allocation " + ph->provider_id,
                          {{"provider_id", ph->provider_id}},
                          "provider_id"};
    r.provider_id = ph->provider_id;
    return std::nullopt;
  }
  if (r.kind != platform::salad)
    return domain_error{error_kind::forbidden,
                        "pilot_token_scope",
                        "the pilot token registers Salad workers only; Slurm pilots register with their own one-time credential",
                        {},
                        "platform"};
  int live = 0;
  for (const auto& [id, wk] : w.workers) live += !wk.gone && !wk.placeholder && wk.kind == platform::salad;
  if (!s.salad_enabled || live >= s.salad_max_replicas)
    return domain_error{error_kind::over_limit,
                        "salad_replicas_registered",
                        std::to_string(live) + " Salad workers are registered, as many as salad.max_replicas (" +
                            std::to_string(s.salad_enabled ? s.salad_max_replicas : 0) + ")",
                        {{"limit", s.salad_enabled ? s.salad_max_replicas : 0}},
                        "platform"};
  return std::nullopt;
}

outcome register_worker_cmd(const world& w, const scheduler_settings& s, const principal& who, const C::register_worker& c,
                            time_us now) {
  register_worker r;
  r.id = c.new_id;
  r.kind = c.kind;
  r.gpu_model = c.gpu_model;
  r.gpu_count = c.gpu_count;
  r.vram_gb = c.vram_gb;
  r.driver_version = c.driver_version;
  r.worker_image_key = c.worker_image_key.value_or(s.default_worker_image);
  r.provider_id = c.provider_id;
  r.credential_sha256 = c.credential_sha256;
  if (auto e = unknown_image(s, r.worker_image_key)) return refused(*e, now);
  if (c.allocation_ends_at) {
    // An allocation that already ended has no time for any job: the worker should not exist.
    if (*c.allocation_ends_at <= now)
      return refused({error_kind::invalid, "allocation_ended",
                      "allocation_ends_at " + util::format_time_us(*c.allocation_ends_at) + " is not after now (" +
                          util::format_time_us(now) + ")",
                      json::object(), "allocation_ends_at"},
                     now);
    r.allocation_ends_at = *c.allocation_ends_at;
  }
  if (auto e = pilot_scope(w, s, who, r)) return refused(*e, now);
  const worker* placeholder = nullptr;
  if (auto it = w.placeholder_by_provider.find(r.provider_id); !r.provider_id.empty() && it != w.placeholder_by_provider.end())
    placeholder = w.find_worker(it->second);
  auto d = decide_register(placeholder, r, now);
  if (d.error) return refused(*d.error, now);
  // One live worker per allocation: a worker registering again from the same allocation
  // (its agent restarted) retires the earlier one, whose job goes back to the queue. Only an
  // admin may do that: with the pilot token or a user's, anyone could evict any worker by
  // naming its provider id, and fail its job through max_attempts.
  if (!placeholder && !r.provider_id.empty())
    for (const auto& [id, old] : w.workers)
      if (!old.gone && !old.placeholder && old.provider_id == r.provider_id) {
        if (!(who.k == principal::kind::operator_ && who.admin))
          return refused({error_kind::conflict,
                          "provider_id_in_use",
                          "a live worker holds provider_id " + r.provider_id + "; only an admin may replace it",
                          {{"provider_id", r.provider_id}},
                          "provider_id"},
                         now);
        auto retire = decide_deregister(old, now);
        for (auto& e : retire.events)
          if (auto* gone = std::get_if<ev::worker_deregistered>(&e.payload)) gone->replaced_by = r.id;
        if (const std::string* held = w.held_job(old.id))
          retire.append(decide_worker_lost(*w.find_job(*held), loss_cause::orphaned, now));
        d.events.insert(d.events.begin(), retire.events.begin(), retire.events.end());
      }
  R::registered reg{placeholder ? placeholder->id : r.id, s.heartbeat_interval_seconds,
                    static_cast<double>(s.liveness.stale_after_us) / 1e6};
  return from(std::move(d), reg, now);
}

// The preemption the job's worker must act on, if one is in progress.
std::optional<R::preempt_notice> preempt_notice_of(const job& j) {
  if (j.preempted_by.empty()) return std::nullopt;
  return R::preempt_notice{j.id, j.preempted_by, j.preempt_mode, j.preempt_grace_until};
}

outcome heartbeat(const world& w, const C::heartbeat& c, time_us now) {
  const worker* wk = w.find_worker(c.worker_id);
  if (!wk || wk->gone) return refused(not_found("Worker", c.worker_id), now);
  decision d;
  result answer;
  if (const std::string* held = w.held_job(wk->id)) {
    const job& j = *w.find_job(*held);
    if (c.job_id == *held) d = decide_progress(j, wk->id, c.progress, c.progress_codes, now);
    if (auto notice = preempt_notice_of(j)) answer = R::heartbeat_ack{*notice};
  }
  return from(std::move(d), std::move(answer), now);
}

outcome deregister(const world& w, const C::deregister& c, time_us now) {
  const worker* wk = w.find_worker(c.worker_id);
  if (!wk || wk->gone) return refused(not_found("Worker", c.worker_id), now);
  auto d = decide_deregister(*wk, now);
  if (const std::string* held = w.held_job(wk->id))
    d.append(decide_worker_lost(*w.find_job(*held), loss_cause::deregistered, now));
  return from(std::move(d), std::monostate{}, now);
}

outcome rotate_credential(const world& w, const C::rotate_worker_credential& c, time_us now) {
  const worker* wk = w.find_worker(c.worker_id);
  if (!wk || wk->gone) return refused(not_found("Worker", c.worker_id), now);
  return from(decide_rotate_credential(*wk, c.credential_sha256, c.grace_seconds, now),
              R::rotated{c.worker_id, now + c.grace_seconds * 1'000'000}, now);
}

outcome no_job(const std::string& reason, time_us now) { return answered(R::poll_answer{std::nullopt, reason}, now); }

outcome poll(const world& w, const lease_book& leases, const scheduler_settings& s, const C::request_job& c, time_us now) {
  const worker* wk = w.find_worker(c.worker_id);
  if (!wk || wk->gone || wk->placeholder) return no_job(wk && wk->gone ? "worker_" + wk->gone_reason : "unknown_worker", now);
  if (!leases.fresh(wk->id, s.liveness, now)) return no_job("stale_worker", now);
  if (const std::string* held_id = w.held_job(wk->id)) {
    const job& held = *w.find_job(*held_id);
    if (held.status == job_status::assigned) {
      // The worker polls again before starting the job it won: the reply of that poll was lost
      // (a dropped connection, a 503 not_durable_yet). Without the same assignment again it
      // would hold a job it knows nothing of, heartbeating, never reaped.
      R::assignment again{held.id, held.input_bundle_path, held.latest_checkpoint_manifest_path, held.attempts, {}};
      if (const array_task* t = w.array_of(held.id)) again.array = *t;
      outcome o = answered(R::poll_answer{std::move(again), ""}, now);
      o.after_durable = true;
      return o;
    }
    if (held.status != job_status::cancelling) return no_job("worker_busy", now);
    // The worker is back for more: its cancelled job is finished, then it competes as usual.
    outcome o = from(decide_finish_cancel(held, now), R::poll_answer{std::nullopt, "worker_busy"}, now);
    o.again = true;
    return o;
  }
  auto choice = choose_assignment(w, wk->id, leases.stale(s.liveness, now), s.deadlines, now);
  if (!choice.job_id) return no_job("no_job_for_this_worker", now);
  const job& j = *w.find_job(*choice.job_id);
  R::assignment a{j.id, j.input_bundle_path, j.latest_checkpoint_manifest_path, next_attempt(j), {}};
  if (const array_task* t = w.array_of(j.id)) a.array = *t;
  return from(decide_assign(j, wk->id, std::move(*choice.record), now), R::poll_answer{a, ""}, now);
}

// GET /summary's counts: the jobs `who` may see by status (pruned ones left out) and their
// eligible queued ones, and every worker by the state GET /workers shows and its cluster.
R::metrics counts(const world& w, const lease_book& leases, const scheduler_settings& s, const principal& who, time_us now) {
  R::metrics m;
  const bool all = sees_every_job(who);
  w.jobs.for_each_unordered([&](const job& j) {
    if (!j.pruned && (all || may_see(who, j))) ++m.jobs[to_string(j.status)];
  });
  for (const auto& [id, wk] : w.workers) ++m.workers[{derived_state(w, wk, leases, s, now), wk.cluster()}];
  for (const auto& [image, queue] : w.queued_by_image)
    if (all)
      m.eligible_queued += queue.size();
    else
      for (const auto& key : queue) m.eligible_queued += may_see(who, *key.owner);
  return m;
}

// GET /metrics: everything counted, and the storage book.
outcome count_for_metrics(const world& w, const lease_book& leases, const scheduler_settings& s, time_us now) {
  R::metrics m = counts(w, leases, s, principal::loop(), now);
  m.pruned = w.pruned.size();
  m.stored_blobs = w.storage.blobs.size();
  m.stored_bytes = w.storage.stored_bytes;
  m.unreferenced_blobs = w.storage.unreferenced.size();
  m.storage_used_by_user = w.storage.used_by_user;
  m.storage_quota_bytes = s.storage.user_quota_bytes;
  return answered(std::move(m), now);
}

// GET /workers: every worker, for capacity, but a user (core::may_see) sees which job a
// worker runs, and its allocation (provider id: the Slurm job that links a job to a node and
// its files), only when the job is theirs; an admin sees all.
outcome list_workers(const world& w, const lease_book& leases, const scheduler_settings& s, const principal& who,
                     const C::list_workers& q, time_us now) {
  R::worker_page page;
  page.offset = q.offset;
  page.limit = q.limit;
  for (auto it = w.by_registered.rbegin(); it != w.by_registered.rend(); ++it) {
    const worker& wk = w.workers.at(std::get<1>(*it));
    auto state = derived_state(w, wk, leases, s, now);
    if (q.states.empty() ? state == "gone" : !q.states.count(state)) continue;  // gone workers only when asked for
    if ((!q.worker_image_key.empty() && wk.worker_image_key != q.worker_image_key) ||
        (!q.cluster.empty() && wk.cluster() != q.cluster))
      continue;
    if (page.total++ >= q.offset && page.items.size() < q.limit) {
      const std::string* held = w.held_job(wk.id);
      const job* j = held ? w.find_job(*held) : nullptr;
      const bool theirs = j && may_see(who, *j);
      page.items.push_back({wk, state, leases.last(wk.id), theirs ? std::optional<std::string>(*held) : std::nullopt,
                            score_of(wk), !theirs && !sees_every_job(who)});
    }
  }
  return answered(std::move(page), now);
}

// --- a worker's reports: first whether this caller may act on the job, then the body ---
template <class Cmd>
outcome on_job(const world& w, const envelope& e, const Cmd& c, time_us now) {
  const job* j = w.find_job(c.id);
  if (!j) {  // a worker reporting on a pruned job hears 409, which RelayMD workers take as "stop"
    auto p = w.find_pruned(c.id);
    return refused(p ? job_pruned(c.id, p->status) : not_found("Job", c.id), now);
  }
  if (auto denied = authorize_job(e.caller, kind_of(e.cmd), *j)) return refused(*denied, now);
  if (e.invalid) return refused(invalid_body(*e.invalid), now);
  if constexpr (std::is_same_v<Cmd, C::job_control>) {
    // A worker that no longer holds the job (taken back after a preemption's grace, or
    // requeued without it) must stop its payload too.
    bool moved_on =
        e.caller.k == principal::kind::worker && (j->assigned_worker_id != e.caller.worker_id || !occupies_worker(j->status));
    bool cancel = j->status == job_status::cancelling || j->status == job_status::cancelled || moved_on;
    return answered(R::control{j->id, j->status, cancel, preempt_notice_of(*j)}, now);
  } else if constexpr (std::is_same_v<Cmd, C::start_job>) {
    return from(decide_start(*j, now), std::monostate{}, now);
  } else if constexpr (std::is_same_v<Cmd, C::checkpoint_job>) {
    return from(decide_checkpoint(*j, c.report, now), std::monostate{}, now);
  } else if constexpr (std::is_same_v<Cmd, C::handoff_start>) {
    ev::job_handoff_started details;
    details.reason = c.reason;
    details.progress_codes = c.progress_codes;
    details.progress = c.progress;
    details.deadline_epoch_seconds = c.deadline_epoch_seconds;
    details.message = c.message;
    return from(decide_handoff_start(*j, std::move(details), now), std::monostate{}, now);
  } else if constexpr (std::is_same_v<Cmd, C::handoff_complete>) {
    return from(decide_handoff_complete(*j, c.report, now), std::monostate{}, now);
  } else if constexpr (std::is_same_v<Cmd, C::complete_job>) {
    return from(decide_complete(*j, now), std::monostate{}, now);
  } else {
    static_assert(std::is_same_v<Cmd, C::fail_job>);
    ev::job_failed details;
    details.failure_artifact_path = c.failure_artifact_path;
    details.reason = c.reason.value_or("payload_failed");
    details.detail = c.detail;
    return from(decide_fail(*j, std::move(details), now), std::monostate{}, now);
  }
}

// --- clusters, configuration, health ---
outcome list_clusters(const world& w, const scheduler_settings& s, time_us now) {
  R::clusters out;
  for (const auto& c : s.clusters) {
    R::cluster_row row{c, !w.disabled_clusters.count(c.name), 0, 0, nullptr};
    for (const auto& [id, wk] : w.workers) {
      if (wk.gone || wk.cluster() != c.name) continue;
      ++(wk.placeholder ? row.pending_placeholders : row.workers);
    }
    if (auto it = w.last_submission_failure.find(c.name); it != w.last_submission_failure.end())
      row.last_submission_failure = it->second;
    out.items.push_back(std::move(row));
  }
  return answered(std::move(out), now);
}

// RelayMD's PUT /config/slurm-clusters/enabled: the body names every configured cluster,
// no more and no fewer; each change is recorded with the operator's identity.
outcome set_clusters_enabled(const world& w, const scheduler_settings& s, const C::set_clusters_enabled& c, time_us now) {
  json unknown = json::array(), missing = json::array();
  for (const auto& [name, value] : c.enabled)
    if (!find_named(s.clusters, name)) unknown.push_back(name);
  for (const auto& spec : s.clusters)
    if (!c.enabled.count(spec.name)) missing.push_back(spec.name);
  if (!unknown.empty() || !missing.empty())
    return refused({error_kind::mismatch,
                    "cluster_names_mismatch",
                    "the body must name every configured cluster exactly",
                    {{"detail", {{"unknown_cluster_names", unknown}, {"missing_cluster_names", missing}}}},
                    "enabled"},
                   now);
  decision all;
  for (const auto& spec : s.clusters)  // config order: a stable event order
    all.append(decide_cluster_enabled(w, spec.name, c.enabled.at(spec.name), c.reason));
  return from(std::move(all), std::monostate{}, now);
}

// What GET /healthz warns about (RelayMD's wording for the first).
outcome health_warnings(const world& w, const scheduler_settings& s, time_us now) {
  R::warnings out;
  bool all_disabled = !s.clusters.empty();
  for (const auto& c : s.clusters)
    if (!w.disabled_clusters.count(c.name)) all_disabled = false;
  if (all_disabled && !w.queued.empty())
    out.items.push_back("Queued jobs are waiting, but all SLURM clusters are disabled for provisioning.");
  return answered(std::move(out), now);
}

// --- cluster actors ---
template <class Cmd>
outcome cluster_report(const world& w, const lease_book& leases, const scheduler_settings& s, const Cmd& c, time_us now) {
  const cluster_spec* spec = find_named(s.clusters, c.cluster);
  if (!spec) return refused(not_found("Cluster", c.cluster), now);
  if constexpr (std::is_same_v<Cmd, C::cluster_placeholders>) {
    // Also the stale workers of this cluster: the reaper waits for squeue's word on them.
    R::cluster_watch out{placeholder_slurm_ids(w, spec->name), {}};
    for (const auto& id : leases.stale(s.liveness, now)) {
      const worker* wk = w.find_worker(id);
      if (wk && !wk->gone && !wk->placeholder && wk->cluster() == spec->name) out.stale_slurm_ids.push_back(slurm_id_of(*wk));
    }
    return answered(std::move(out), now);
  } else if constexpr (std::is_same_v<Cmd, C::stale_allocations_checked>) {
    decision d;
    for (const auto& id : c.checked) {
      if (c.alive.count(id)) continue;
      for (const auto& [wid, wk] : w.workers)
        if (!wk.gone && !wk.placeholder && wk.provider_id == spec->name + ":" + id && !leases.fresh(wid, s.liveness, now))
          d.append(reap_one(w, wk, leases.last(wid).value_or(wk.registered_at), now, "allocation_gone", s));
    }
    size_t n = d.events.size();
    return from(std::move(d), R::counted{n}, now);
  } else if constexpr (std::is_same_v<Cmd, C::placeholders_checked>) {
    auto d = decide_placeholders_checked(w, spec->name, c.checked, c.alive, now);
    size_t n = d.events.size();
    return from(std::move(d), R::counted{n}, now);
  } else if constexpr (std::is_same_v<Cmd, C::cluster_plan>) {
    auto stale = leases.stale(s.liveness, now);
    auto plans = plan_submissions(w, *spec, stale, s.deadlines, s.backfill.placeholder_start_estimate, now);
    record_plan_basis(plans, w, *spec, stale, s.deadlines, s.backfill.placeholder_start_estimate, now);
    return answered(R::plans{std::move(plans)}, now);
  } else if constexpr (std::is_same_v<Cmd, C::placeholder_submitted>) {
    return from(decide_placeholder(w, *spec, c.worker_id, c.image, c.slurm_id, c.plan_record, now, c.registration_sha256),
                R::placeholder_made{c.worker_id}, now);
  } else if constexpr (std::is_same_v<Cmd, C::submission_failed>) {
    ev::cluster_submission_failed failure;
    failure.stage = c.stage;
    failure.exit_code = c.exit_code;
    failure.stderr_text = c.stderr_text;
    if (!c.target.empty()) failure.target = c.target;
    return from(decide_submission_failed(spec->name, c.image, std::move(failure)), std::monostate{}, now);
  } else {
    static_assert(std::is_same_v<Cmd, C::set_cluster_enabled>);
    return from(decide_cluster_enabled(w, spec->name, c.enabled, c.reason), R::cluster_toggled{spec->name, c.enabled}, now);
  }
}

// --- the Salad autoscaler ---
outcome salad(const world& w, const lease_book& leases, const scheduler_settings& s, const command& cmd, time_us now) {
  if (!s.salad_enabled) return refused({error_kind::not_found, "not_configured", "Salad is not configured", {}, ""}, now);
  if (std::holds_alternative<C::salad_status>(cmd) || std::holds_alternative<C::salad_target>(cmd)) {
    auto stale = leases.stale(s.liveness, now);
    auto t = salad_target(w, s.salad_image, s.salad_max_replicas, stale);
    record_target_basis(t, w, stale);
    if (std::holds_alternative<C::salad_target>(cmd)) return answered(std::move(t), now);
    return answered(R::salad_view{w.salad_status, s.salad_image, s.salad_max_replicas, std::move(t)}, now);
  }
  if (auto* scaled = std::get_if<C::salad_scaled>(&cmd))
    return from(decide_salad_scaled(scaled->current, scaled->target), std::monostate{}, now);
  const auto& failed = std::get<C::salad_failed>(cmd);
  return from(decide_salad_failed(failed.stage, failed.message), std::monostate{}, now);
}

// --- who goes first ---
R::priority_row priority_row_of(const world& w, const job& j) {
  return {j, explain_priority(w, j), pending_reason(w, j), cannot_run_reason(w, j)};
}

template <class Cmd>
outcome who_goes_first(const world& w, const scheduler_settings& s, const principal& who, const Cmd& c, time_us now) {
  if constexpr (std::is_same_v<Cmd, C::hold_job> || std::is_same_v<Cmd, C::release_job> || std::is_same_v<Cmd, C::job_priority>) {
    const job* j = visible_job(w, who, c.id);
    if constexpr (!std::is_same_v<Cmd, C::job_priority>)
      if (!j)
        if (auto o = act_on_array(w, who, c.id, std::is_same_v<Cmd, C::hold_job> ? array_action::hold : array_action::release,
                                  false, now))
          return std::move(*o);
    if (!j) return refused(no_such_job(w, who, c.id), now);
    if constexpr (std::is_same_v<Cmd, C::job_priority>) {
      R::priorities out{policy_in_force(w), w.priority.calculated_at, w.priority.policy.multifactor.weights, {}};
      out.total = 1;
      out.items.push_back(priority_row_of(w, *j));
      return answered(std::move(out), now);
    } else {
      bool by_admin = who.k != principal::kind::operator_ || who.admin;
      auto d = std::is_same_v<Cmd, C::hold_job> ? decide_hold(*j, by_admin, now) : decide_release(*j, by_admin, now);
      if (d.error) return refused(*d.error, now);
      job after = *j;  // the reply shows the job as its events will make it
      for (const auto& e : d.events) evolve(after, e.payload, now);
      return from(std::move(d), row_of(w, s, after), now);
    }
  } else if constexpr (std::is_same_v<Cmd, C::list_priorities>) {
    R::priorities out{policy_in_force(w), w.priority.calculated_at, w.priority.policy.multifactor.weights, {}};
    // Every visible job is counted; only the page's rows are explained (the costly part).
    const size_t end = c.limit ? c.offset + c.limit : SIZE_MAX;
    for (const auto& id : queue_in_evaluation_order(w))
      if (const job* j = visible_job(w, who, id)) {
        if (out.total >= c.offset && out.total < end) out.items.push_back(priority_row_of(w, *j));
        ++out.total;
      }
    out.offset = c.offset;
    out.limit = c.limit;
    return answered(std::move(out), now);
  } else if constexpr (std::is_same_v<Cmd, C::fairshare>) {
    R::fairshare out{policy_name(s.priority), w.priority.calculated_at, fair_tree(share_tree(w, s.priority, now)),
                     w.priority.shares};
    return answered(std::move(out), now);
  } else {
    static_assert(std::is_same_v<Cmd, C::recalculate_priorities>);
    // Decided and put in force together; the scheduler actor instead holds the second event
    // back while it builds the new order between polls (core/world/staged_rekey.hpp).
    auto d = decide_recalculation(w, s.priority, now);
    if (is_deferred(d)) d.events.push_back(priorities_applied_event(now));
    return from(std::move(d), R::counted{w.queued.size()}, now);
  }
}

// --- named operators ---
template <class Cmd>
outcome operators(const world& w, const scheduler_settings& s, const Cmd& c, time_us now) {
  if constexpr (std::is_same_v<Cmd, C::create_operator>) {
    if (c.name == "admin")
      return refused({error_kind::invalid, "reserved_name", "'admin' names the admin token's holder", {}, "name"}, now);
    for (const auto& a : c.accounts)
      if (a != "root" && !s.priority.account(a))
        return refused({error_kind::invalid, "unknown_account", "unknown account '" + a + "'", {{"account", a}}, "accounts"},
                       now);
    auto it = w.operators.find(c.name);
    auto d = decide_create_operator(it == w.operators.end() ? nullptr : &it->second, c.name, c.admin, c.accounts, c.token_sha256);
    operator_account made{c.name, c.admin, c.accounts, {}, false, now, 0};
    return from(std::move(d), R::operators{{made}}, now);
  } else if constexpr (std::is_same_v<Cmd, C::revoke_operator>) {
    auto it = w.operators.find(c.name);
    if (it == w.operators.end()) return refused(not_found("Operator", c.name), now);
    return from(decide_revoke_operator(it->second), std::monostate{}, now);
  } else if constexpr (std::is_same_v<Cmd, C::rotate_operator_token>) {
    auto it = w.operators.find(c.name);
    if (it == w.operators.end()) return refused(not_found("Operator", c.name), now);
    const int64_t grace = c.grace_seconds;
    return from(decide_rotate_operator_token(it->second, c.token_sha256, grace, now), R::rotated{c.name, now + grace * 1'000'000},
                now);
  } else {
    static_assert(std::is_same_v<Cmd, C::list_operators>);
    R::operators out;
    for (const auto& [name, o] : w.operators) {
      out.items.push_back(o);
      out.items.back().token = {};
    }
    return answered(std::move(out), now);
  }
}

}  // namespace

std::set<std::string> known_images(const scheduler_settings& s) {
  std::set<std::string> keys = {s.default_worker_image};
  keys.insert(s.extra_worker_images.begin(), s.extra_worker_images.end());
  for (const auto& c : s.clusters) keys.insert(c.images.begin(), c.images.end());
  if (s.salad_enabled && !s.salad_image.empty()) keys.insert(s.salad_image);
  return keys;
}

outcome decide(const world& w, const lease_book& leases, const scheduler_settings& s, const envelope& e, time_us now) {
  // The HTTP layer asked the same question before reading the request; asked again here so
  // that no path into the core skips it.
  if (auto denied = authorize(e.caller, kind_of(e.cmd), named_target(e.cmd), {!s.worker_credentials_required}))
    return refused(*denied, now);
  return std::visit(
      [&](const auto& c) -> outcome {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, C::create_job>) {
          return create(w, s, e.caller, c, now);
        } else if constexpr (std::is_same_v<T, C::create_jobs>) {
          return create_batch(w, s, e.caller, c, now);
        } else if constexpr (std::is_same_v<T, C::summary>) {
          return answered(counts(w, leases, s, e.caller, now), now);
        } else if constexpr (std::is_same_v<T, C::hold_job> || std::is_same_v<T, C::release_job> ||
                             std::is_same_v<T, C::job_priority> || std::is_same_v<T, C::list_priorities> ||
                             std::is_same_v<T, C::fairshare> || std::is_same_v<T, C::recalculate_priorities>) {
          return who_goes_first(w, s, e.caller, c, now);
        } else if constexpr (std::is_same_v<T, C::create_operator> || std::is_same_v<T, C::revoke_operator> ||
                             std::is_same_v<T, C::list_operators> || std::is_same_v<T, C::rotate_operator_token>) {
          return operators(w, s, c, now);
        } else if constexpr (std::is_same_v<T, C::plan_now>) {
          outcome o = answered(std::monostate{}, now);
          o.plan_requested = true;
          return o;
        } else if constexpr (std::is_same_v<T, C::get_job>) {
          if (const job* j = visible_job(w, e.caller, c.id)) return answered(row_of(w, s, *j), now);
          auto p = visible_pruned(w, e.caller, c.id);
          return p ? answered(archived_row(c.id, *p), now) : refused(not_found("Job", c.id), now);
        } else if constexpr (std::is_same_v<T, C::list_jobs>) {
          return list_jobs(w, s, e.caller, c, now);
        } else if constexpr (std::is_same_v<T, C::cancel_job>) {
          const job* j = visible_job(w, e.caller, c.id);
          if (!j)
            if (auto o = act_on_array(w, e.caller, c.id, array_action::cancel, c.force, now)) return std::move(*o);
          return j ? from(decide_cancel(*j, c.force, now), std::monostate{}, now) : refused(no_such_job(w, e.caller, c.id), now);
        } else if constexpr (std::is_same_v<T, C::requeue_job>) {
          return requeue(w, s, e.caller, c, now);
        } else if constexpr (std::is_same_v<T, C::prune_jobs>) {
          return prune(w, c, now);
        } else if constexpr (std::is_same_v<T, C::job_history>) {
          return refused({error_kind::internal, "internal", "job history is answered by its read model", {}, ""}, now);
        } else if constexpr (std::is_same_v<T, C::metrics>) {
          return count_for_metrics(w, leases, s, now);
        } else if constexpr (std::is_same_v<T, C::event_stream>) {
          return refused({error_kind::internal, "internal", "the event stream is answered by its projection", {}, ""}, now);
        } else if constexpr (std::is_same_v<T, C::minute_stats>) {
          return refused({error_kind::internal, "internal", "per-minute counts are answered by their projection", {}, ""}, now);
        } else if constexpr (std::is_same_v<T, C::audit_export>) {
          return refused({error_kind::internal, "internal", "the audit export is answered from the log", {}, ""}, now);
        } else if constexpr (std::is_same_v<T, C::register_worker>) {
          return register_worker_cmd(w, s, e.caller, c, now);
        } else if constexpr (std::is_same_v<T, C::heartbeat>) {
          return heartbeat(w, c, now);
        } else if constexpr (std::is_same_v<T, C::deregister>) {
          return deregister(w, c, now);
        } else if constexpr (std::is_same_v<T, C::rotate_worker_credential>) {
          return rotate_credential(w, c, now);
        } else if constexpr (std::is_same_v<T, C::rotate_pilot_token>) {
          return from(decide_rotate_pilot_token(w.pilot_token, c.configured, c.token_sha256, c.grace_seconds, now),
                      R::rotated{"pilot", now + c.grace_seconds * 1'000'000}, now);
        } else if constexpr (std::is_same_v<T, C::request_job>) {
          return poll(w, leases, s, c, now);
        } else if constexpr (std::is_same_v<T, C::list_workers>) {
          return list_workers(w, leases, s, e.caller, c, now);
        } else if constexpr (std::is_same_v<T, C::job_control> || std::is_same_v<T, C::start_job> ||
                             std::is_same_v<T, C::checkpoint_job> || std::is_same_v<T, C::handoff_start> ||
                             std::is_same_v<T, C::handoff_complete> || std::is_same_v<T, C::complete_job> ||
                             std::is_same_v<T, C::fail_job>) {
          return on_job(w, e, c, now);
        } else if constexpr (std::is_same_v<T, C::blob_upload> || std::is_same_v<T, C::blob_uploaded> ||
                             std::is_same_v<T, C::files_begin> || std::is_same_v<T, C::files_commit> ||
                             std::is_same_v<T, C::job_files> || std::is_same_v<T, C::storage_collect> ||
                             std::is_same_v<T, C::storage_removed> || std::is_same_v<T, C::blob_corrupt>) {
          return decide_storage(w, s, e, now);
        } else if constexpr (std::is_same_v<T, C::list_clusters>) {
          return list_clusters(w, s, now);
        } else if constexpr (std::is_same_v<T, C::set_clusters_enabled>) {
          return set_clusters_enabled(w, s, c, now);
        } else if constexpr (std::is_same_v<T, C::list_worker_images>) {
          auto keys = known_images(s);
          return answered(R::worker_images{s.default_worker_image, {keys.begin(), keys.end()}}, now);
        } else if constexpr (std::is_same_v<T, C::health_warnings>) {
          return health_warnings(w, s, now);
        } else if constexpr (std::is_same_v<T, C::set_cluster_enabled> || std::is_same_v<T, C::cluster_placeholders> ||
                             std::is_same_v<T, C::placeholders_checked> || std::is_same_v<T, C::cluster_plan> ||
                             std::is_same_v<T, C::placeholder_submitted> || std::is_same_v<T, C::submission_failed> ||
                             std::is_same_v<T, C::stale_allocations_checked>) {
          return cluster_report(w, leases, s, c, now);
        } else {
          static_assert(std::is_same_v<T, C::salad_status> || std::is_same_v<T, C::salad_target> ||
                        std::is_same_v<T, C::salad_scaled> || std::is_same_v<T, C::salad_failed>);
          return salad(w, leases, s, e.cmd, now);
        }
      },
      e.cmd);
}

decision reap(const world& w, const lease_book& leases, const scheduler_settings& s, time_us now) {
  decision out;
  for (const auto& [id, wk] : w.workers) {
    if (wk.gone || wk.placeholder || leases.fresh(id, s.liveness, now)) continue;
    auto lease = leases.last(id).value_or(wk.registered_at);
    bool slurm = on_configured_cluster(s, wk);
    // Its allocation may still run (a network blip, a busy login node): requeueing now
    // could put the job on two workers. The cluster actor's squeue check decides, unless
    // the silence has gone on too long.
    if (slurm && !silent_past_cap(s, lease, now)) continue;
    out.append(reap_one(w, wk, lease, now, slurm ? "silent_past_cap" : "heartbeat_timeout", s));
  }
  out.append(decide_unconfigured_placeholders(w, s.clusters));
  // Jobs still held by a worker that is gone (or never known): nothing else will free them.
  w.job_of_worker.for_each([&](const std::string& worker_id, const std::string& job_id) {
    const worker* wk = w.find_worker(worker_id);
    if (!wk || wk->gone) out.append(decide_worker_lost(w.jobs.at(job_id), loss_cause::orphaned, now));
  });
  return out;
}

decision rereap(const world& w, const std::string& worker_id, const ev::worker_reaped& recorded, time_us now) {
  const worker* wk = w.find_worker(worker_id);
  if (!wk || !recorded.lease) return {};
  const auto& facts = *recorded.lease;
  scheduler_settings s;
  s.liveness.stale_after_us = facts.stale_after_us;
  s.liveness.grace_from_us = util::parse_time_us(facts.grace_from).value_or(0);
  s.hpc_silent_cap_us = facts.hpc_silent_cap_us.value_or(s.hpc_silent_cap_us);
  auto last = util::parse_time_us(recorded.last_heartbeat_at);
  const std::string why = recorded.why.value_or("");
  if (!last || s.liveness.fresh(*last, now)) return {};  // the one staleness rule: not stale, no reap
  if (why == "silent_past_cap" && !silent_past_cap(s, *last, now)) return {};
  if (why == "allocation_gone" && facts.squeue_listed.value_or(true)) return {};
  if (why != "silent_past_cap" && why != "allocation_gone" && why != "heartbeat_timeout") return {};
  return reap_one(w, *wk, *last, now, why, s);
}

std::string named_target(const command& c) {
  if (auto* h = std::get_if<C::heartbeat>(&c)) return h->worker_id;
  if (auto* r = std::get_if<C::rotate_worker_credential>(&c)) return r->worker_id;
  if (auto* o = std::get_if<C::rotate_operator_token>(&c)) return o->name;
  if (auto* d = std::get_if<C::deregister>(&c)) return d->worker_id;
  if (auto* r = std::get_if<C::request_job>(&c)) return r->worker_id;
  return "";
}

decision plan_cycle(const world& w, const lease_book& leases, const scheduler_settings& s, time_us now) {
  return decide_plan(w, leases.stale(s.liveness, now), s.deadlines, s.backfill, now);
}

decision preemption_check(const world& w, const lease_book& leases, const scheduler_settings& s, time_us now) {
  return decide_preemptions(w, leases.stale(s.liveness, now), s.deadlines, now);
}

}  // namespace baton::core
