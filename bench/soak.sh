#!/usr/bin/env bash
# The soak (docs/benchmarks.md): builds the release preset, then runs a real batond for MINUTES
# (default 60) under 5,000 simulated pilots and an operator's job churn, restarting it every
# 5 minutes, and samples its RSS, open fds, data dir size and p99 latency every 10 s into
# build/soak/samples.csv. Exits 1 on any error (see bench/soak_bench.cpp for what counts).
#   bench/soak.sh 60                  # the issue's hour
#   SOAK_RESTART_MINUTES=0 bench/soak.sh 10 1000   # no restarts, 1,000 pilots
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-60}
workers=${2:-5000}
cmake --preset release >/dev/null
cmake --build --preset release --target soak_bench >/dev/null
exec build/release/bench/soak_bench "$minutes" "$workers"
