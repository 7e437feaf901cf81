#!/usr/bin/env bash
# Builds batond and the tools the README uses next (baton, baton-worker, baton-replay; release)
# if needed and runs batond in the foreground on built-in defaults:
# 127.0.0.1:36158, data under ./var/baton, no config file required. Extra arguments go to batond.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --build-only
cmake --preset release >/dev/null
cmake --build --preset release --target batond baton baton-worker baton-replay >/dev/null
exec build/release/batond/batond "$@"
