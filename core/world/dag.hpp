#pragma once
// Job dependencies across the world (Slurm's --dependency, Lattice's DAGs): whether a queued
// job's parents let it run, what a new job may depend on, and which waiting jobs are
// cancelled when a parent ends the wrong way. A job becoming runnable needs no event: it
// follows from its parent's (world.cpp). A cancellation does: dependency_fallout() decides
// it, the scheduler logs it in the same burst as the event that ended the parent.
#include <optional>
#include <string>
#include <vector>

#include "core/access/access.hpp"
#include "core/world/world.hpp"

namespace baton::core {

// Where all of j's conditions stand: never if one can never hold, else waiting if one may
// still, else satisfied (so too without dependencies). A parent the world does not know
// counts as never.
dependency_state dependencies_state(const world& w, const job& j);

// What a new job `id` may depend on: jobs the world knows and `who` may see (another
// user's job is unknown_dependency, exactly as a job that does not exist), no cycle
// (through itself or any ancestor), and, with kill_invalid_dependencies, none that can
// already never hold. Refusals are 422s naming the field depends_on: unknown_dependency,
// dependency_cycle, dependency_never_satisfied.
std::optional<domain_error> check_new_dependencies(const world& w, const principal& who, const std::string& id,
                                                   const std::vector<dependency>& deps, const priority_policy& p);

// A requeue clone keeps its job's dependencies: with kill_invalid_dependencies a clone
// that could never run is refused (409 dependency_never_satisfied) rather than made.
std::optional<domain_error> check_requeue_dependencies(const world& w, const job& j, const priority_policy& p);

// The jobs a decision's events end (job.completed, job.failed, job.cancelled), first seen first.
std::vector<std::string> ended_jobs(const decision& d);

// What follows once `ended` jobs have ended (their events already applied to w): with
// kill_invalid_dependencies, each queued job that can now never run is cancelled
// (job.cancelled {from_status: queued, reason: dependency_never_satisfied, dependency:
// <parent>}), and in turn the queued jobs that then can never run. Without it, nothing:
// they wait with DependencyNeverSatisfied. Dependents are visited in id order.
decision dependency_fallout(const world& w, const std::vector<std::string>& ended, const priority_policy& p, time_us now);

// The fallout of every ended job with dependents: at start-up, in case the configuration
// switched kill_invalid_dependencies on while jobs waited on parents that ended badly.
decision dependency_sweep(const world& w, const priority_policy& p, time_us now);

}  // namespace baton::core
