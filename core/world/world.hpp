#pragma once
// Everything the scheduler decides on: all jobs and workers, plus indexes kept in step by
// apply(). Ordered containers only, so iteration order never depends on hashing.
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <map>
#include <optional>
#include <vector>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/jobs/job.hpp"
#include "core/memory/held_jobs.hpp"
#include "core/memory/job_table.hpp"
#include "core/memory/node_pool.hpp"
#include "core/access/operators.hpp"
#include "core/access/pilot_token.hpp"
#include "core/jobs/pruned_jobs.hpp"
#include "core/policy/priority_policy.hpp"
#include "core/storage/storage.hpp"
#include "core/workers/worker.hpp"

namespace baton::core {

// Higher is better: platform (HPC before Salad), GPU count, VRAM, then the earlier
// registration and the smaller id win ties.
struct worker_rank {
  int hpc = 0;
  int gpu_count = 0;
  int64_t vram_centi_gb = 0;
  int model_rank = 0;
  time_us registered_at = 0;
  // The worker's own id (in its node of world::workers, never erased; or the worker passed to
  // rank_of, which must outlive the rank), so the idle index allocates nothing per key.
  std::string_view id;
  const worker* owner = nullptr;  // the worker itself (same lifetime as id); not part of the order
};
bool operator<(const worker_rank& a, const worker_rank& b);  // a ranks better than b
worker_rank rank_of(const worker& w);
// The rank as one number for display and decision records (monotone in the ordering above
// except for the tie-breakers).
int64_t score_of(const worker& w);

// Ordered sets that also answer "how many come before x" and "the k-th" in O(log n), so a
// poll in a large homogeneous pool need not walk every better worker (libstdc++'s pb_ds).
// Their nodes come from a pool (core/memory/node_pool.hpp).
template <class T>
using ranked_set = __gnu_pbds::tree<T, __gnu_pbds::null_type, std::less<T>, __gnu_pbds::rb_tree_tag,
                                    __gnu_pbds::tree_order_statistics_node_update, pooled_allocator<char>>;
// A queued job's place in the evaluation order : jobs that may preempt others
// first, then higher partition tier, then higher priority, then the earlier submit, then the
// smaller id. (Slurm's advance reservations, second in its order, have no equivalent here.)
struct queue_key {
  bool preemptor = false;
  int tier = 0;
  int64_t priority = 0;
  time_us submitted = 0;
  // The job's own id, in its node of world::jobs (never erased, never copied: the world is
  // move-only), so the index allocates nothing per key.
  std::string_view id;
  const job* owner = nullptr;  // the job itself (same lifetime as id); not part of the order
};
bool operator<(const queue_key& a, const queue_key& b);  // a is considered before b
queue_key queue_key_of(const job& j);

// Decayed usage of one association (account/user), for fair share: closed run segments
// folded in as they end (decayed to `as_of`), open ones measured when asked.
struct association_usage {
  double closed = 0;
  time_us as_of = 0;
  // Jobs of this association with an open segment: when it started and the GPUs it counts.
  // Kept here (by job id, the order the sum is taken in) so measuring them reads no job.
  struct open_segment {
    time_us started_at = 0;
    int gpus = 1;
  };
  std::map<std::string, open_segment> running;
};

// What the last scheduler.priorities_recalculated recorded, and what follows from it.
struct priority_state {
  bool recorded = false;  // before the first recalculation (older logs): FIFO, every tier 0
  priority_policy policy;
  std::string policy_cbor;  // the policy's record as the log holds it ("" before any), to tell a changed policy cheaply
  time_us calculated_at = 0;
  struct share {
    double fair_share = 0, level_fs = 0, target = 0, actual = 0, usage = 0;
  };
  std::map<std::string, share> shares;  // association "account/user" -> its figures
  uint32_t max_gpu_count = 1;           // largest worker, normalises job size
  double backlog = 0;                   // Lattice f6 at the recalculation
};

// What the last planning cycle (scheduler.plan_made, core/world/plan_cycle.hpp) recorded.
struct planned_slot {
  std::string worker_id;
  time_us start = 0, end = 0;
};
struct live_plan {
  time_us planned_at = 0;
  std::string digest;                                   // of the whole plan, to skip an unchanged one
  std::map<std::string, std::string> start_for_worker;  // idle worker -> the job it should take
  std::map<std::string, planned_slot> reservations;     // job -> where and when it is expected to start
  size_t reservations_total = 0;
};

struct world {
  world() = default;
  world(const world&) = delete;  // indexes point into the maps' nodes
  world& operator=(const world&) = delete;
  world(world&&) = default;
  world& operator=(world&&) = default;

