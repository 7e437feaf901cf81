#pragma once
// The batch script that starts a pilot worker: a mustache template (built in, or the
// operator's own) rendered with values that are either validated Slurm directive values or
// shell-quoted words. It holds no secret: the pilot's credential is read from a file the
// script names (Slurm keeps scripts and shows them to anyone with scontrol access to the job).
#include <optional>
#include <string>

namespace baton::slurm {

struct script_values {
  // #SBATCH directive values: validated at config load (no spaces, quotes or newlines).
  std::string job_name, partition, account, qos, gres, memory, memory_per_gpu, wall_time = "4:00:00", log_directory;
  int nodes = 1, ntasks = 1, sigterm_margin_seconds = 300;
  int handoff_margin_seconds = 600;  // exported to the worker (0: only Slurm's SIGTERM)
  // Shell values: quoted when rendered, so any content stays inert.
  std::string daemon_url, api_token_file, ca_file, cluster_name, image_key, worker_command = "baton-worker", apptainer_image,
                                                                            placeholder_id;
  int heartbeat_seconds = 60;
  // api_token_file holds this pilot's one-time registration credential: the worker (or the
  // script, for a container) removes it once read (BATON_API_TOKEN_FILE_REMOVE=1).
  bool api_token_file_once = false;
};

extern const char* const default_template;

struct rendered {
  std::string text;   // to sbatch, and its copy on disk
  std::string error;  // template error (then text is empty)
};

rendered render_script(const std::string& template_text, const script_values& v);
// "" when the template parses, else the parser's message (checked at config load).
std::string template_error(const std::string& template_text);

}  // namespace baton::slurm
