#pragma once
// baton-worker settings: command-line flags, each with an environment fallback (CLI11 envname).
#include <cstdint>
#include <optional>
#include <string>

namespace baton::worker {

struct worker_config {
  std::string url = "http://127.0.0.1:36158";
  std::string api_token;               // shared X-API-Token, used only to register
  std::string api_token_file;          // or the file holding it (a pilot's batch script names the file, not the token)
  bool api_token_file_remove = false;  // the file holds a one-time credential: removed once read
  std::string ca_file;                 // https URL: the CA batond's certificate is checked against ("" = system CAs)
  std::string store_ca_file;           // an https object store's CA, for presigned transfers ("" = system CAs)
  std::string worker_image_key = "default";
  std::string platform;       // hpc | salad; empty = hpc inside Slurm, else salad
  std::string gpu_model;      // used only when nvidia-smi is absent
  int gpu_count = 0;          // 0: not given
  bool allow_no_gpu = false;  // register with 0 GPUs when nvidia-smi is absent and no count is given
  double vram_gb = 0;
  std::string driver_version;  // used only when nvidia-smi is absent
  std::string slurm_job_id, cluster_name;
  std::string provider_id;  // derived: "<cluster>:<slurm job id>"
  double heartbeat_seconds = 30;
  double credential_rotate_seconds = 86400;      // a new worker credential this often (0: never)
  std::string idle_strategy = "immediate_exit";  // immediate_exit | poll_then_exit
  double idle_poll_seconds = 30;
  double idle_max_seconds = 600;
  std::string work_dir;  // per-assignment working dirs go below this
  double checkpoint_seconds = 30;
  double kill_grace_seconds = 10;       // SIGTERM -> SIGKILL for the payload's process group
  double handoff_margin_seconds = 600;  // hand the job off this long before the allocation ends
  int64_t allocation_deadline = 0;      // epoch seconds when the Slurm allocation ends; 0 = none
  double retry_base_seconds = 1, retry_max_seconds = 30;
  int retry_attempts = 8;
  uint64_t bundle_max_bytes = uint64_t{8} << 30;  // an archive bundle may unpack to this much
  uint64_t bundle_max_members = 100000;           // and hold this many files and directories
  bool keep_work_dirs = false;
  std::string log_level = "info";
};

// "<cluster>:<slurm id>" when both are known, else empty.
std::string derive_provider_id(const std::string& cluster, const std::string& slurm_job_id);

// Parses flags and environment. Returns an exit code when the program should stop
// (--help, a bad flag or value), nullopt to carry on.
std::optional<int> parse_args(int argc, char** argv, worker_config& out);

}  // namespace baton::worker