  job_table jobs;  // every job not pruned (core/memory/job_table.hpp: by id, walked in id order)
  // Every pruned job (job.pruned): out of `jobs` and every index, so memory stays bounded
  // however many jobs a campaign submits; its stub keeps its id taken (core/jobs/pruned_jobs.hpp).
  pruned_jobs pruned;
  std::map<std::string, worker> workers;
  // Every queued job (held and blocked too), oldest first: submit time → the job.
  std::map<std::pair<time_us, std::string_view>, job*> queued;
  // Every job not pruned, for listing (jobs_by_created): its id viewed in the job itself (a job
  // leaves this index before it leaves `jobs`).
  std::set<std::pair<time_us, std::string_view>> by_created;
  std::set<std::tuple<time_us, std::string>> by_registered;  // every worker, for listing
  held_jobs job_of_worker;                                   // worker id -> the job it occupies (core/memory/held_jobs.hpp)
  // Per worker image (only workers and jobs of one image compete): the eligible queued jobs
  // (not held, not blocked) in evaluation order, and the idle workers best first.
  std::map<std::string, ranked_set<queue_key>> queued_by_image;
  std::map<std::string, ranked_set<worker_rank>> idle_by_image;
  // Eligible queued jobs not every worker of the image can run (pinned to clusters, or more
  // than one GPU): with none, a poll takes the O(log n) path.
  std::map<std::string, size_t> constrained_queued_by_image;
  std::map<std::string, std::multiset<int>> worker_gpus_by_image;  // GPU counts of workers not gone
  uint32_t largest_worker_gpus = 0;  // the most GPUs of any worker ever registered (placeholders aside)
  // Deadline-aware assignment (core/planning/deadline.hpp), per image: the allocation ends of idle
  // workers that reported one, and (checkpoints, time limit or -1) of every queued job (held
  // and blocked too). A poll keeps the O(log n) path when the tightest idle worker fits the
  // most demanding job.
  std::map<std::string, std::multiset<time_us>> idle_allocation_ends_by_image;
  // (A count per distinct pair: the queue's jobs share a few, and a node per job cost an allocation.)
  std::map<std::string, std::map<std::pair<bool, int64_t>, uint32_t>> queued_limits_by_image;
  std::map<std::string, association_usage> usage;       // "account/user" -> decayed GPU-seconds
  std::map<std::string, uint32_t> active_jobs_by_user;  // pending + running (not terminal), for the per-user cap
  // QOS running limits: jobs holding a worker per "qos/user", and that group's queued jobs.
  std::map<std::string, uint32_t> running_by_qos_user;
  std::map<std::string, std::map<std::pair<time_us, std::string_view>, job*>> queued_by_qos_user;
  // Each (account, user, qos) group's slots in the four maps above, found once per group: a
  // new job points to its group's entry here (job_group_ref) instead of building
  // "account/user" and "qos/user" keys and searching four maps. Those maps never erase an
  // entry, so the pointers hold; this map's entries never move (a rehash keeps its nodes).
  // Keyed by group_key() (core/world/world.cpp); only looked up, never iterated.
  std::unordered_map<std::string, job_group_slots> group_slots;
  std::map<std::string, std::set<std::string>> dependents;  // parent job -> the jobs that depend on it
  // Job arrays: each task's array, and each array's tasks by index (jobs not pruned).
  std::map<std::string, array_task, std::less<>> array_of_job;
  std::map<std::string, std::map<uint32_t, std::string>> arrays;
  priority_state priority;
  live_plan plan;
  size_t preemptions_in_flight = 0;  // jobs told to leave their worker for a preemptor (core/world/preemption.hpp)
  // A recalculation decided but not yet in force (scheduler.priorities_recalculated with
  // "deferred"): the queue keeps its order until scheduler.priorities_applied swaps it in, so
  // the scheduler can build the new order in slices between polls (core/world/staged_rekey.hpp).
  std::optional<priority_state> priority_pending;
  // While such a build runs: the jobs whose queue-relevant state changed since it began (they
  // are re-keyed again at the swap), and a count of changes to the workers' GPU counts (a
  // Lattice input). Live bookkeeping only; replay never stages.
  // Events applied so far, batond's own stream aside: a point in the log that a decision
  // taken on a snapshot of the world names (the planning cycle), so replay can find it.
  uint64_t applied = 0;
  bool staging = false;
  std::vector<job*> changed_while_staging;
  uint64_t worker_gpus_version = 0;
  std::map<std::string, operator_account> operators;  // named operators, revoked ones too
  rotating_secret pilot_token;                        // as the last pilot.token_rotated left it (core/access/pilot_token.hpp)
  time_us pilot_token_rotated_at = 0;                 // 0: never rotated (the configured token is in force)
  std::map<std::string, std::string> placeholder_by_provider;     // "<cluster>:<slurm id>" -> worker id
  std::set<std::string> disabled_clusters;                        // by an operator; enabled is the default
  std::map<std::string, nlohmann::json> last_submission_failure;  // cluster -> what sbatch said, and when
  nlohmann::json salad_status = nlohmann::json::object();         // last scaling and last failure
  storage_book storage;  // who holds which blob (core/storage/storage.hpp), from the storage stream

