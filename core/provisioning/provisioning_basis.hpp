#pragma once
// What a provisioning decision rests on besides the world: the stale workers left out, the
// settings in force and the time, plus `based_on` (the world's applied-event count when it
// was decided). A Slurm submission plan and a Salad replica target are decided on the world
// at one moment and recorded later (after sbatch or the Salad API answered); with this basis
// recorded, replay re-derives them at that moment (replay/audit/rederive.cpp).
#include <optional>
#include <set>
#include <string>

#include "core/provisioning/cloud.hpp"
#include "core/provisioning/provisioning.hpp"

namespace baton::core {

ev::cluster_spec_record to_record(const cluster_spec& c);
cluster_spec spec_of(const ev::cluster_spec_record& r);  // absent values: the spec's defaults

// Sets each plan's basis. stale: every stale worker; only those the plan could have counted
// (idle, of the plan's image) are recorded.
void record_plan_basis(std::vector<submission_plan>& plans, const world& w, const cluster_spec& c,
                       const std::set<std::string>& stale, const deadline_rule& rule, time_us soon, time_us now);
// Sets the target's basis (stale workers of the image only).
void record_target_basis(replica_target& t, const world& w, const std::set<std::string>& stale);

// The applied-event count a basis names; nullopt without one (logs written before it was
// recorded).
std::optional<uint64_t> basis_point(const std::optional<ev::provisioning_basis_record>& basis);
// Decides again, on the world as it was at the basis's point, what the record says was
// decided, each without its basis, to compare with the recorded one: the plan for the
// record's image (nullopt when the plan would submit nothing for it), or the replica target
// (without the provider's from and to, which the scaling adds).
std::optional<ev::placeholder_plan_record> replan_submission(const world& w, const ev::placeholder_plan_record& recorded);
ev::cloud_scaled retarget_salad(const world& w, const ev::cloud_scaled& recorded);

}  // namespace baton::core
