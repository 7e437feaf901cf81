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

std::optional<int> parse_args(int argc, char** argv, worker_config& c) {
  CLI::App app{"baton-worker: runs baton jobs on this machine, checkpoints them and hands them on"};
  app.add_option("--url", c.url, "batond base URL")->envname("BATON_URL")->capture_default_str();
  app.add_option("--api-token", c.api_token, "shared API token (registration only)")->envname("BATON_API_TOKEN");
  app.add_option("--api-token-file", c.api_token_file, "file holding the shared API token (instead of --api-token)")
      ->envname("BATON_API_TOKEN_FILE");
  app.add_flag("--api-token-file-remove", c.api_token_file_remove,
               "the token file holds a one-time credential (a pilot's): remove it once read")
      ->envname("BATON_API_TOKEN_FILE_REMOVE");
  app.add_option("--ca-file", c.ca_file, "https URL: CA certificate batond's is checked against (default: the system's CAs)")
      ->envname("BATON_CA_FILE");
  app.add_option(
         "--store-ca-file", c.store_ca_file,
         "stored bundles in an https object store: CA certificate its certificate is checked against (default: the system's CAs)")
      ->envname("BATON_STORE_CA_FILE");
  app.add_option("--worker-image-key", c.worker_image_key, "worker image key")
      ->envname("BATON_WORKER_IMAGE_KEY")
      ->capture_default_str();
  app.add_option("--platform", c.platform, "hpc or salad (default: hpc inside Slurm, else salad)")->envname("BATON_PLATFORM");
  app.add_option("--gpu-model", c.gpu_model, "GPU model when nvidia-smi is absent")->envname("BATON_GPU_MODEL");
  app.add_option("--gpu-count", c.gpu_count, "GPU count when nvidia-smi is absent")
      ->envname("BATON_GPU_COUNT")
      ->check(CLI::Range(0, 1024));
  app.add_flag("--allow-no-gpu", c.allow_no_gpu,
               "without nvidia-smi and --gpu-count, register with 0 GPUs (such a worker gets no job) instead of exiting")
      ->envname("BATON_ALLOW_NO_GPU");
  app.add_option("--vram-gb", c.vram_gb, "VRAM per GPU (GB) when nvidia-smi is absent")->envname("BATON_GPU_VRAM_GB");
  app.add_option("--driver-version", c.driver_version, "GPU driver version when nvidia-smi is absent")
      ->envname("BATON_GPU_DRIVER_VERSION");
  app.add_option("--slurm-job-id", c.slurm_job_id, "Slurm allocation id")->envname("SLURM_JOB_ID");
  app.add_option("--cluster-name", c.cluster_name, "cluster name (provider id = <cluster>:<slurm id>)")
      ->envname("BATON_CLUSTER_NAME");
  app.add_option("--credential-rotate-seconds", c.credential_rotate_seconds,
                 "ask batond for a new worker credential this often (0: never); the old one stays valid a while")
      ->envname("BATON_CREDENTIAL_ROTATE_SECONDS")
      ->capture_default_str();
  app.add_option("--heartbeat-seconds", c.heartbeat_seconds, "heartbeat and cancel-check interval")
      ->envname("BATON_HEARTBEAT_SECONDS")
      ->capture_default_str();
  app.add_option("--idle-strategy", c.idle_strategy, "immediate_exit | poll_then_exit")
      ->envname("BATON_IDLE_STRATEGY")
      ->capture_default_str();
  app.add_option("--idle-poll-seconds", c.idle_poll_seconds, "poll interval while idle")
      ->envname("BATON_IDLE_POLL_SECONDS")
      ->capture_default_str();
  app.add_option("--idle-max-seconds", c.idle_max_seconds, "exit after this long idle (poll_then_exit)")
      ->envname("BATON_IDLE_MAX_SECONDS")
      ->capture_default_str();
  app.add_option("--work-dir", c.work_dir, "local scratch for job working dirs")->envname("BATON_WORK_DIR");
  app.add_option("--checkpoint-seconds", c.checkpoint_seconds, "checkpoint cycle interval")
      ->envname("BATON_CHECKPOINT_SECONDS")
      ->capture_default_str();
  app.add_option("--kill-grace-seconds", c.kill_grace_seconds, "SIGTERM to SIGKILL grace for the payload")
      ->envname("BATON_KILL_GRACE_SECONDS")
      ->capture_default_str();
  app.add_option("--handoff-margin-seconds", c.handoff_margin_seconds,
                 "hand the running job off this long before the allocation deadline")
      ->envname("BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS")
      ->capture_default_str();
  app.add_option("--allocation-deadline", c.allocation_deadline, "epoch seconds when the Slurm allocation ends (0 = none)")
      ->envname("BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS")
      ->capture_default_str();
  app.add_option("--retry-base-seconds", c.retry_base_seconds, "first retry delay (doubles each time)")
      ->envname("BATON_RETRY_BASE_SECONDS")
      ->capture_default_str();
  app.add_option("--retry-max-seconds", c.retry_max_seconds, "retry delay cap")
      ->envname("BATON_RETRY_MAX_SECONDS")
      ->capture_default_str();
  app.add_option("--retry-attempts", c.retry_attempts, "attempts per request on connection errors and 5xx")
      ->envname("BATON_RETRY_ATTEMPTS")
      ->capture_default_str();
  app.add_flag("--keep-work-dirs", c.keep_work_dirs, "keep job working dirs after the job ends");
  app.add_option("--bundle-max-bytes", c.bundle_max_bytes, "refuse an archive bundle that unpacks to more bytes")
      ->envname("BATON_BUNDLE_MAX_BYTES")
      ->capture_default_str();
  app.add_option("--bundle-max-members", c.bundle_max_members, "refuse an archive bundle with more members")
      ->envname("BATON_BUNDLE_MAX_MEMBERS")
      ->capture_default_str();
  app.add_option("--log-level", c.log_level, "trace|debug|info|warn|error")->envname("BATON_LOG_LEVEL")->capture_default_str();
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
