#pragma once
// What a provisioning decision rests on besides the world: the stale workers left out, the
// settings in force and the time, plus `based_on` (the world's applied-event count when it
// was decided). A Slurm submission plan and a Salad replica target are decided on the world
// at one moment and recorded later (after sbatch or the Salad API answered); with this basis
// recorded, replay re-derives them at that moment (replay/audit/rederive.cpp).
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/provisioning/cloud.hpp"
#include "core/provisioning/provisioning.hpp"

namespace baton::core {

nlohmann::json to_json(const cluster_spec& c);
cluster_spec cluster_spec_from_json(const nlohmann::json& j);

// Adds "basis" to each plan's record. stale: every stale worker; only those the plan could
// have counted (idle, of the plan's image) are recorded.
void record_plan_basis(std::vector<submission_plan>& plans, const world& w, const cluster_spec& c,
                       const std::set<std::string>& stale, const deadline_rule& rule, time_us soon, time_us now);
// Adds "basis" to the target's record (stale workers of the image only).
void record_target_basis(replica_target& t, const world& w, const std::set<std::string>& stale);

// The applied-event count a recorded plan or target names; nullopt for records without a
// basis (logs written before it was recorded).
std::optional<uint64_t> basis_point(const nlohmann::json& record);
// Decides again, on the world as it was at basis_point(record), what the record says was
// decided: the plan record for its image (null when the plan would submit nothing for it),
// or the replica target's record. Each without its basis, to compare with the recorded one.
nlohmann::json replan_submission(const world& w, const nlohmann::json& record);
nlohmann::json retarget_salad(const world& w, const nlohmann::json& record);
// The record as decided, without its basis.
nlohmann::json without_basis(nlohmann::json record);

}  // namespace baton::core
