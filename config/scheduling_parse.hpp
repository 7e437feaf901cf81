#pragma once
// Parses the `scheduling:` section (policy, weights, partitions, QOS, limits) and the
// `accounts:` tree into the core's priority policy. Throws detail::key_error naming the
// dotted key ("scheduling.partitions.test.priority_tier", "accounts.chem.parent").
#include <yaml-cpp/yaml.h>

#include "core/planning/deadline.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/policy/priority_policy.hpp"

namespace baton::config::detail {

void parse_scheduling(const YAML::Node& map, core::priority_policy& out);
void parse_accounts(const YAML::Node& map, core::priority_policy& out);
// scheduling.default_time_limit_seconds and scheduling.min_useful_seconds (pilot deadlines).
void parse_deadline_rule(const YAML::Node& map, core::deadline_rule& out);
// scheduling.backfill: the planning cycle's period and Slurm's bf_* limits.
void parse_backfill(const YAML::Node& map, core::backfill_settings& out);
// Cross-checks once both sections are read (defaults name configured entries).
void check_scheduling(const core::priority_policy& p);

}  // namespace baton::config::detail
