#!/usr/bin/env bash
# `baton-replay simulate` on a 200,000-job SWF trace, wall time of the whole command (reading
# and inflating the .gz, parsing, filtering, simulating, printing), as docs/benchmarks.md
# records it ("Simulation speed").
#
#   bench/sim_trace.sh [TRACE.swf[.gz]] [RUNS]     # defaults: the trace built below, 3 runs
#
# Without a trace it builds one from the repository's own archive logs (tests/data/swf):
# copies of SDSC-SP2 and KTH-SP2 in turn, each starting a day after the last submit of the one
# before, job numbers renumbered 1.., users and groups offset by 100,000 per copy (each copy's
# people its own), cut at 200,000 records, one "; MaxProcs: 128" header; written gzipped as
# the archive's logs are. Each policy (fifo, easy, multifactor) then runs RUNS times on a
# machine of 128 processors, Batsim's filter; every run's figures must be the same.
set -euo pipefail
cd "$(dirname "$0")/.."
replay=${BATON_REPLAY:-build/release/replay/baton-replay}
runs=${2:-3}
[ -x "$replay" ] || cmake --build --preset release --target baton-replay >/dev/null
trace=${1:-}
if [ -z "$trace" ]; then
  trace=${TMPDIR:-/tmp}/baton-sim-200k.swf.gz
  if [ ! -s "$trace" ]; then
    {
      echo "; MaxProcs: 128"
      for copy in $(seq 0 9); do
        case $((copy % 2)) in 0) echo tests/data/swf/SDSC-SP2-1998-4.2-cln.swf.gz ;; 1) echo tests/data/swf/KTH-SP2-1996-2-original.swf.gz ;; esac
      done | while read -r f; do zcat "$f"; echo "; end of copy"; done |
        awk -v want=200000 '
          /^[ \t]*;/ { if ($0 ~ /end of copy/) { offset = last + 86400; copy++ } ; next }
          NF == 0 { next }
          n >= want { next }
          {
            $1 = ++n
            if ($2 >= 0) { $2 += offset; if ($2 > last) last = $2 }
            if ($12 != -1) $12 += copy * 100000
            if ($13 != -1) $13 += copy * 100000
            print
          }'
    } | gzip -6 -n >"$trace.tmp"  # (-n: no time stamp, so the same bytes and sha256 every time)
    mv "$trace.tmp" "$trace"
  fi
fi
echo "trace $trace: $(zcat "$trace" | grep -vc '^[[:space:]]*;') records, sha256 $(sha256sum "$trace" | cut -c1-16)..."
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for policy in fifo easy multifactor; do
  first=""
  for run in $(seq 1 "$runs"); do
    start=$(date +%s.%N)
    out=$("$replay" simulate --swf "$trace" --procs 128 --filter batsim --policy "$policy" --json)
    end=$(date +%s.%N)
    figures=$(echo "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); m=r["metrics"]; print("%d jobs, %d passes, mean wait %r s, mean bsld %r, utilization %r" % (m["jobs"], r["simulation"]["passes"], m["mean_wait_seconds"], m["mean_bounded_slowdown_tau10"], m["utilization"]))')
    simulated=$(echo "$out" | python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["simulation"]["seconds"])')
    [ -z "$first" ] && first=$figures
    same=$([ "$figures" = "$first" ] && echo "" || echo "  DIFFERENT FROM RUN 1")
    printf '%-12s run %d: %.3f s wall (simulate() %s s)  %s%s\n' "$policy" "$run" "$(echo "$end - $start" | bc)" "$simulated" "$figures" "$same"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
