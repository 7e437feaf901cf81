#!/usr/bin/env bash
# Responsiveness during scheduling cycles: the real local Slurm (scripts/slurm-local.sh) against
# batond, each with PENDING pending jobs, in turn, RUNS times (each run a fresh cluster and batond).
#   Slurm: its one node (4 CPUs) held by a running exclusive job (12 h limit), PENDING jobs of one
#   CPU and 10 minutes that cannot start, backfill every second testing all of them
#   (bf_interval=1, bf_max_job_test=10000; the rest Slurm's defaults). For SECONDS, two closed
#   loops: `squeue --jobs=<the running job>` (one job's line: the time is the wait on slurmctld)
#   and `sbatch --hold --wrap=true` (held: not added to what backfill tests), each call timed.
#   `sdiag` gives the backfill cycles over that window (count, mean and max length).
#   baton: peer_client cycles: BUSY workers each running a job, PENDING jobs queued, batond's own
#   loops running a planning cycle (bf_interval_seconds 1; bf_max_job_test 10000 and no per-user
#   or per-partition bound: every pending job tested, as Slurm's) and a priority recalculation
#   (priority_calc_period_seconds 1) every second; for SECONDS a poll every 5 ms (each by another
#   idle worker, registered before; each is handed a job) and a POST /jobs every 20 ms, each
#   timed; the cycles counted by their events on GET /events/stream.
# Prints the latencies (p50, p99, max) of each side and the cycles over the window; the target:
# baton's worst poll <= 1/10 of Slurm's worst squeue (ratio Slurm / baton >= 10), each the worst
# over a window with a cycle every second (baton's window holds about twice as many cycles).
# Exits non-zero if either side could not run.
# Usage: bench/peers/cycles.sh [RUNS=3] [SECONDS=10] [PENDING=10000] [BUSY=2000]
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/peers/lib.sh
runs=${1:-3} seconds=${2:-10} pending=${3:-10000} busy=${4:-2000}
need_built batond/batond bench/peer_client
tmp=$(mktemp -d /tmp/baton-peers-cycles.XXXXXX)
peers_on_exit "rm -rf $tmp"
config="scheduling:
  max_jobs_per_user: 100000000
  priority_calc_period_seconds: 1
  backfill: {bf_interval_seconds: 1, bf_max_job_test: 10000, bf_max_job_user: 0, bf_max_job_part: 0}
limits: {operator_requests_per_second: 0, worker_requests_per_second: 0}
workers: {heartbeat_interval_seconds: 3600, reaper_interval_seconds: 3600}"

# time_loop OUT END_US COMMAND...: runs COMMAND back to back until END_US (epoch µs); one
# latency in ms a line in OUT.
time_loop() {
  local out=$1 end=$2 s e
  shift 2
  while ((${EPOCHREALTIME/./} < end)); do
    s=${EPOCHREALTIME/./}
    "$@" >/dev/null || return 1
    e=${EPOCHREALTIME/./}
    echo "$(((e - s) / 1000)).$(printf '%03d' $(((e - s) % 1000)))" >>"$out"
  done
}

