#!/usr/bin/env bash
# Restart after a crash (report only, no target): batond after `kill -9` against PostgreSQL's
# crash recovery, each three times.
#   baton: restart_bench EVENTS with RESTART_BENCH_KILL=1: a log of EVENTS events (a long MD
#   campaign's shape), the last state snapshot snapshot_every_events (100,000) before its end,
#   batond started, killed with SIGKILL once it serves, and timed from its start to serving
#   (its port file written) three times, each ended by SIGKILL (views off, as restart_bench).
#   PostgreSQL 15: the job queue of bench/peers/dispatch.sh with CLAIMS queued jobs, CLAIMS claims
#   made by pgbench (32 clients, the same claim), then `pg_ctl stop -m immediate` (no
#   checkpoint, as a crash); the crashed data directory is copied and each copy started, timed
#   from `pg_ctl start` to `pg_isready` answering (its log's redo time and the WAL replayed too).
# Usage: bench/peers/restart.sh [EVENTS=1000000] [CLAIMS=EVENTS]
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/peers/lib.sh
events=${1:-1000000} claims=${2:-${1:-1000000}}
clients=32
need_built bench/restart_bench batond/batond
tmp=$(mktemp -d /tmp/baton-peers-restart.XXXXXX)
peers_on_exit "rm -rf $tmp"

echo "== restart: batond after kill -9 with $events events vs PostgreSQL crash recovery after $claims claims; load $(load_average)"
# --- the peer
pg="$tmp/pg"
pg_init "$pg"
pg_start "$pg"
pg_make_queue "$pg" "$claims"
pg_claim_script >"$tmp/claim.sql"
start=$(now_s)
"$pg_bin/pgbench" -n -M prepared -c "$clients" -j 2 -t $(((claims + clients - 1) / clients)) -f "$tmp/claim.sql" \
  -h "$pg" -U baton postgres >"$tmp/pgbench.out" 2>&1 || true  # the last clients find no queued job left
made=$(psql_do "$pg" "SELECT count(*) FROM job_events")
[[ "$made" -ge $((claims - clients)) ]] || { cat "$tmp/pgbench.out" >&2; die "pgbench made $made of $claims claims"; }
echo "PostgreSQL: $made claims in $(elapsed "$start" "$(now_s)") s"
pg_crash "$pg"
# Three copies of the crashed directory, written to disk before any recovery starts: each
# recovery replays the same WAL, and its fsync of the data directory finds nothing dirty (a
# crash leaves what the server wrote since its last checkpoint dirty: so a lower bound).
for round in 1 2 3; do
  copy="$tmp/pg-recover$round"
  cp -a "$pg" "$copy"
  rm -f "$copy/server.log" "$copy/data/postmaster.pid" "$copy"/.s.PGSQL.*
  peers_on_exit "${pg_run_as[*]} $pg_bin/pg_ctl -D $copy/data -m immediate stop"
done
rm -rf "$pg"
sync
pg_times=()
for round in 1 2 3; do
  copy="$tmp/pg-recover$round"
  start=$(now_s)
  pg_ctl_start "$copy"
  wait_until 600 "PostgreSQL to recover" pg_ready "$copy" || { tail -20 "$copy/server.log" >&2; die "PostgreSQL did not recover"; }
  secs=$(elapsed "$start" "$(now_s)")
  pg_times+=("$secs")
  from=$(sed -n 's/.*redo starts at \([0-9A-F/]*\).*/\1/p' "$copy/server.log")
  to=$(sed -n 's/.*redo done at \([0-9A-F/]*\).*/\1/p' "$copy/server.log")
  wal=$(psql_do "$copy" "SELECT round(pg_wal_lsn_diff('$to', '$from') / 1048576)")
  # Where the time went, from the log's timestamps: the data directory's fsync before recovery
  # (recovery_init_sync_method=fsync, the default), the redo, the end-of-recovery checkpoint.
  phases=$(awk '{ split($2, t, ":"); at = t[1] * 3600 + t[2] * 60 + t[3] }
    /was interrupted/ { a = at } /automatic recovery in progress/ { b = at } /redo starts/ { c = at }
    /redo done/ { d = at } /checkpoint starting: end-of-recovery/ { e = at } /checkpoint complete/ { f = at }
    END { printf "data directory fsync %.2f s, redo %.2f s, end-of-recovery checkpoint %.2f s", b - a, d - c, f - e }' "$copy/server.log")
  echo "PostgreSQL crash recovery to accepting connections: $secs s (redo of $wal MiB of WAL; $phases)"
  pg_crash "$copy"
  rm -rf "$copy"
done
# --- baton
RESTART_BENCH_KILL=1 "$bin/bench/restart_bench" "$events" | tee "$tmp/restart.out"
baton_times=($(sed -n 's/.*after kill -9: \([0-9.]*\) s/\1/p' "$tmp/restart.out"))
[[ ${#baton_times[@]} -eq 3 ]] || die "restart_bench did not report three restarts"
mb=$(median "${baton_times[@]}") mp=$(median "${pg_times[@]}")
echo "restart: batond after kill -9 ($events events) ${mb} s (${baton_times[*]}); PostgreSQL crash recovery ($made claims) ${mp} s (${pg_times[*]}); batond / PostgreSQL $(ratio "$mb" "$mp") (report only)"
