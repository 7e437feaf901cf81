#!/bin/bash
# Instructions batond executes per assigning poll, by thread, counted by valgrind's callgrind
# (docs/benchmarks.md). Wall-clock figures of the API bench swing by a third within an hour on
# this VM; the count moves by a few per cent at most (the polls an append carries vary with
# timing), so two builds of the request path compare by a change of some per cent.
#
#   bench/api_ir.sh [WORKERS] [BUILD_DIR]     # defaults: 2000, build/release
#   API_IR_VIEWS=1 bench/api_ir.sh            # with the SQL view and state snapshots (default config)
#
# Runs api_bench WORKERS (jobs five times as many, 8 connections) with batond under callgrind,
# counting only through the assigning phase and the views' catch-up after it (about two minutes
# at 2,000 workers). SHA-256 is left out of the log writer's count: valgrind runs it without
# the CPU's SHA instructions. The profiles are left in the printed directory for
# callgrind_annotate --inclusive=yes. The periodic planning cycle and priority recalculation
# are turned off (API_BENCH_NO_CYCLES): whether one fell into the counted phase decided a tenth
# of the count per poll. API_IR_CYCLES=1 keeps them.
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${1:-2000}
build=${2:-build/release}
source bench/ir_prepare.sh
ir_prepare "$build" api_bench
extra=$'projections: {sqlite: false}\nevent_log: {snapshot_every_events: 0}'
[ -n "${API_IR_VIEWS:-}" ] && extra=""
no_cycles=(API_BENCH_NO_CYCLES=1)
[ -n "${API_IR_CYCLES:-}" ] && no_cycles=()
env "${no_cycles[@]}" API_BENCH_CALLGRIND="$out" API_BENCH_EXTRA_CONFIG="$extra" "$bench" "$workers" $((workers * 5)) 8 20 >"$out/bench.txt" 2>&1
polls=$(grep -o '([0-9]* of [0-9]* assigned' "$out/bench.txt" | tr -d '(' | awk '{print $1}')
[ "${polls:-0}" -gt 0 ] || { echo "no assigning polls: see $out/bench.txt" >&2; exit 1; }
# Callgrind numbers threads in the order they were created, as threads.txt lists their names.
for f in "$out"/callgrind.out.1-*; do
  n=$((10#${f##*-}))
  name=$(sed -n "${n}p" "$out/threads.txt")
  total=$(awk '/^totals:/ {print $2}' "$f")
  # (awk reads to the end: a reader that stops early would fail the pipe)
  sha=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null | awk '/baton::util::sha256(_into)?\(/ && !n++ {gsub(",", "", $1); print $1}')
  echo "${name:-thread-$n} ${total:-0} ${sha:-0}"
done >"$out/threads_ir.txt"
echo "assigning polls: $polls (instructions per poll, by thread name)"
awk -v p="$polls" '{ ir[$1] += $2 - $3; all += $2 - $3 }
  END { for (t in ir) if (ir[t] / p >= 100) printf "  %-16s %8.0f\n", t, ir[t] / p
        printf "  %-16s %8.0f\n", "batond", all / p }' "$out/threads_ir.txt" | sort -k2 -rn
echo "profiles: $out (callgrind.out.1-NN is thread NN of threads.txt)"
