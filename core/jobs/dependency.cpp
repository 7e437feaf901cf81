#include "core/jobs/dependency.hpp"

#include <tuple>

#include "core/events/event_types.hpp"
#include "core/jobs/first_seen.hpp"
#include "core/jobs/job.hpp"

namespace baton::core {

const char* to_string(dependency_condition c) {
  switch (c) {
    case dependency_condition::afterok:
      return "afterok";
    case dependency_condition::afterany:
      return "afterany";
    case dependency_condition::afternotok:
      return "afternotok";
  }
  return "afterok";
}

std::optional<dependency_condition> dependency_condition_from(const std::string& s) {
  for (auto c : {dependency_condition::afterok, dependency_condition::afterany, dependency_condition::afternotok})
    if (s == to_string(c)) return c;
  return std::nullopt;
}

dependency_state state_of(dependency_condition c, job_status parent) {
  if (!is_terminal(parent)) return dependency_state::waiting;
  bool ok = parent == job_status::completed;
  switch (c) {
    case dependency_condition::afterok:
      return ok ? dependency_state::satisfied : dependency_state::never;
    case dependency_condition::afternotok:
      return ok ? dependency_state::never : dependency_state::satisfied;
    case dependency_condition::afterany:
      return dependency_state::satisfied;
  }
  return dependency_state::never;
}

std::vector<dependency> without_duplicates(const std::vector<dependency>& deps) {
  return first_seen(deps, [](const dependency& a, const dependency& b) {
    return std::tie(a.job_id, a.condition) < std::tie(b.job_id, b.condition);
  });
}

nlohmann::json to_json(const std::vector<dependency>& deps) {
  auto out = nlohmann::json::array();
  for (const auto& r : to_records(deps)) out.push_back(events::to_json(r));
  return out;
}

std::vector<ev::dependency_record> to_records(const std::vector<dependency>& deps) {
  std::vector<ev::dependency_record> out;
  out.reserve(deps.size());
  for (const auto& d : deps) out.push_back({to_string(d.condition), d.job_id});
  return out;
}

std::vector<dependency> dependencies_of(const std::vector<ev::dependency_record>& recorded) {
  std::vector<dependency> out;
  out.reserve(recorded.size());
  for (const auto& r : recorded)
    out.push_back({r.job_id, dependency_condition_from(r.condition).value_or(dependency_condition::afterok)});
  return out;
}

}  // namespace baton::core
