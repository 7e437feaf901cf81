#include "slurm/sbatch_script.hpp"

#include <kainjow/mustache.hpp>

#include "slurm/shell_quote.hpp"

namespace baton::slurm {

// Triple braces: no HTML escaping; the *_q values are already shell-quoted words.
const char* const default_template = R"SH(#!/bin/bash
#SBATCH --job-name={{job_name}}
#SBATCH --partition={{partition}}
{{#account}}
#SBATCH --account={{account}}
{{/account}}
{{#qos}}
#SBATCH --qos={{qos}}
{{/qos}}
{{#gres}}
#SBATCH --gres={{gres}}
{{/gres}}
#SBATCH --nodes={{nodes}}
#SBATCH --ntasks={{ntasks}}
{{#memory}}
#SBATCH --mem={{memory}}
{{/memory}}
{{#memory_per_gpu}}
#SBATCH --mem-per-gpu={{memory_per_gpu}}
{{/memory_per_gpu}}
#SBATCH --time={{wall_time}}
#SBATCH --signal=TERM@{{sigterm_margin_seconds}}
{{#log_directory}}
#SBATCH --output={{log_directory}}/baton-%j.out
#SBATCH --error={{log_directory}}/baton-%j.err
{{/log_directory}}
#SBATCH --export=ALL
set -euo pipefail
export BATON_URL={{{daemon_url_q}}}
export BATON_API_TOKEN_FILE={{{api_token_file_q}}}
{{#api_token_file_once}}
export BATON_API_TOKEN_FILE_REMOVE=1
{{/api_token_file_once}}
{{#ca_file_q}}
export BATON_CA_FILE={{{ca_file_q}}}
{{/ca_file_q}}
export BATON_CLUSTER_NAME={{{cluster_name_q}}}
export BATON_WORKER_IMAGE_KEY={{{image_key_q}}}
export BATON_PLACEHOLDER_ID={{{placeholder_id_q}}}
export BATON_PLATFORM=hpc
export BATON_HEARTBEAT_SECONDS={{heartbeat_seconds}}
export BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS={{handoff_margin_seconds}}
# The allocation's end, so the worker can hand off before Slurm's own SIGTERM.
end=$(squeue -j "$SLURM_JOB_ID" -h -o %e 2>/dev/null || true)
if [ -n "$end" ] && deadline=$(date -d "$end" +%s 2>/dev/null); then
  export BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS="$deadline"
fi
{{#apptainer_image_q}}
# The container may not see the token file: its content goes in through the environment.
APPTAINERENV_BATON_API_TOKEN="$(cat "$BATON_API_TOKEN_FILE")"
export APPTAINERENV_BATON_API_TOKEN
{{#api_token_file_once}}
rm -f "$BATON_API_TOKEN_FILE"
{{/api_token_file_once}}
# (The GPU settings too: a worker that finds no nvidia-smi registers only when told its count.)
for v in BATON_URL BATON_CA_FILE BATON_CLUSTER_NAME BATON_WORKER_IMAGE_KEY BATON_PLACEHOLDER_ID BATON_PLATFORM BATON_API_TOKEN_FILE_REMOVE \
         BATON_HEARTBEAT_SECONDS BATON_PROACTIVE_HANDOFF_MARGIN_SECONDS BATON_ALLOCATION_DEADLINE_EPOCH_SECONDS \
         BATON_GPU_MODEL BATON_GPU_COUNT BATON_GPU_VRAM_GB BATON_GPU_DRIVER_VERSION BATON_ALLOW_NO_GPU \
         SLURM_JOB_ID; do
  if [ -n "${!v:-}" ]; then export "APPTAINERENV_$v=${!v}"; fi
done
exec apptainer exec --nv --cleanenv --bind /tmp:/tmp {{{apptainer_image_q}}} /bin/sh -c {{{worker_command_q}}}
{{/apptainer_image_q}}
{{^apptainer_image_q}}
exec /bin/sh -c {{{worker_command_q}}}
{{/apptainer_image_q}}
)SH";

namespace {

using kainjow::mustache::data;
using kainjow::mustache::mustache;

data optional(const std::string& v) { return v.empty() ? data(false) : data(v); }

data values_of(const script_values& v) {
  data d;
  d.set("job_name", v.job_name);
  d.set("partition", v.partition);
  d.set("account", optional(v.account));
  d.set("qos", optional(v.qos));
  d.set("gres", optional(v.gres));
  d.set("memory", optional(v.memory));
  d.set("memory_per_gpu", optional(v.memory_per_gpu));
  d.set("wall_time", v.wall_time);
  d.set("log_directory", optional(v.log_directory));
  d.set("nodes", std::to_string(v.nodes));
  d.set("ntasks", std::to_string(v.ntasks));
  d.set("sigterm_margin_seconds", std::to_string(v.sigterm_margin_seconds));
  d.set("heartbeat_seconds", std::to_string(v.heartbeat_seconds));
  d.set("handoff_margin_seconds", std::to_string(v.handoff_margin_seconds));
  d.set("daemon_url_q", shell_quote(v.daemon_url));
  d.set("api_token_file_q", shell_quote(v.api_token_file));
  d.set("api_token_file_once", v.api_token_file_once ? data(true) : data(false));
  d.set("ca_file_q", v.ca_file.empty() ? data(false) : data(shell_quote(v.ca_file)));
  d.set("cluster_name_q", shell_quote(v.cluster_name));
  d.set("image_key_q", shell_quote(v.image_key));
  d.set("placeholder_id_q", shell_quote(v.placeholder_id));
  d.set("worker_command_q", shell_quote(v.worker_command));
  d.set("apptainer_image_q", v.apptainer_image.empty() ? data(false) : data(shell_quote(v.apptainer_image)));
  return d;
}

}  // namespace

std::string template_error(const std::string& template_text) {
  mustache m(template_text);
  return m.is_valid() ? "" : m.error_message();
}

rendered render_script(const std::string& template_text, const script_values& v) {
  rendered r;
  mustache m(template_text);
  if (!m.is_valid()) {
    r.error = m.error_message();
    return r;
  }
  r.text = m.render(values_of(v));
  return r;
}

}  // namespace baton::slurm
