#include "core/world/world_snapshot.hpp"

#include <stdexcept>

#include "core/world/priority.hpp"
#include "core/world/snapshot_codec.hpp"

namespace baton::core {

using nlohmann::json;
using snapshot_codec::reader;
using snapshot_codec::writer;

namespace {

const std::string magic = "baton-world";

// An enum stored as its number, which must name one of its values (last: the largest).
template <class E>
E get_enum(reader& in, E last) {
  const uint64_t v = in.u();
  if (v > static_cast<uint64_t>(last)) reader::damaged();
  return static_cast<E>(v);
}

void put_job(writer& o, const job& j) {
  auto t = [&](time_us v) { o.i(v); };
  auto d = [&](double v) { o.f(v); };
  o.s(j.id);
  o.s(j.title);
  o.s(j.input_bundle_path);
  o.s(j.worker_image_key);
  o.strings(j.preferred_clusters);
  o.s(j.comment);
  o.u(static_cast<uint64_t>(j.status));
  o.i(j.created_at);
  o.i(j.updated_at);
  o.i(j.status_changed_at);
  o.opt(j.assigned_at, t);
  o.opt(j.started_at, t);
  o.opt(j.cancellation_requested_at, t);
  o.opt(j.last_checkpoint_at, t);
  o.s(j.latest_checkpoint_manifest_path);
  o.s(j.latest_failure_artifact_path);
  o.opt(j.progress, d);
  o.j(j.progress_codes);
  o.s(j.checkpoint_cycle_status);
  o.j(j.checkpoint_cycle_failures);
  o.opt(j.checkpoint_seconds, d);
  o.s(j.assigned_worker_id);
  o.u(j.attempts);
  o.u(j.lost_workers);
  o.u(j.max_attempts);
  o.u(j.preemptions);
  o.s(j.failure_reason);
  o.s(j.requeued_from);
  o.strings(j.requeued_to);
  o.u(j.segments.size());
  for (const auto& s : j.segments) {
    o.s(s.worker_id);
    o.i(s.started_at);
    o.opt(s.ended_at, t);
    o.b(s.started);
  }
  o.b(j.pruned);
  o.s(j.user);
  o.s(j.account);
  o.s(j.partition);
  o.s(j.qos);
  o.i(j.nice);
  o.u(j.gpu_count);
  o.opt(j.time_limit_seconds, t);
  for (bool flag : {j.checkpoints, j.requeue, j.interactive, j.held, j.admin_hold, j.blocked, j.over_limit, j.preemptor})
    o.b(flag);
  o.s(j.conformance);
  o.i(j.accrued_us);
  o.opt(j.eligible_since, t);
  o.i(j.priority);
  o.i(j.priority_tier);
  o.u(j.depends_on.size());
  for (const auto& dep : j.depends_on) {
    o.s(dep.job_id);
    o.u(static_cast<uint64_t>(dep.condition));
  }
  o.s(j.preempted_by);
  o.s(j.preempt_mode);
  o.i(j.preempt_grace_until);
}

job get_job(reader& in) {
  job j;
  auto t = [&] { return in.i(); };
  auto d = [&] { return in.f(); };
  j.id = in.s();
  j.title = in.s();
  j.input_bundle_path = in.s();
  j.worker_image_key = in.s();
  j.preferred_clusters = in.strings();
  j.comment = in.s();
  j.status = get_enum(in, job_status::cancelled);
  j.created_at = in.i();
  j.updated_at = in.i();
  j.status_changed_at = in.i();
  j.assigned_at = in.opt<time_us>(t);
  j.started_at = in.opt<time_us>(t);
  j.cancellation_requested_at = in.opt<time_us>(t);
  j.last_checkpoint_at = in.opt<time_us>(t);
  j.latest_checkpoint_manifest_path = in.s();
  j.latest_failure_artifact_path = in.s();
  j.progress = in.opt<double>(d);
  j.progress_codes = in.j();
  j.checkpoint_cycle_status = in.s();
  j.checkpoint_cycle_failures = in.j();
  j.checkpoint_seconds = in.opt<double>(d);
  j.assigned_worker_id = in.s();
  j.attempts = static_cast<uint32_t>(in.u());
  j.lost_workers = static_cast<uint32_t>(in.u());
  j.max_attempts = static_cast<uint32_t>(in.u());
  j.preemptions = static_cast<uint32_t>(in.u());
  j.failure_reason = in.s();
  j.requeued_from = in.s();
  j.requeued_to = in.strings();
  for (size_t n = in.count(); n > 0; --n) {
    runtime_segment s;
    s.worker_id = in.s();
    s.started_at = in.i();
    s.ended_at = in.opt<time_us>(t);
    s.started = in.b();
    j.segments.push_back(std::move(s));
  }
  j.pruned = in.b();
  j.user = in.s();
  j.account = in.s();
  j.partition = in.s();
  j.qos = in.s();
  j.nice = in.i();
  j.gpu_count = static_cast<uint32_t>(in.u());
  j.time_limit_seconds = in.opt<int64_t>(t);
  for (bool* flag : {&j.checkpoints, &j.requeue, &j.interactive, &j.held, &j.admin_hold, &j.blocked, &j.over_limit, &j.preemptor})
    *flag = in.b();
  j.conformance = in.s();
  j.accrued_us = in.i();
  j.eligible_since = in.opt<time_us>(t);
  j.priority = in.i();
  j.priority_tier = static_cast<int>(in.i());
  for (size_t n = in.count(); n > 0; --n) {
    dependency dep;
    dep.job_id = in.s();
    dep.condition = get_enum(in, dependency_condition::afternotok);
    j.depends_on.push_back(std::move(dep));
  }
  j.preempted_by = in.s();
  j.preempt_mode = in.s();
  j.preempt_grace_until = in.i();
  return j;
}

void put_worker(writer& o, const worker& w) {
  o.s(w.id);
  o.u(static_cast<uint64_t>(w.kind));
  o.s(w.gpu_model);
  o.i(w.gpu_count);
  o.f(w.vram_gb);
  o.s(w.driver_version);
  o.s(w.worker_image_key);
  o.s(w.provider_id);
  o.b(w.placeholder);
  o.b(w.gone);
  o.s(w.gone_reason);
  o.i(w.registered_at);
  o.i(w.gone_at);
  o.s(w.credential.sha256);
  o.s(w.credential.previous_sha256);
  o.i(w.credential.previous_valid_until);
  o.i(w.allocation_ends_at);
  o.i(w.wall_time_seconds);
  o.s(w.registration_sha256);
}

worker get_worker(reader& in) {
  worker w;
  w.id = in.s();
  w.kind = get_enum(in, platform::salad);
  set_gpu_model(w, in.s());
  w.gpu_count = static_cast<int>(in.i());
  w.vram_gb = in.f();
  w.driver_version = in.s();
  w.worker_image_key = in.s();
  w.provider_id = in.s();
  w.placeholder = in.b();
  w.gone = in.b();
  w.gone_reason = in.s();
  w.registered_at = in.i();
  w.gone_at = in.i();
  w.credential.sha256 = in.s();
  w.credential.previous_sha256 = in.s();
  w.credential.previous_valid_until = in.i();
  w.allocation_ends_at = in.i();
  w.wall_time_seconds = in.i();
  w.registration_sha256 = in.s();
  return w;
}

void put_priority(writer& o, const priority_state& s) {
  o.b(s.recorded);
  // (as the policy's JSON, the form earlier snapshots of this version hold)
  o.j(s.policy_cbor.empty() ? json() : events::to_json(events::from_cbor<ev::policy_record>(s.policy_cbor)));
  o.i(s.calculated_at);
  o.u(s.shares.size());
  for (const auto& [assoc, sh] : s.shares) {
    o.s(assoc);
    for (double v : {sh.fair_share, sh.level_fs, sh.target, sh.actual, sh.usage}) o.f(v);
  }
  o.u(s.max_gpu_count);
  o.f(s.backlog);
}

priority_state get_priority(reader& in) {
  priority_state s;
  s.recorded = in.b();
  json policy = in.j();
  if (policy.is_array() && policy.empty()) policy = json();  // (an empty value travels as [])
  if (!policy.is_null()) {
    const auto record = events::from_json<ev::policy_record>(policy);
    s.policy_cbor = events::to_cbor(record);
    if (s.recorded) s.policy = policy_of(record);
  }
  s.calculated_at = in.i();
  for (size_t n = in.count(); n > 0; --n) {
    auto assoc = in.s();
    auto& sh = s.shares[assoc];
    for (double* v : {&sh.fair_share, &sh.level_fs, &sh.target, &sh.actual, &sh.usage}) *v = in.f();
  }
  s.max_gpu_count = static_cast<uint32_t>(in.u());
  s.backlog = in.f();
  return s;
}

}  // namespace

std::string encode_world(const world& w) {
  writer o;
  o.s(magic);
  o.u(world_snapshot_version);
  o.u(w.applied);
  o.u(w.jobs.size());
  for (const auto& [id, j] : w.jobs.by_id()) put_job(o, j);
  o.u(w.pruned.size());
  w.pruned.for_each(false, [&](const std::string& id, const pruned_job& p) {
    o.s(id);
    o.u(static_cast<uint64_t>(p.status));
    o.i(p.created_at);
    o.s(p.user);
    o.s(p.worker_image_key);
    o.s(p.assigned_worker_id);
  });
  o.u(w.workers.size());
  for (const auto& [id, wk] : w.workers) put_worker(o, wk);
  o.u(w.usage.size());
  for (const auto& [assoc, u] : w.usage) {
    o.s(assoc);
    o.f(u.closed);
    o.i(u.as_of);
    o.u(u.running.size());
    for (const auto& [job_id, seg] : u.running) {
      o.s(job_id);
      o.i(seg.started_at);
      o.i(seg.gpus);
    }
  }
  put_priority(o, w.priority);
  o.opt(w.priority_pending, [&](const priority_state& p) { put_priority(o, p); });
  o.i(w.plan.planned_at);
  o.s(w.plan.digest);
  o.u(w.plan.start_for_worker.size());
  for (const auto& [worker_id, job_id] : w.plan.start_for_worker) {
    o.s(worker_id);
    o.s(job_id);
  }
  o.u(w.plan.reservations.size());
  for (const auto& [job_id, slot] : w.plan.reservations) {
    o.s(job_id);
    o.s(slot.worker_id);
    o.i(slot.start);
    o.i(slot.end);
  }
  o.u(w.plan.reservations_total);
  o.u(w.operators.size());
  for (const auto& [name, op] : w.operators) {
    o.s(op.name);
    o.b(op.admin);
    o.strings(op.accounts);
    o.s(op.token.sha256);
    o.s(op.token.previous_sha256);
    o.i(op.token.previous_valid_until);
    o.b(op.revoked);
    o.i(op.created_at);
    o.i(op.token_rotated_at);
  }
  o.s(w.pilot_token.sha256);
  o.s(w.pilot_token.previous_sha256);
  o.i(w.pilot_token.previous_valid_until);
  o.i(w.pilot_token_rotated_at);
  o.strings({w.disabled_clusters.begin(), w.disabled_clusters.end()});
  o.j(json(w.last_submission_failure));
  o.j(w.salad_status);
  o.j(to_json(w.storage));
  o.u(w.array_of_job.size());  // (arrays follows from it)
  for (const auto& [job_id, task] : w.array_of_job) {
    o.s(job_id);
    o.s(task.array_id);
    o.u(task.index);
  }
  return std::move(o.out);
}

world decode_world(const std::string& bytes) {
  reader in{bytes};
  try {
    if (in.s() != magic || in.u() != world_snapshot_version) reader::damaged();
  } catch (const std::runtime_error&) {
    throw std::runtime_error("snapshot: not a world snapshot of version " + std::to_string(world_snapshot_version));
  }
  try {
    world w;
    w.applied = in.u();
    for (size_t n = in.count(); n > 0; --n) {
      job j = get_job(in);
      std::string id = j.id;
      w.jobs.emplace(std::move(id), std::move(j));
    }
    for (size_t n = in.count(); n > 0; --n) {
      auto id = in.s();
      pruned_job p{get_enum(in, job_status::cancelled), in.i(), in.s(), in.s(), in.s()};
      w.pruned.add(id, p);
    }
    for (size_t n = in.count(); n > 0; --n) {
      worker wk = get_worker(in);
      std::string id = wk.id;
      w.workers.emplace(std::move(id), std::move(wk));
    }
    for (size_t n = in.count(); n > 0; --n) {
      auto& u = w.usage[in.s()];
      u.closed = in.f();
      u.as_of = in.i();
      for (size_t r = in.count(); r > 0; --r) {
        auto job_id = in.s();
        auto started = in.i();
        u.running[job_id] = {started, static_cast<int>(in.i())};
      }
    }
    w.priority = get_priority(in);
    if (in.b()) w.priority_pending = get_priority(in);
    w.plan.planned_at = in.i();
    w.plan.digest = in.s();
    for (size_t n = in.count(); n > 0; --n) {
      auto worker_id = in.s();
      w.plan.start_for_worker[worker_id] = in.s();
    }
    for (size_t n = in.count(); n > 0; --n) {
      auto job_id = in.s();
      auto& slot = w.plan.reservations[job_id];
      slot.worker_id = in.s();
      slot.start = in.i();
      slot.end = in.i();
    }
    w.plan.reservations_total = static_cast<size_t>(in.u());
    for (size_t n = in.count(); n > 0; --n) {
      operator_account op;
      op.name = in.s();
      op.admin = in.b();
      op.accounts = in.strings();
      op.token.sha256 = in.s();
      op.token.previous_sha256 = in.s();
      op.token.previous_valid_until = in.i();
      op.revoked = in.b();
      op.created_at = in.i();
      op.token_rotated_at = in.i();
      std::string name = op.name;
      w.operators.emplace(std::move(name), std::move(op));
    }
    w.pilot_token.sha256 = in.s();
    w.pilot_token.previous_sha256 = in.s();
    w.pilot_token.previous_valid_until = in.i();
    w.pilot_token_rotated_at = in.i();
    for (auto& c : in.strings()) w.disabled_clusters.insert(std::move(c));
    auto failures = in.j();
    if (failures.is_object()) w.last_submission_failure = failures.get<std::map<std::string, json>>();
    w.salad_status = in.j();
    if (w.salad_status.is_array() && w.salad_status.empty()) w.salad_status = json::object();
    w.storage = storage_book_from_json(in.j());
    for (size_t n = in.count(); n > 0; --n) {
      auto job_id = in.s();
      array_task task;
      task.array_id = in.s();
      task.index = static_cast<uint32_t>(in.u());
      w.arrays[task.array_id][task.index] = job_id;
      w.array_of_job.emplace(std::move(job_id), std::move(task));
    }
    if (in.pos != bytes.size()) reader::damaged();
    rebuild_indexes(w);
    return w;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("snapshot: damaged: ") + e.what());
  }
}

std::string encode_world_snapshot(const world& w, const std::string& event_hash) {
  writer o;
  o.s(event_hash);
  o.out += encode_world(w);
  return std::move(o.out);
}

world_snapshot decode_world_snapshot(const std::string& bytes) {
  reader in{bytes};
  world_snapshot out;
  out.event_hash = in.s();
  out.w = decode_world(bytes.substr(in.pos));
  return out;
}

}  // namespace baton::core
