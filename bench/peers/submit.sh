#!/usr/bin/env bash
# Submission: the real local Slurm (scripts/slurm-local.sh, a fresh cluster each run) against a
# fresh batond, in turn, RUNS times.
#   Slurm: `sbatch --hold --wrap=true` from CLIENTS concurrent shell loops, SBATCH_JOBS each (held:
#   nothing starts, so the node is not the limit; each sbatch is a process, as users submit);
#   then `sbatch --hold --array=0-9999` (one submission).
#   baton: POST /jobs from CLIENTS keep-alive connections (peer_client creates), BATON_JOBS each;
#   then one POST /jobs/batch of the job array "0-9999" (peer_client batch). The default config
#   (SQLite view on, every commit durable) but for the per-user job cap and the operator request
#   budget (both would measure the cap, not batond).
# Prints jobs/s for each and the ratio, and both arrays' times; then the medians against the
# targets (creates >= 20x sbatch; the 10,000-job batch under 2 s). Exits non-zero if either
# side could not run.
# Usage: bench/peers/submit.sh [RUNS=3] [CLIENTS=8] [SBATCH_JOBS=50] [BATON_JOBS=1000]
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/peers/lib.sh
runs=${1:-3} clients=${2:-8} sbatch_jobs=${3:-50} baton_jobs=${4:-1000}
array=10000
need_built batond/batond bench/peer_client
tmp=$(mktemp -d /tmp/baton-peers-submit.XXXXXX)
peers_on_exit "rm -rf $tmp"
config="scheduling: {max_jobs_per_user: 100000000}
limits: {operator_requests_per_second: 0}"

echo "== submit: sbatch --hold from $clients clients ($sbatch_jobs jobs each) and sbatch --array=0-$((array - 1)) vs baton POST /jobs from $clients clients ($baton_jobs each) and POST /jobs/batch {array: 0-$((array - 1))}; load $(load_average)"
ratios=() baton_arrays=() slurm_arrays=()
for run in $(seq 1 "$runs"); do
  # --- the peer
  SLURM_LOCAL_EXTRA_CONF="$slurm_limits" slurm_start "$tmp/slurm$run"
  start=$(now_s)
  for c in $(seq 1 "$clients"); do
    (for _ in $(seq 1 "$sbatch_jobs"); do
      sbatch --hold --parsable --output=/dev/null --wrap=true >/dev/null || exit 1
    done) &
  done
  for c in $(seq 1 "$clients"); do wait -n || die "sbatch failed"; done
  end=$(now_s)
  submitted=$(squeue --noheader --format=%i | wc -l)
  [[ "$submitted" -eq $((clients * sbatch_jobs)) ]] || die "Slurm holds $submitted jobs, $((clients * sbatch_jobs)) submitted"
  slurm_rate=$(awk -v n="$submitted" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", n / (e - s) }')
  start=$(now_s)
  sbatch --hold --parsable --output=/dev/null --array=0-$((array - 1)) --wrap=true >/dev/null || die "sbatch --array failed"
  end=$(now_s)
  slurm_array=$(elapsed "$start" "$end")
  tasks=$(squeue --noheader --array --format=%i | wc -l)
  [[ "$tasks" -eq $((clients * sbatch_jobs + array)) ]] || die "Slurm lists $tasks jobs and tasks, $((clients * sbatch_jobs + array)) expected"
  slurm_stop
  # --- baton
  batond_start "$tmp/baton$run" "$config"
  port=${batond_url##*:}
  out=$(BATON_API_TOKEN="$peers_token" "$bin/bench/peer_client" creates "$port" "$clients" $((clients * baton_jobs))) ||
    die "peer_client creates failed"
  baton_rate=$(awk '{ print $7 }' <<<"$out")
  baton_lat=$(awk '{ printf "mean %s ms, p99 %s ms", $11, $15 }' <<<"$out")
  out=$(BATON_API_TOKEN="$peers_token" "$bin/bench/peer_client" batch "$port" "$array") || die "peer_client batch failed"
  baton_array=$(awk '{ print $5 }' <<<"$out")
  batond_stop
  rm -rf "$tmp/baton$run"
  r=$(ratio "$baton_rate" "$slurm_rate")
  ratios+=("$r") baton_arrays+=("$baton_array") slurm_arrays+=("$slurm_array")
  printf 'run %d: sbatch %s jobs/s  baton %s creates/s (%s)  ratio %sx;  %d-job array: sbatch %s s, baton %s s  load %s\n' \
    "$run" "$slurm_rate" "$baton_rate" "$baton_lat" "$r" "$array" "$slurm_array" "$baton_array" "$(load_average)"
done
m=$(median "${ratios[@]}")
ma=$(median "${baton_arrays[@]}")
echo "submit: median creates ratio ${m}x over $runs runs (${ratios[*]}); target >= 20x: $(verdict "$m" '>=' 20)"
echo "submit: median $array-job batch ${ma} s (${baton_arrays[*]}; sbatch --array $(median "${slurm_arrays[@]}") s); target < 2 s: $(verdict "$ma" '<=' 2)"
