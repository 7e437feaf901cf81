#pragma once
// Pure autoscaling decision for the Salad container group: how many replicas cloud-eligible
// demand calls for. Salad takes overflow only (HPC first), never pinned jobs, and is never
// scaled below the Salad workers still running jobs (RelayMD scales to 0 under them).
#include <set>
#include <string>

#include "core/world/world.hpp"

namespace baton::core {

inline const char* salad_stream = "cloud/salad";

struct replica_target {
  int target = 0;
  ev::cloud_scaled record;  // the inputs, recorded with the scaling event (from and to unset: the scaling sets them)
};
// A target's record as people read it (GET /salad, the autoscaler's preview): without from and to.
nlohmann::json to_json(const replica_target& t);

replica_target salad_target(const world& w, const std::string& image, int max_replicas, const std::set<std::string>& stale);

// current: what the provider reported before the change.
decision decide_salad_scaled(int current, const replica_target& t);
decision decide_salad_failed(const std::string& stage, const std::string& message);

}  // namespace baton::core