  const job* find_job(const std::string& id) const;             // nullptr for a pruned job too
  const array_task* array_of(const std::string& job_id) const;  // nullptr: no array's task
  std::optional<pruned_job> find_pruned(const std::string& id) const;
  // A job's status, pruned or not; empty for an id no job has.
  std::optional<job_status> status_of_job(const std::string& id) const;
  const worker* find_worker(const std::string& id) const;
  // The job a worker occupies (job_of_worker.find), or nullptr.
  const std::string* held_job(const std::string& worker_id) const;

  // A hash lookup beside `workers`, for the per-poll finds (a 100k-entry std::map of UUID
  // strings costs ~17 cache-missing string compares per find; jobs are found in their own
  // table, held jobs in held_jobs). Never iterated, so hashing never decides an order. A
  // copied world starts with an empty table (its pointers would point into the source) and
  // refills it on first use, noticed by the size.
  struct lookup_tables {
    std::unordered_map<std::string, worker*> workers;
    lookup_tables() = default;
    lookup_tables(const lookup_tables&) {}
    lookup_tables& operator=(const lookup_tables&) {
      workers.clear();
      return *this;
    }
    lookup_tables(lookup_tables&&) = default;  // map nodes move with their map: pointers stay valid
    lookup_tables& operator=(lookup_tables&&) = default;
  };
  mutable lookup_tables lookups;
  void refresh_lookups() const;  // refills the tables if they fell behind the maps (after a copy)
};

// The job as a job.pruned event leaves it (marked pruned, its recorded priority), taken
// before apply() turns it into a stub: for readers that keep pruned jobs whole (the SQL
// views, the what-if workload, a job's story). Empty if the world holds no such job.
std::optional<job> as_pruned(const world& w, const std::string& job_id, const ev::payload& payload, time_us at);

// Every job's id, pruned ones too, in creation order then id (how jobs are listed):
// f(id, j), j the job when the table holds it, nullptr for a pruned job's stub (so a
// listing does not look each job up again). Oldest first, or newest first.
template <class F>
void for_each_job_by_created(const world& w, bool newest_first, F&& f) {
  // by_created (jobs) and the stubs merged: two sorted sequences, each given in order.
  std::vector<std::pair<time_us, std::string>> gone;
  gone.reserve(w.pruned.size());
  w.pruned.for_each(newest_first, [&](const std::string& id, const pruned_job& p) { gone.emplace_back(p.created_at, id); });
  auto before = [&](const auto& a, const auto& b) { return newest_first ? a > b : a < b; };
  auto g = gone.begin();
  auto live = [&](const std::pair<time_us, std::string_view>& k) {
    for (; g != gone.end() && before(std::pair<time_us, std::string_view>{g->first, g->second}, k); ++g)
      f(g->second, static_cast<const job*>(nullptr));
    const job* j = w.jobs.find(k.second);
    f(j->id, j);  // (the job's own id: the index only views it)
  };
  if (newest_first)
    for (auto it = w.by_created.rbegin(); it != w.by_created.rend(); ++it) live(*it);
  else
    for (const auto& key : w.by_created) live(key);
  for (; g != gone.end(); ++g) f(g->second, static_cast<const job*>(nullptr));
}

// Fills every index (and the lookup tables) from the jobs, workers and priority state alone:
// for a world decoded from a snapshot (core/world/world_snapshot.hpp), whose indexes are not stored.
void rebuild_indexes(world& w);

// Every idle worker (registered, not gone, holding no job), best first, over all images: for
// listings and tests (decisions use idle_by_image, which polls keep in step).
std::vector<worker_rank> idle_workers(const world& w);

// In the evaluation-order index (what polls and provisioning see): queued, not held, not
// waiting on a dependency, not over a limit.
bool eligible(const job& j);
// Not every worker of the image can run it (pinned to clusters or to a conformance
// fingerprint, or more than one GPU).
bool constrained(const job& j);

// batond's own run records: not the world's (not applied, not counted in world::applied).
inline constexpr const char* daemon_stream = "daemon";

// Applies every event of an accepted decision, as they will be logged.
void apply(world& w, const decision& d, time_us at);
// Applies one logged event (any stream) to the world.
void apply(world& w, const std::string& stream, const ev::payload& payload, time_us at);
// The same from a JSON payload (read as its type's struct first: core/events/event_types.hpp).
void apply(world& w, const std::string& stream, const std::string& type, const nlohmann::json& payload, time_us at);
// The same for an event of the stream "job/<job_id>" with the id's hash taken already
// (job_table::hash_of): what a replay that reads and hashes ahead on another thread applies
// (the payload's strings move into the job).
void apply_job_event(world& w, std::string_view job_id, uint64_t job_id_hash, ev::payload&& payload, time_us at);

}  // namespace baton::core
