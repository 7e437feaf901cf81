#!/usr/bin/env bash
# Durable dispatch: a PostgreSQL job queue against baton's assigning polls, in turn, RUNS times.
#   PostgreSQL 15 (fsync and synchronous_commit on) with JOBS queued jobs; pgbench (prepared
#   statements, no HTTP: the peer's best case) runs CLIENTS clients for SECONDS, each
#   transaction one claim (bench/peers/lib.sh: pg_claim_script: SELECT ... ORDER BY priority,
#   created LIMIT 1 FOR UPDATE SKIP LOCKED, the row updated, an event row inserted, commit).
#   baton: api_bench's assigning phase alone (API_BENCH_ASSIGNING_ONLY=1), the default config
#   (the SQLite view and state snapshots on), CLIENTS connections, WORKERS workers each polling
#   once (each poll hands out a job: a decision event, durable before the reply) for at most
#   SECONDS, JOBS queued jobs.
# Prints claims/s, mean and p99 latency for each and the ratio; then the median ratio of the
# runs against the target (>= 3x). Exits non-zero if either side could not run.
# Usage: bench/peers/dispatch.sh [RUNS=3] [SECONDS=5] [CLIENTS=32] [JOBS=100000] [WORKERS=40000]
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/peers/lib.sh
runs=${1:-3} seconds=${2:-5} clients=${3:-32} jobs=${4:-100000} workers=${5:-40000}
target=3
need_built bench/api_bench batond/batond
tmp=$(mktemp -d /tmp/baton-peers-dispatch.XXXXXX)
peers_on_exit "rm -rf $tmp"

echo "== dispatch: PostgreSQL 15 job queue (pgbench -M prepared, $clients clients, ${seconds} s, $jobs jobs) vs baton (api_bench assigning polls, $clients clients, $workers workers, $jobs jobs); load $(load_average)"
ratios=()
for run in $(seq 1 "$runs"); do
  # --- the peer
  pg="$tmp/pg$run"
  pg_init "$pg"
  pg_start "$pg"
  pg_make_queue "$pg" "$jobs"
  pg_claim_script >"$tmp/claim.sql"
  mkdir -p "$tmp/pglog$run"
  (cd "$tmp/pglog$run" && "$pg_bin/pgbench" -n -M prepared -c "$clients" -j 2 -T "$seconds" -l -f "$tmp/claim.sql" \
    -h "$pg" -U baton postgres >"$tmp/pgbench$run.out" 2>&1) || { cat "$tmp/pgbench$run.out" >&2; die "pgbench failed"; }
  # Each transaction's latency in µs is the third field of pgbench's per-transaction log.
  cat "$tmp/pglog$run"/pgbench_log.* | awk '{ printf "%.3f\n", $3 / 1000 }' >"$tmp/pglat$run"
  pg_tps=$(awk '/^tps = / { printf "%.0f", $3 }' "$tmp/pgbench$run.out")
  read -r pg_mean _ pg_p99 _ < <(latency_stats "$tmp/pglat$run")
  claimed=$(psql_do "$pg" "SELECT count(*) FROM jobs WHERE state = 'assigned'")
  events=$(psql_do "$pg" "SELECT count(*) FROM job_events")
  [[ "$claimed" == "$events" && "$claimed" -gt 0 ]] || die "PostgreSQL: $claimed jobs assigned but $events event rows"
  pg_crash "$pg"
  rm -rf "$pg"
  # --- baton
  API_BENCH_ASSIGNING_ONLY=1 "$bin/bench/api_bench" "$workers" "$jobs" "$clients" "$seconds" >"$tmp/api$run.out" 2>"$tmp/api$run.err" ||
    { cat "$tmp/api$run.out" "$tmp/api$run.err" >&2; die "api_bench failed"; }
  line=$(grep '^assigning polls:' "$tmp/api$run.out")
  baton_rate=$(awk '{ print $3 }' <<<"$line")
  baton_mean=$(sed -n 's/.* mean \([0-9.]*\) ms.*/\1/p' <<<"$line")
  baton_p99=$(sed -n 's/.* p99 \([0-9.]*\) ms.*/\1/p' <<<"$line")
  r=$(ratio "$baton_rate" "$pg_tps")
  ratios+=("$r")
  printf 'run %d: PostgreSQL %s claims/s (mean %s ms, p99 %s ms, %s claimed)  baton %s assigning polls/s (mean %s ms, p99 %s ms)  ratio %sx  load %s\n' \
    "$run" "$pg_tps" "$pg_mean" "$pg_p99" "$claimed" "$baton_rate" "$baton_mean" "$baton_p99" "$r" "$(load_average)"
done
m=$(median "${ratios[@]}")
echo "dispatch: median ratio ${m}x over $runs runs (${ratios[*]}); target >= ${target}x: $(verdict "$m" '>=' "$target")"
