#pragma once
// One job's dependency on another (Slurm's --dependency=afterok:<id>, Lattice's DAG edges):
// the condition, and what a parent's status means for it. World-level questions (is a job
// blocked, who is cancelled when a parent ends) are core/world/dag.hpp's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton::core {
namespace ev {
struct dependency_record;  // core/events/event_types.hpp
}

enum class job_status : uint8_t;

enum class dependency_condition : uint8_t {
  afterok,     // the parent completed
  afterany,    // the parent ended, however (completed, failed or cancelled)
  afternotok,  // the parent failed or was cancelled
};
const char* to_string(dependency_condition c);
std::optional<dependency_condition> dependency_condition_from(const std::string& s);

struct dependency {
  std::string job_id;
  dependency_condition condition = dependency_condition::afterok;
  bool operator==(const dependency& o) const { return job_id == o.job_id && condition == o.condition; }
};

// Where a condition (or a job's conditions together) stands.
enum class dependency_state : uint8_t {
  satisfied,  // holds: nothing to wait for
  waiting,    // may still hold: the parent has not ended
  never,      // can never hold: the parent ended the wrong way
};
dependency_state state_of(dependency_condition c, job_status parent);

// The same list without repeated entries, first-seen order.
std::vector<dependency> without_duplicates(const std::vector<dependency>& deps);

// As recorded in job.created and shown in JobRead: [{"job_id", "condition"}].
nlohmann::json to_json(const std::vector<dependency>& deps);
// As job.created records them, and read back (an unknown condition reads as afterok).
std::vector<ev::dependency_record> to_records(const std::vector<dependency>& deps);
std::vector<dependency> dependencies_of(const std::vector<ev::dependency_record>& recorded);

}  // namespace baton::core