echo "== cycles: $pending pending jobs; Slurm squeue/sbatch latency while backfill runs vs baton poll/create latency while planning cycles and recalculations run, ${seconds} s each; load $(load_average)"
ratios=()
for run in $(seq 1 "$runs"); do
  # --- the peer
  SLURM_LOCAL_SCHEDULER_PARAMETERS="batch_sched_delay=0,bf_interval=1,bf_max_job_test=$pending" \
    SLURM_LOCAL_EXTRA_CONF="$slurm_limits" slurm_start "$tmp/slurm$run"
  blocker=$(sbatch --parsable --exclusive --time=12:00:00 --output=/dev/null --wrap='sleep 86400')
  wait_until 60 "the node-filling job to run" bash -c "[[ \$(squeue --noheader --jobs=$blocker --format=%T) == RUNNING ]]" ||
    die "Slurm did not start the node-filling job"
  per=$(((pending + 7) / 8))
  for c in $(seq 1 8); do
    (for i in $(seq 1 "$per"); do
      (((c - 1) * per + i <= pending)) || break
      sbatch --parsable --time=10 --output=/dev/null --wrap=true >/dev/null || exit 1
    done) &
  done
  for c in $(seq 1 8); do wait -n || die "sbatch failed"; done
  queued=$(squeue --noheader --states=PENDING --format=%i | wc -l)
  [[ "$queued" -eq "$pending" ]] || die "Slurm has $queued pending jobs, $pending submitted"
  # A full backfill cycle over them before the window: the first one's length says what a cycle costs.
  sdiag --reset >/dev/null
  wait_until 120 "a backfill cycle" bash -c "sdiag | grep -q 'Total cycles: [1-9]'" || die "Slurm's backfill did not run"
  sdiag --reset >/dev/null
  end=$((${EPOCHREALTIME/./} + seconds * 1000000))
  : >"$tmp/squeue$run" >"$tmp/sbatch$run"
  time_loop "$tmp/squeue$run" "$end" squeue --noheader --jobs="$blocker" --format=%i &
  sq=$!
  time_loop "$tmp/sbatch$run" "$end" sbatch --hold --parsable --output=/dev/null --wrap=true &
  sb=$!
  wait "$sq" || die "squeue failed"
  wait "$sb" || die "sbatch failed"
  sdiag >"$tmp/sdiag$run"
  bf=$(awk -F': *' '/Backfilling stats/ { on = 1 } on && /Total cycles/ { n = $2 } on && /Mean cycle/ { m = $2 }
        on && /Max cycle/ { x = $2 } END { printf "%d %.0f %.0f", n, m / 1000, x / 1000 }' "$tmp/sdiag$run")
  read -r bf_n bf_mean bf_max <<<"$bf"
  [[ "$bf_n" -gt 0 ]] || die "no backfill cycle ran in the window"
  read -r _ sq_p50 sq_p99 sq_max < <(latency_stats "$tmp/squeue$run")
  read -r _ sb_p50 sb_p99 sb_max < <(latency_stats "$tmp/sbatch$run")
  busy_share=$(awk -v n="$bf_n" -v m="$bf_mean" -v s="$seconds" 'BEGIN { printf "%.0f", 100 * n * m / 1000 / s }')
  slurm_stop
  # --- baton
  batond_start "$tmp/baton$run" "$config"
  out=$(BATON_API_TOKEN="$peers_token" "$bin/bench/peer_client" cycles "${batond_url##*:}" "$pending" "$busy" "$seconds") ||
    { echo "$out" >&2; die "peer_client cycles failed"; }
  batond_stop
  rm -rf "$tmp/baton$run"
  field() { awk -v key="$1" -v f="$2" '$2 == key { for (i = 3; i < NF; i++) if ($i == f) print $(i + 1) }' <<<"$out"; }
  poll_p50=$(field polls p50) poll_p99=$(field polls p99) poll_max=$(field polls max)
  cr_p50=$(field creates p50) cr_p99=$(field creates p99) cr_max=$(field creates max)
  [[ "$(field events plans)" -gt 0 && "$(field events recalculations)" -gt 0 ]] || die "batond ran no planning cycle or no recalculation in the window"
  r=$(ratio "$sq_max" "$poll_max")
  ratios+=("$r")
  printf 'run %d: Slurm, %d backfill cycles (mean %s ms, max %s ms; busy %s%% of the window): squeue p50 %s p99 %s max %s ms (%d calls), sbatch p50 %s p99 %s max %s ms (%d calls)\n' \
    "$run" "$bf_n" "$bf_mean" "$bf_max" "$busy_share" "$sq_p50" "$sq_p99" "$sq_max" "$(wc -l <"$tmp/squeue$run")" \
    "$sb_p50" "$sb_p99" "$sb_max" "$(wc -l <"$tmp/sbatch$run")"
  printf 'run %d: baton, %s plans made, %s recalculations (%s put in force): polls p50 %s p99 %s max %s ms (%s polls), creates p50 %s p99 %s max %s ms (%s)\n' \
    "$run" "$(field events plans)" "$(field events recalculations)" "$(field events applied)" "$poll_p50" "$poll_p99" \
    "$poll_max" "$(field polls n)" "$cr_p50" "$cr_p99" "$cr_max" "$(field creates n)"
  printf 'run %d: worst squeue / worst poll: %sx  load %s\n' "$run" "$r" "$(load_average)"
done
m=$(median "${ratios[@]}")
echo "cycles: median ratio ${m}x over $runs runs (${ratios[*]}); target: baton's worst poll <= 1/10 of Slurm's worst squeue (>= 10x): $(verdict "$m" '>=' 10)"
