#include "worker/config.hpp"

#include <CLI/CLI.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace baton::worker {

std::string derive_provider_id(const std::string& cluster, const std::string& slurm_job_id) {
  if (cluster.empty() || slurm_job_id.empty()) return "";
  return cluster + ":" + slurm_job_id;
}

namespace {

// Fills derived fields (platform default, provider id) and returns the first problem, or "".
std::string finalize(worker_config& c) {
  if (c.platform.empty()) c.platform = c.slurm_job_id.empty() ? "salad" : "hpc";
  if (c.platform != "hpc" && c.platform != "salad") return "platform must be 'hpc' or 'salad', got '" + c.platform + "'";
  if (c.provider_id.empty()) c.provider_id = derive_provider_id(c.cluster_name, c.slurm_job_id);
  if (c.api_token.empty() && !c.api_token_file.empty()) {
    std::ifstream in(c.api_token_file);
    if (!in) return "cannot read the API token file " + c.api_token_file;
    std::getline(in, c.api_token);
    while (!c.api_token.empty() && std::isspace(static_cast<unsigned char>(c.api_token.back()))) c.api_token.pop_back();
    if (c.api_token.empty()) return "the API token file " + c.api_token_file + " is empty";
    // A one-time credential is spent once this worker registers; removed now, no payload that
    // runs later finds it where the batch script said it was.
    if (c.api_token_file_remove && std::remove(c.api_token_file.c_str()) != 0)
      return "cannot remove the one-time credential file " + c.api_token_file;
  }
  if (c.api_token.empty())
    return "the shared API token is required (BATON_API_TOKEN or --api-token, or BATON_API_TOKEN_FILE or --api-token-file)";
  if (c.worker_image_key.find_first_not_of(" \t") == std::string::npos) return "worker image key must not be blank";
  if (c.idle_strategy != "immediate_exit" && c.idle_strategy != "poll_then_exit")
    return "idle strategy must be immediate_exit or poll_then_exit, got '" + c.idle_strategy + "'";
  if (!(c.heartbeat_seconds > 0)) return "heartbeat interval must be positive";
  if (!(c.credential_rotate_seconds >= 0)) return "credential rotation interval must not be negative";
  if (!(c.checkpoint_seconds > 0)) return "checkpoint interval must be positive";
  if (!(c.idle_poll_seconds > 0)) return "idle poll interval must be positive";
  if (c.kill_grace_seconds < 0) return "kill grace must not be negative";
  if (!(c.handoff_margin_seconds >= 0)) return "handoff margin must not be negative";
  if (c.allocation_deadline < 0) return "allocation deadline must be epoch seconds (0 = none)";
  if (c.retry_attempts < 1) return "retry attempts must be at least 1";
  if (c.work_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    c.work_dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/baton-worker";
  }
  return "";
}

}  // namespace

