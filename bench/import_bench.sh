#!/usr/bin/env bash
# A campaign of N jobs (default 10,000) imported with `baton jobs import` into a fresh batond
# (the default config but for max_jobs_per_user: SQLite view on, durable commits): wall time of the import, and the
# requests it took as batond's /metrics counts them. Run three times; prints one line each.
# Usage: bench/import_bench.sh [N] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000}"
runs="${2:-3}"
bin=build/release
for b in batond/batond cli/baton; do
  [[ -x "$bin/$b" ]] || { echo "import_bench: build the release preset first ($bin/$b missing)" >&2; exit 1; }
done
token="bench-token-0123456789abcdef0123456789abcdef"
for run in $(seq 1 "$runs"); do
  tmp=$(mktemp -d)
  trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
  echo "scheduling: {max_jobs_per_user: $((n + 1))}" >"$tmp/batond.yaml"
  python3 - "$n" >"$tmp/campaign.jsonl" <<'EOF'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"title": f"ligand-{i:05d}", "input_bundle_path": f"/campaign/ligand-{i:05d}",
                      "time_limit_seconds": 86400, "comment": "docking run"}))
EOF
  BATON_CONFIG="$tmp/batond.yaml" BATON_API_TOKEN="$token" BATON_LOG_LEVEL=warn \
    "$bin/batond/batond" --data-dir "$tmp/data" --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/batond.err" &
  pid=$!
  for _ in $(seq 1 300); do [[ -s "$tmp/port" ]] && break; sleep 0.1; done
  [[ -s "$tmp/port" ]] || { echo "import_bench: batond did not start" >&2; cat "$tmp/batond.err" >&2; exit 1; }
  url="http://127.0.0.1:$(cat "$tmp/port")"
  start=$(date +%s.%N)
  BATON_URL="$url" BATON_API_TOKEN="$token" BATON_CONFIG="$tmp/batond.yaml" \
    "$bin/cli/baton" jobs import --shared-path "$tmp/campaign.jsonl" >"$tmp/import.out"
  end=$(date +%s.%N)
  requests=$(curl -s -H "X-API-Token: $token" "$url/metrics" |
    awk '/^baton_http_requests_total\{route="POST \/jobs\/batch"/ {s += $NF} END {print s + 0}')
  awk -v run="$run" -v n="$n" -v s="$start" -v e="$end" -v req="$requests" -v out="$(cat "$tmp/import.out")" \
    'BEGIN { printf "import_bench run %d: %d jobs in %.3f s (%.0f jobs/s), %d POST /jobs/batch requests; %s\n", run, n, e - s, n / (e - s), req, out }'
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$tmp"
  trap - EXIT
done
