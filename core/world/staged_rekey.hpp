#pragma once
// Putting a deferred recalculation in force without holding the scheduler for it: the new
// evaluation order is built in slices (stage_some), between which the scheduler keeps
// answering polls under the old order; swap_in then applies scheduler.priorities_applied
// exactly as a replay of the log would, re-keying again only the jobs that changed while the
// slices were built. A replay applies the same event in one go (world.cpp); both give every
// queued job the priority it has under the pending recalculation at the swap.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/world/world.hpp"

namespace baton::core {

struct staged_rekey {
  struct entry {
    job* owner = nullptr;
    int tier = 0;
    bool preemptor = false;
    int64_t priority = 0;
    bool indexed = false;  // its key went into the new index
  };
  bool begun = false;
  std::optional<std::pair<time_us, std::string>> next;  // the next queued job to stage
  bool complete = false;
  uint64_t worker_gpus_version = 0;  // Lattice's f4 reads the workers' GPU counts
  std::vector<entry> staged;
  std::map<std::string, ranked_set<queue_key>> queued_by_image;
  std::map<std::string, size_t> constrained_by_image;
};

// Starts staging the world's pending recalculation (there must be one): from here until the
// swap, the world notes every job that changes.
staged_rekey begin_staging(world& w);

// Stages up to max_jobs more queued jobs (their priority under the pending recalculation, and
// their key in the new index); returns whether every queued job is staged.
bool stage_some(const world& w, staged_rekey& s, size_t max_jobs);

// Applies `applied` (decide_priorities_applied, one event) to the world using what was
// staged; the world ends up as core::apply would leave it. Returns the index it replaced:
// freeing 100,000 tree nodes takes longer than the swap itself, so the caller may do it
// elsewhere (the keys point into the world: only free them, never read them).
using queue_index = std::map<std::string, ranked_set<queue_key>>;
queue_index swap_in(world& w, staged_rekey&& s, const decision& applied, time_us at);

// Stops staging without a swap (the pending recalculation stays pending).
void abandon_staging(world& w);

}  // namespace baton::core
