#include "core/world/dag.hpp"

#include <deque>
#include <functional>
#include <set>

namespace baton::core {
namespace {

using nlohmann::json;

// A parent's status, as the world has it or as this decision has already made it.
using status_lookup = std::function<std::optional<job_status>(const std::string&)>;

dependency_state combined(const std::vector<dependency>& deps, const status_lookup& status_of,
                          const dependency** never = nullptr) {
  auto out = dependency_state::satisfied;
  for (const auto& d : deps) {
    auto parent = status_of(d.job_id);
    auto s = parent ? state_of(d.condition, *parent) : dependency_state::never;
    if (s == dependency_state::never) {
      if (never) *never = &d;
      return s;
    }
    if (s == dependency_state::waiting) out = s;
  }
  return out;
}

status_lookup in_world(const world& w) {
  return [&w](const std::string& id) { return w.status_of_job(id); };  // a pruned parent keeps its status
}

domain_error dependency_error(error_kind kind, const std::string& code, const std::string& message, json details) {
  return {kind, code, message, std::move(details), "depends_on"};
}

json never_details(const world& w, const dependency& d) {
  auto parent = w.status_of_job(d.job_id);
  return {{"dependency_job_id", d.job_id},
          {"condition", to_string(d.condition)},
          {"dependency_status", parent ? json(to_string(*parent)) : json(nullptr)}};
}

// The path from `from` up through parents to `target`, if there is one (depth first;
// each job visited once, so linear in the ancestors).
bool reaches(const world& w, const std::string& from, const std::string& target, std::set<std::string>& seen,
             std::vector<std::string>& path) {
  if (!seen.insert(from).second) return false;
  path.push_back(from);
  if (from == target) return true;
  // A pruned job's parents are not kept; no cycle can pass through it (it ended before).
  if (const job* j = w.find_job(from))
    for (const auto& d : j->depends_on)
      if (reaches(w, d.job_id, target, seen, path)) return true;
  path.pop_back();
  return false;
}

}  // namespace

dependency_state dependencies_state(const world& w, const job& j) { return combined(j.depends_on, in_world(w)); }

std::optional<domain_error> check_new_dependencies(const world& w, const principal& who, const std::string& id,
                                                   const std::vector<dependency>& deps, const priority_policy& p) {
  if (deps.empty()) return std::nullopt;
  for (const auto& d : deps)
    if (d.job_id == id)
      return dependency_error(error_kind::invalid, "dependency_cycle", "job " + id + " cannot depend on itself",
                              {{"cycle", {id, id}}});
  // A job the caller may not see is answered as one that does not exist: its status, and
  // that it exists at all, are its owner's (core::may_see, as GET /jobs/{id}'s 404).
  auto visible = [&](const std::string& job_id) {
    if (const job* j = w.find_job(job_id)) return may_see(who, *j);
    auto p = w.find_pruned(job_id);
    return p && may_see_user_of(who, p->user);
  };
  for (const auto& d : deps)
    if (!visible(d.job_id))
      return dependency_error(error_kind::invalid, "unknown_dependency", "depends_on names unknown job " + d.job_id,
                              {{"dependency_job_id", d.job_id}});
  // A new id has no children yet, so no cycle can pass through it today; the walk keeps the
  // rule honest should jobs ever gain dependencies after creation.
  std::set<std::string> seen;
  for (const auto& d : deps) {
    std::vector<std::string> path{id};
    if (reaches(w, d.job_id, id, seen, path))
      return dependency_error(error_kind::invalid, "dependency_cycle", "depends_on would close a cycle through " + id,
                              {{"cycle", path}});
  }
  const dependency* never = nullptr;
  if (p.kill_invalid_dependencies && combined(deps, in_world(w), &never) == dependency_state::never)
    return dependency_error(error_kind::invalid, "dependency_never_satisfied",
                            std::string(to_string(never->condition)) + " on job " + never->job_id + ", which is " +
                                to_string(*w.status_of_job(never->job_id)) + ", can never hold",
                            never_details(w, *never));
  return std::nullopt;
}

std::optional<domain_error> check_requeue_dependencies(const world& w, const job& j, const priority_policy& p) {
  const dependency* never = nullptr;
  if (!p.kill_invalid_dependencies || combined(j.depends_on, in_world(w), &never) != dependency_state::never) return std::nullopt;
  auto details = never_details(w, *never);
  details["job_id"] = j.id;
  return dependency_error(error_kind::conflict, "dependency_never_satisfied",
                          "a clone of job " + j.id + " could never run: " + to_string(never->condition) + " on job " +
                              never->job_id + " can never hold",
                          std::move(details));
}

std::vector<std::string> ended_jobs(const decision& d) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& e : d.events)
    if (e.stream.rfind("job/", 0) == 0 &&
        (std::holds_alternative<ev::job_completed>(e.payload) || std::holds_alternative<ev::job_failed>(e.payload) ||
         std::holds_alternative<ev::job_cancelled>(e.payload)) &&
        seen.insert(e.stream.substr(4)).second)
      out.push_back(e.stream.substr(4));
  return out;
}

decision dependency_fallout(const world& w, const std::vector<std::string>& ended, const priority_policy& p, time_us now) {
  decision out;
  if (!p.kill_invalid_dependencies) return out;
  std::set<std::string> cancelled;  // by this decision, before its events are applied
  status_lookup status_of = [&](const std::string& id) -> std::optional<job_status> {
    if (cancelled.count(id)) return job_status::cancelled;
    return in_world(w)(id);
  };
  std::deque<std::string> parents(ended.begin(), ended.end());
  while (!parents.empty()) {
    auto parent = std::move(parents.front());
    parents.pop_front();
    auto children = w.dependents.find(parent);
    if (children == w.dependents.end()) continue;
    for (const auto& child_id : children->second) {
      const job* child = w.find_job(child_id);
      if (!child || child->status != job_status::queued || cancelled.count(child_id)) continue;
      const dependency* never = nullptr;
      if (combined(child->depends_on, status_of, &never) != dependency_state::never) continue;
      out.events.push_back({job_stream(child_id), ev::job_cancelled{std::nullopt, never->job_id, "queued",
                                                                    "dependency_never_satisfied", std::nullopt}});
      cancelled.insert(child_id);
      parents.push_back(child_id);  // its own children may now never run either
    }
  }
  return out;
}

decision dependency_sweep(const world& w, const priority_policy& p, time_us now) {
  std::vector<std::string> ended;
  for (const auto& [parent, children] : w.dependents)
    if (auto status = w.status_of_job(parent); status && is_terminal(*status)) ended.push_back(parent);
  return dependency_fallout(w, ended, p, now);
}

}  // namespace baton::core
