#include "core/world_snapshot.hpp"

#include <stdexcept>

#include "core/priority.hpp"

namespace baton::core {

using nlohmann::json;

namespace {

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
template <class T>
std::optional<T> opt_of(const json& j) {
  return j.is_null() ? std::nullopt : std::optional<T>(j.get<T>());
}

json job_json(const job& j) {
  json segs = json::array();
  for (const auto& s : j.segments) segs.push_back({s.worker_id, s.started_at, opt(s.ended_at)});
  json deps = json::array();
  for (const auto& d : j.depends_on) deps.push_back({d.job_id, to_string(d.condition)});
  return {{"id", j.id},
          {"title", j.title},
          {"input", j.input_bundle_path},
          {"image", j.worker_image_key},
          {"pins", j.preferred_clusters},
          {"comment", j.comment},
          {"status", to_string(j.status)},
          {"times", {j.created_at, j.updated_at, j.status_changed_at}},
          {"assigned_at", opt(j.assigned_at)},
          {"started_at", opt(j.started_at)},
          {"cancel_at", opt(j.cancellation_requested_at)},
          {"checkpoint_at", opt(j.last_checkpoint_at)},
          {"manifest", j.latest_checkpoint_manifest_path},
          {"failure_artifact", j.latest_failure_artifact_path},
          {"progress", opt(j.progress)},
          {"progress_codes", j.progress_codes},
          {"cycle_status", j.checkpoint_cycle_status},
          {"cycle_failures", j.checkpoint_cycle_failures},
          {"checkpoint_seconds", opt(j.checkpoint_seconds)},
          {"worker", j.assigned_worker_id},
          {"counts", {j.attempts, j.lost_workers, j.max_attempts, j.preemptions}},
          {"failure", j.failure_reason},
          {"requeued_from", j.requeued_from},
          {"requeued_to", j.requeued_to},
          {"segments", segs},
          {"pruned", j.pruned},
          {"who", {j.user, j.account, j.partition, j.qos}},
          {"nice", j.nice},
          {"gpus", j.gpu_count},
          {"limit", opt(j.time_limit_seconds)},
          {"flags", {j.checkpoints, j.requeue, j.interactive, j.held, j.admin_hold, j.blocked, j.over_limit, j.preemptor}},
          {"conformance", j.conformance},
          {"accrued", j.accrued_us},
          {"eligible_since", opt(j.eligible_since)},
          {"priority", {j.priority, j.priority_tier}},
          {"depends_on", deps},
          {"preempt", {j.preempted_by, j.preempt_mode, j.preempt_grace_until}}};
}

job job_of(const json& p) {
  job j;
  j.id = p.at("id").get<std::string>();
  j.title = p.at("title").get<std::string>();
  j.input_bundle_path = p.at("input").get<std::string>();
  j.worker_image_key = p.at("image").get<std::string>();
  j.preferred_clusters = p.at("pins").get<std::vector<std::string>>();
  j.comment = p.at("comment").get<std::string>();
  auto status = job_status_from(p.at("status").get<std::string>());
  if (!status) throw std::runtime_error("snapshot: job " + j.id + " has an unknown status");
  j.status = *status;
  const auto& t = p.at("times");
  j.created_at = t.at(0).get<time_us>();
  j.updated_at = t.at(1).get<time_us>();
  j.status_changed_at = t.at(2).get<time_us>();
  j.assigned_at = opt_of<time_us>(p.at("assigned_at"));
  j.started_at = opt_of<time_us>(p.at("started_at"));
  j.cancellation_requested_at = opt_of<time_us>(p.at("cancel_at"));
  j.last_checkpoint_at = opt_of<time_us>(p.at("checkpoint_at"));
  j.latest_checkpoint_manifest_path = p.at("manifest").get<std::string>();
  j.latest_failure_artifact_path = p.at("failure_artifact").get<std::string>();
  j.progress = opt_of<double>(p.at("progress"));
  j.progress_codes = p.at("progress_codes");
  j.checkpoint_cycle_status = p.at("cycle_status").get<std::string>();
  j.checkpoint_cycle_failures = p.at("cycle_failures");
  j.checkpoint_seconds = opt_of<double>(p.at("checkpoint_seconds"));
  j.assigned_worker_id = p.at("worker").get<std::string>();
  const auto& c = p.at("counts");
  j.attempts = c.at(0).get<uint32_t>();
  j.lost_workers = c.at(1).get<uint32_t>();
  j.max_attempts = c.at(2).get<uint32_t>();
  j.preemptions = c.at(3).get<uint32_t>();
  j.failure_reason = p.at("failure").get<std::string>();
  j.requeued_from = p.at("requeued_from").get<std::string>();
  j.requeued_to = p.at("requeued_to").get<std::vector<std::string>>();
  for (const auto& s : p.at("segments"))
    j.segments.push_back({s.at(0).get<std::string>(), s.at(1).get<time_us>(), opt_of<time_us>(s.at(2))});
  j.pruned = p.at("pruned").get<bool>();
  const auto& who = p.at("who");
  j.user = who.at(0).get<std::string>();
  j.account = who.at(1).get<std::string>();
  j.partition = who.at(2).get<std::string>();
  j.qos = who.at(3).get<std::string>();
  j.nice = p.at("nice").get<int64_t>();
  j.gpu_count = p.at("gpus").get<uint32_t>();
  j.time_limit_seconds = opt_of<int64_t>(p.at("limit"));
  const auto& f = p.at("flags");
  j.checkpoints = f.at(0).get<bool>();
  j.requeue = f.at(1).get<bool>();
  j.interactive = f.at(2).get<bool>();
  j.held = f.at(3).get<bool>();
  j.admin_hold = f.at(4).get<bool>();
  j.blocked = f.at(5).get<bool>();
  j.over_limit = f.at(6).get<bool>();
  j.preemptor = f.at(7).get<bool>();
  j.conformance = p.at("conformance").get<std::string>();
  j.accrued_us = p.at("accrued").get<time_us>();
  j.eligible_since = opt_of<time_us>(p.at("eligible_since"));
  j.priority = p.at("priority").at(0).get<int64_t>();
  j.priority_tier = p.at("priority").at(1).get<int>();
  for (const auto& d : p.at("depends_on")) {
    auto cond = dependency_condition_from(d.at(1).get<std::string>());
    if (!cond) throw std::runtime_error("snapshot: job " + j.id + " has an unknown dependency condition");
    j.depends_on.push_back({d.at(0).get<std::string>(), *cond});
  }
  const auto& pre = p.at("preempt");
  j.preempted_by = pre.at(0).get<std::string>();
  j.preempt_mode = pre.at(1).get<std::string>();
  j.preempt_grace_until = pre.at(2).get<time_us>();
  return j;
}

json worker_json(const worker& w) {
  return {w.id, to_string(w.kind), w.gpu_model, w.gpu_count, w.vram_gb, w.driver_version, w.worker_image_key, w.provider_id,
          w.placeholder, w.gone, w.gone_reason, w.registered_at, w.gone_at, w.credential_sha256, w.allocation_ends_at,
          w.wall_time_seconds};
}

worker worker_of(const json& p) {
  worker w;
  w.id = p.at(0).get<std::string>();
  auto kind = platform_from(p.at(1).get<std::string>());
  if (!kind) throw std::runtime_error("snapshot: worker " + w.id + " has an unknown platform");
  w.kind = *kind;
  w.gpu_model = p.at(2).get<std::string>();
  w.gpu_count = p.at(3).get<int>();
  w.vram_gb = p.at(4).get<double>();
  w.driver_version = p.at(5).get<std::string>();
  w.worker_image_key = p.at(6).get<std::string>();
  w.provider_id = p.at(7).get<std::string>();
  w.placeholder = p.at(8).get<bool>();
  w.gone = p.at(9).get<bool>();
  w.gone_reason = p.at(10).get<std::string>();
  w.registered_at = p.at(11).get<time_us>();
  w.gone_at = p.at(12).get<time_us>();
  w.credential_sha256 = p.at(13).get<std::string>();
  w.allocation_ends_at = p.at(14).get<time_us>();
  w.wall_time_seconds = p.at(15).get<int64_t>();
  return w;
}

json priority_json(const priority_state& s) {
  json shares = json::object();
  for (const auto& [assoc, sh] : s.shares) shares[assoc] = {sh.fair_share, sh.level_fs, sh.target, sh.actual, sh.usage};
  return {{"recorded", s.recorded}, {"policy", s.policy_json}, {"calculated_at", s.calculated_at},
          {"shares", shares},       {"max_gpu_count", s.max_gpu_count}, {"backlog", s.backlog}};
}

priority_state priority_of(const json& p) {
  priority_state s;
  s.recorded = p.at("recorded").get<bool>();
  s.policy_json = p.at("policy");
  if (s.recorded) s.policy = policy_from_json(s.policy_json);
  s.calculated_at = p.at("calculated_at").get<time_us>();
  for (const auto& [assoc, sh] : p.at("shares").items())
    s.shares[assoc] = {sh.at(0).get<double>(), sh.at(1).get<double>(), sh.at(2).get<double>(), sh.at(3).get<double>(),
                       sh.at(4).get<double>()};
  s.max_gpu_count = p.at("max_gpu_count").get<uint32_t>();
  s.backlog = p.at("backlog").get<double>();
  return s;
}

json plan_json(const live_plan& p) {
  json res = json::array();
  for (const auto& [job_id, slot] : p.reservations) res.push_back({job_id, slot.worker_id, slot.start, slot.end});
  return {{"planned_at", p.planned_at}, {"digest", p.digest}, {"starts", p.start_for_worker}, {"reservations", res},
          {"reservations_total", p.reservations_total}};
}

live_plan plan_of(const json& p) {
  live_plan out;
  out.planned_at = p.at("planned_at").get<time_us>();
  out.digest = p.at("digest").get<std::string>();
  out.start_for_worker = p.at("starts").get<std::map<std::string, std::string>>();
  for (const auto& r : p.at("reservations"))
    out.reservations[r.at(0).get<std::string>()] = {r.at(1).get<std::string>(), r.at(2).get<time_us>(), r.at(3).get<time_us>()};
  out.reservations_total = p.at("reservations_total").get<size_t>();
  return out;
}

}  // namespace

std::string encode_world(const world& w) {
  json jobs = json::array(), workers = json::array(), usage = json::object(), operators = json::array();
  for (const auto& [id, j] : w.jobs) jobs.push_back(job_json(j));
  for (const auto& [id, wk] : w.workers) workers.push_back(worker_json(wk));
  for (const auto& [assoc, u] : w.usage) {
    json running = json::array();
    for (const auto& [job_id, seg] : u.running) running.push_back({job_id, seg.started_at, seg.gpus});
    usage[assoc] = {u.closed, u.as_of, running};
  }
  for (const auto& [name, o] : w.operators)
    operators.push_back({o.name, o.admin, o.accounts, o.token_sha256, o.revoked, o.created_at});
  json doc = {{"version", world_snapshot_version},
              {"applied", w.applied},
              {"jobs", std::move(jobs)},
              {"workers", std::move(workers)},
              {"usage", std::move(usage)},
              {"priority", priority_json(w.priority)},
              {"priority_pending", w.priority_pending ? priority_json(*w.priority_pending) : json(nullptr)},
              {"plan", plan_json(w.plan)},
              {"operators", std::move(operators)},
              {"disabled_clusters", w.disabled_clusters},
              {"last_submission_failure", w.last_submission_failure},
              {"salad_status", w.salad_status}};
  auto bytes = json::to_cbor(doc);
  return {bytes.begin(), bytes.end()};
}

world decode_world(const std::string& bytes) {
  json doc;
  try {
    doc = json::from_cbor(bytes);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("snapshot: not CBOR: ") + e.what());
  }
  if (!doc.is_object() || doc.value("version", 0) != world_snapshot_version)
    throw std::runtime_error("snapshot: not a world snapshot of version " + std::to_string(world_snapshot_version));
  try {
    world w;
    w.applied = doc.at("applied").get<uint64_t>();
    for (const auto& p : doc.at("jobs")) {
      job j = job_of(p);
      std::string id = j.id;
      w.jobs.emplace(std::move(id), std::move(j));
    }
    for (const auto& p : doc.at("workers")) {
      worker wk = worker_of(p);
      std::string id = wk.id;
      w.workers.emplace(std::move(id), std::move(wk));
    }
    for (const auto& [assoc, u] : doc.at("usage").items()) {
      auto& out = w.usage[assoc];
      out.closed = u.at(0).get<double>();
      out.as_of = u.at(1).get<time_us>();
      for (const auto& r : u.at(2)) out.running[r.at(0).get<std::string>()] = {r.at(1).get<time_us>(), r.at(2).get<int>()};
    }
    w.priority = priority_of(doc.at("priority"));
    if (!doc.at("priority_pending").is_null()) w.priority_pending = priority_of(doc.at("priority_pending"));
    w.plan = plan_of(doc.at("plan"));
    for (const auto& o : doc.at("operators"))
      w.operators[o.at(0).get<std::string>()] = {o.at(0).get<std::string>(), o.at(1).get<bool>(),
                                                 o.at(2).get<std::vector<std::string>>(), o.at(3).get<std::string>(),
                                                 o.at(4).get<bool>(), o.at(5).get<time_us>()};
    w.disabled_clusters = doc.at("disabled_clusters").get<std::set<std::string>>();
    w.last_submission_failure = doc.at("last_submission_failure").get<std::map<std::string, json>>();
    w.salad_status = doc.at("salad_status");
    rebuild_indexes(w);
    return w;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("snapshot: damaged: ") + e.what());
  }
}

}  // namespace baton::core