std::optional<int> parse_args(int argc, char** argv, worker_config& c) {
  CLI::App app{"baton-worker: runs baton jobs on this machine, checkpoints them and hands them on"};
  // An option with its environment variable.
  auto opt = [&app](const std::string& flag, auto& value, const std::string& help, const std::string& env) {
    return app.add_option(flag, value, help)->envname(env);
  };
  opt("--url", c.url, "batond base URL", "BATON_URL")->capture_default_str();
  opt("--api-token", c.api_token, "shared API token (registration only)", "BATON_API_TOKEN");
  opt("--api-token-file", c.api_token_file, "file holding the shared API token (instead of --api-token)", "BATON_API_TOKEN_FILE");
  app.add_flag("--api-token-file-remove", c.api_token_file_remove,
               "the token file holds a one-time credential (a pilot's): remove it once read")
      ->envname("BATON_API_TOKEN_FILE_REMOVE");
  opt("--ca-file", c.ca_file, "https URL: CA certificate batond's is checked against (default: the system's CAs)",
      "BATON_CA_FILE");
  opt("--store-ca-file", c.store_ca_file,
      "stored bundles in an https object store: CA certificate its certificate is checked against (default: the system's CAs)",
      "BATON_STORE_CA_FILE");
  opt("--worker-image-key", c.worker_image_key, "worker image key", "BATON_WORKER_IMAGE_KEY")->capture_default_str();
  opt("--platform", c.platform, "hpc or salad (default: hpc inside Slurm, else salad)", "BATON_PLATFORM");
  opt("--gpu-model", c.gpu_model, "GPU model when nvidia-smi is absent", "BATON_GPU_MODEL");
  opt("--gpu-count", c.gpu_count, "GPU count when nvidia-smi is absent", "BATON_GPU_COUNT")->check(CLI::Range(0, 1024));
  app.add_flag("--allow-no-gpu", c.allow_no_gpu,
               "without nvidia-smi and --gpu-count, register with 0 GPUs (such a worker gets no job) instead of exiting")
      ->envname("BATON_ALLOW_NO_GPU");
  opt("--vram-gb", c.vram_gb, "VRAM per GPU (GB) when nvidia-smi is absent", "BATON_GPU_VRAM_GB");
  opt("--driver-version", c.driver_version, "GPU driver version when nvidia-smi is absent", "BATON_GPU_DRIVER_VERSION");
  opt("--slurm-job-id", c.slurm_job_id, "Slurm allocation id", "SLURM_JOB_ID");
  opt("--cluster-name", c.cluster_name, "cluster name (provider id = <cluster>:<slurm id>)", "BATON_CLUSTER_NAME");
  opt("--credential-rotate-seconds", c.credential_rotate_seconds,
      "ask batond for a new worker credential this often (0: never); the old one stays valid a while",
      "BATON_CREDENTIAL_ROTATE_SECONDS")
      ->capture_default_str();
  opt("--heartbeat-seconds", c.heartbeat_seconds, "heartbeat and cancel-check interval", "BATON_HEARTBEAT_SECONDS")
      ->capture_default_str();
  opt("--idle-strategy", c.idle_strategy, "immediate_exit | poll_then_exit", "BATON_IDLE_STRATEGY")->capture_default_str();
  opt("--idle-poll-seconds", c.idle_poll_seconds, "poll interval while idle", "BATON_IDLE_POLL_SECONDS")->capture_default_str();
  opt("--idle-max-seconds", c.idle_max_seconds, "exit after this long idle (poll_then_exit)", "BATON_IDLE_MAX_SECONDS")
      ->capture_default_str();
  opt("--work-dir", c.work_dir, "local scratch for job working dirs", "BATON_WORK_DIR");
  opt("--checkpoint-seconds", c.checkpoint_seconds, "checkpoint cycle interval", "BATON_CHECKPOINT_SECONDS")
      ->capture_default_str();
  opt("--kill-grace-seconds", c.kill_grace_seconds, "SIGTERM to SIGKILL grace for the payload", "BATON_KILL_GRACE_SECONDS")
      ->capture_default_str();
  opt("--handoff-margin-seconds", c.handoff_margin_seconds, "hand the running job off this long before the allocation deadline",
      "BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS")
      ->capture_default_str();
  opt("--allocation-deadline", c.allocation_deadline, "epoch seconds when the Slurm allocation ends (0 = none)",
      "BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS")
      ->capture_default_str();
  opt("--retry-base-seconds", c.retry_base_seconds, "first retry delay (doubles each time)", "BATON_RETRY_BASE_SECONDS")
      ->capture_default_str();
  opt("--retry-max-seconds", c.retry_max_seconds, "retry delay cap", "BATON_RETRY_MAX_SECONDS")->capture_default_str();
  opt("--retry-attempts", c.retry_attempts, "attempts per request on connection errors and 5xx", "BATON_RETRY_ATTEMPTS")
      ->capture_default_str();
  app.add_flag("--keep-work-dirs", c.keep_work_dirs, "keep job working dirs after the job ends");
  opt("--bundle-max-bytes", c.bundle_max_bytes, "refuse an archive bundle that unpacks to more bytes", "BATON_BUNDLE_MAX_BYTES")
      ->capture_default_str();
  opt("--bundle-max-members", c.bundle_max_members, "refuse an archive bundle with more members", "BATON_BUNDLE_MAX_MEMBERS")
      ->capture_default_str();
  opt("--log-level", c.log_level, "trace|debug|info|warn|error", "BATON_LOG_LEVEL")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto problem = finalize(c);
  if (!problem.empty()) {
    std::cerr << "baton-worker: " << problem << "\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace baton::worker
