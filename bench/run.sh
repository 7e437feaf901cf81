#!/usr/bin/env bash
# Builds the release preset and runs the benchmarks named in docs/benchmarks.md.
# Usage: bench/run.sh [eventlog|api|preemption]   (default: all). Takes about four minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cmake --preset release >/dev/null
cmake --build --preset release --target eventlog_bench api_bench preemption_bench >/dev/null
what="${1:-all}"
if [[ "$what" == all || "$what" == eventlog ]]; then
  b=build/release/bench/eventlog_bench
  for producers in 32 256; do
    for run in 1 2 3; do "$b" append "$producers" 5; done
  done
  "$b" replay 1000000
fi
if [[ "$what" == all || "$what" == api ]]; then
  for run in 1 2 3; do build/release/bench/api_bench 10000 100000 32 5; done
fi
if [[ "$what" == all || "$what" == preemption ]]; then
  build/release/bench/preemption_bench 4 10 1
fi
