#!/usr/bin/env bash
# Builds the release preset and runs the benchmarks named in docs/benchmarks.md.
# Usage: bench/run.sh [eventlog|api|import|preemption|sim|rederive|view|restart|blob|peers]   (default: all). All take
# about an hour on 2 cores (restart alone ~5 minutes: it writes a 10,000,000-event log first;
# peers ~25: each yardstick's peer and baton in turn, three runs; as root, for the local Slurm).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cmake --preset release >/dev/null
what="${1:-all}"
# Only what the chosen benchmark runs is built (all of them for all).
case "$what" in
  eventlog) targets=(eventlog_bench) ;;
  api) targets=(api_bench batond) ;;
  import) targets=(batond baton) ;;
  blob) targets=(blob_bench batond) ;;
  preemption) targets=(preemption_bench batond) ;;
  sim) targets=(sim_bench) ;;  # bench/sim_trace.sh builds baton-replay itself
  rederive) targets=(rederive_bench) ;;
  view) targets=(view_bench) ;;
  restart) targets=(restart_bench batond) ;;
  peers) targets=(api_bench restart_bench peer_client batond) ;;
  *) targets=(eventlog_bench api_bench preemption_bench sim_bench rederive_bench view_bench restart_bench blob_bench
              peer_client batond baton) ;;
esac
cmake --build --preset release --target "${targets[@]}" >/dev/null
if [[ "$what" == all || "$what" == eventlog ]]; then
  b=build/release/bench/eventlog_bench
  for producers in 32 256; do
    for run in 1 2 3; do "$b" append "$producers" 5; done
  done
  "$b" replay 1000000
  "$b" create 400000
fi
if [[ "$what" == all || "$what" == api ]]; then
  # The default config, the request path alone (SQL view and state snapshots off), and issue
  # 15's condition (the PostgreSQL view too, and 50 live-stream clients), in turn so all three
  # see the same machine.
  for run in 1 2 3; do
    echo "== api run $run: default config"
    build/release/bench/api_bench 10000 100000 32 5
    echo "== api run $run: views and snapshots off"
    API_BENCH_SQLITE=0 API_BENCH_EXTRA_CONFIG='event_log: {snapshot_every_events: 0}' \
      build/release/bench/api_bench 10000 100000 32 5
    echo "== api run $run: both SQL views and 50 live-stream clients"
    API_BENCH_SSE=50 API_BENCH_POSTGRES=1 build/release/bench/api_bench 10000 100000 32 5
  done
fi
if [[ "$what" == all || "$what" == import ]]; then
  bench/import_bench.sh 10000 3
fi
if [[ "$what" == all || "$what" == blob ]]; then
  build/release/bench/blob_bench --dir build --size-mib 1024
fi
if [[ "$what" == all || "$what" == preemption ]]; then
  build/release/bench/preemption_bench 4 10 1
fi
if [[ "$what" == all || "$what" == sim ]]; then
  build/release/bench/sim_bench 200000 easy fifo multifactor
  bench/sim_trace.sh  # baton-replay simulate on a 200k-job SWF trace, wall time including parsing
fi
if [[ "$what" == all || "$what" == rederive ]]; then
  build/release/bench/rederive_bench 1000000
fi
if [[ "$what" == all || "$what" == view ]]; then
  build/release/bench/view_bench 1000000
fi
if [[ "$what" == all || "$what" == restart ]]; then
  build/release/bench/restart_bench 10000000
fi
if [[ "$what" == all || "$what" == peers ]]; then
  # The yardsticks (docs/benchmarks.md, "Against the peers"): each runs the peer and baton in
  # turn and prints both and their ratio. Every one runs; any that could not run (a peer
  # missing or failing) makes the exit status non-zero.
  failed=()
  bench/peers/dispatch.sh || failed+=(dispatch)
  bench/peers/submit.sh || failed+=(submit)
  bench/peers/cycles.sh || failed+=(cycles)
  bench/peers/restart.sh || failed+=(restart)
  if ((${#failed[@]})); then
    echo "bench/run.sh peers: could not run: ${failed[*]}" >&2
    exit 1
  fi
fi
