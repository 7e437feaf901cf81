#pragma once
// A worker's state and lifecycle. Liveness (the heartbeat lease) is soft state kept by the
// scheduler actor, not events: a heartbeat every minute from thousands of workers would
// flood the log without telling an auditor anything the reap events don't.
#include <optional>
#include <string>
#include <string_view>

#include "core/access/credential.hpp"
#include "core/events/domain.hpp"

namespace baton::core {

enum class platform : uint8_t { hpc, salad };

// What the table of known GPU models (core/workers/worker.cpp) says of a model string: the model
// with the longest known name it contains ("A100-PCIE-40GB" is an A100), or nothing.
struct gpu_model_facts {
  int rank = 0;        // tie-break among equal VRAM: H100 6 > A100 > A6000 > RTX 4090 > A10 > A30 1; unknown 0
  double vram_gb = 0;  // the model's VRAM, for workers that did not report theirs
};
gpu_model_facts facts_of_gpu_model(std::string_view gpu_model);
const char* to_string(platform p);
std::optional<platform> platform_from(const std::string& s);

struct worker {
  std::string id;
  platform kind = platform::hpc;
  std::string gpu_model;  // set with set_gpu_model(), which keeps `model` in step
  gpu_model_facts model;  // facts_of_gpu_model(gpu_model), read once instead of at every ranking
  int gpu_count = 0;
  double vram_gb = 0;
  std::string driver_version;  // the GPU driver, as the worker reported it ("" unknown)
  std::string worker_image_key;
  std::string provider_id;   // "<cluster>:<slurm job id>" on HPC, "" on Salad
  bool placeholder = false;  // a pending Slurm allocation, never assigned work (provisioning issue)
  bool gone = false;         // deregistered or reaped; kept for history, never deleted
  std::string gone_reason;   // "deregistered" | "reaped"
  time_us registered_at = 0;
  time_us gone_at = 0;
  rotating_secret credential;  // hex SHA-256 of the worker's own token (and the one it replaced)
  // When its allocation ends, as the worker reported at registration (0: unknown or none:
  // it takes any job). Jobs that do not fit the time left are not given to it (core/planning/deadline.hpp).
  time_us allocation_ends_at = 0;
  // A placeholder's requested Slurm wall time (0: unlimited or unknown): the capacity it will
  // be, from when its allocation starts.
  int64_t wall_time_seconds = 0;
  // A placeholder's one-time registration credential (hex SHA-256 of its secret): its own
  // pilot registers with it once, adopting this placeholder; "" once adopted or ended.
  std::string registration_sha256;

  std::string cluster() const;  // text before the first ':' of provider_id, "" if none
};

void set_gpu_model(worker& w, std::string gpu_model);

std::string worker_stream(const std::string& id);

// Its conformance fingerprint (Lattice's conformance group, cut to what a GPU worker can
// tell): GPU model and driver version, "unknown" for a driver it did not report.
std::string fingerprint_of(const worker& w);

struct register_worker {
  std::string id;  // chosen by the shell (fresh id) unless a placeholder is adopted
  platform kind = platform::hpc;
  std::string gpu_model;
  int gpu_count = 1;
  double vram_gb = 0;
  std::string worker_image_key;
  std::string provider_id;
  std::string credential_sha256;
  time_us allocation_ends_at = 0;  // 0: not reported
  std::string driver_version;      // "" not reported
};

// placeholder: the live placeholder with the same provider_id, if any.
decision decide_register(const worker* placeholder, const register_worker& c, time_us now);
decision decide_deregister(const worker& w, time_us now);
// A new token for the worker; its old one is accepted for grace_seconds more.
decision decide_rotate_credential(const worker& w, const std::string& credential_sha256, int64_t grace_seconds, time_us now);
decision decide_reap(const worker& w, time_us last_heartbeat, time_us now);

void evolve(worker& w, const ev::payload& payload, time_us at);

// RelayMD's WorkerRead shape plus derived state ("idle", "busy", "stale", "provisioning", "gone").
nlohmann::json to_json(const worker& w, const std::string& derived_state, std::optional<time_us> last_heartbeat);

}  // namespace baton::core
