#pragma once
// Slurm clusters batond provisions pilot workers on: one entry per (cluster, partition),
// `extends` for shared settings, `is_template` for entries that only exist to be extended.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace baton::config {

struct image_source {
  std::string sif_path;   // an Apptainer image on the shared filesystem
  std::string image_uri;  // docker://, oras://, ... (a bare reference gets docker://)
  // Neither: the worker runs directly on the node (tests, bare-metal installs).
};

struct cluster_config {
  std::string name;  // unique; placeholders are "<name>:<slurm job id>"
  std::string partition, account, qos, gres, memory, memory_per_gpu, wall_time = "4:00:00", log_directory;
  int64_t wall_time_seconds = 4 * 3600;  // derived from wall_time at load (0: UNLIMITED)
  int nodes = 1, ntasks = 1;
  std::string gpu_type;  // what its workers will report, shown on placeholders
  int gpu_count = 0;
  std::string strategy = "reactive";  // reactive | continuous | jit_threshold
  double jit_threshold_hours = 6.0;
  int max_pending_jobs = 1;                      // placeholders pending at once per (cluster, image)
  std::string ssh_host, ssh_user, ssh_key_file;  // ssh_host empty: sbatch runs locally
  int ssh_port = 22;
  std::vector<std::string> ssh_options;  // extra ssh -o values
  int submit_timeout_seconds = 120, query_timeout_seconds = 30, sigterm_margin_seconds = 300;
  // The worker hands its job off this long before the allocation ends, ideally before
  // Slurm's own SIGTERM (sigterm_margin_seconds) so a slow final checkpoint still has time.
  // Not set (-1): 600 s, or a quarter of wall_time if that is shorter. 0: only the SIGTERM.
  int handoff_margin_seconds = -1;
  std::string worker_command = "baton-worker";
  // Where batond writes each pilot's one-time registration credential, one file per pilot
  // (mode 0600 in a 0700 directory; over ssh on the cluster's side), as the nodes see it: an
  // absolute path on a filesystem they share with the submitting host. "" = the top-level
  // provisioning.pilot_credential_dir. The batch script names the file, never the credential.
  std::string pilot_credential_dir;
  // workers.accept_shared_token only (RelayMD workers use the operator token for every call, so
  // one-time credentials do not apply): where the nodes read that token; "" = batond's
  // <data_dir>/pilot_credential.
  std::string pilot_token_file;
  std::string ca_file;  // https daemon_url: the CA file the pilots check batond's certificate against
  std::map<std::string, image_source> worker_images;  // image key -> where its worker image lives
  std::string template_path;                          // operator's own mustache template ("" = built in)
  std::string template_text;                          // its content, read at load
};

struct provisioning_config {
  int interval_seconds = 60;  // each cluster's cycle: reap dead placeholders, then submit
  // baton's own sbatch and squeue calls against one Slurm controller (as Palmetto's Slurm allows a
  // user: 1000 requests, refilled at 2 per second); calls beyond wait for the next cycle.
  double slurm_calls_burst = 1000;
  double slurm_calls_per_second = 2;
  std::string daemon_url;   // what pilot workers call ("" = http://<listen host>:<port>)
  std::string scripts_dir;  // redacted copies of submitted scripts ("" = <data_dir>/slurm-scripts)
  // Each pilot's one-time registration credential, one file per pilot, where the compute nodes
  // read it (a cluster entry may name its own): "" = <data_dir>/pilot-credentials, a directory
  // of its own, apart from the admin token (docs/security.md).
  std::string pilot_credential_dir;
};

// Salad Cloud: one container group whose replica count follows cloud-eligible demand.
struct salad_config {
  std::string organization, project, container_group;
  std::string api_base_url = "https://api.salad.com/api/public";
  std::string worker_image_key;  // the image its containers run ("" = jobs.default_worker_image)
  int max_replicas = 10;
  int interval_seconds = 60;
  int timeout_seconds = 10;
  std::string api_key;  // secret: only from BATON_SALAD_API_KEY
  bool enabled() const { return !organization.empty() && !project.empty() && !container_group.empty(); }
};

}  // namespace baton::config
