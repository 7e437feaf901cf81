#!/usr/bin/env bash
# Fuzzes every libFuzzer target (tests/fuzz) for SECONDS each (default 60), one after the
# other, starting from the checked-in corpus tests/fuzz/corpus/<target>. New inputs go to
# build/fuzz/work/<target>, crashes to build/fuzz/crashes/<target>/ (copy one into the
# checked-in corpus once fixed: the corpus tests replay it in every build from then on).
# Prints executions per target; exits 1 if any target crashed, leaked or timed out.
#   bench/fuzz.sh 600      # the issue's ten minutes per target
#   bench/fuzz.sh 600 event_decode cli_reply   # only these targets
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
targets=(event_decode cbor_decode typed_payload http_request config_yaml swf_reader checkpoint_manifest bundle_archive cli_reply)
[[ $# -gt 1 ]] && targets=("${@:2}")

cmake --preset fuzz >/dev/null
log=build/fuzz/build.log
if ! cmake --build --preset fuzz >"$log" 2>&1; then
  grep -E -A5 "error" "$log" | head -40
  echo "fuzz build failed: see $log"
  exit 1
fi

failed=0
printf '%-22s %12s %10s %8s  %s\n' target executions "exec/s" units result
for t in "${targets[@]}"; do
  work=build/fuzz/work/$t crashes=build/fuzz/crashes/$t out=build/fuzz/logs/$t.log
  mkdir -p "$work" "$crashes" "$(dirname "$out")"
  set +e
  "build/fuzz/tests/fuzz/${t}_fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$work" "tests/fuzz/corpus/$t" >"$out" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out" | tail -1)
  units=$(find "$work" -type f | wc -l)
  result=ok
  if [[ $rc -ne 0 ]]; then
    result="FAILED (exit $rc): $(grep -m1 -E 'ERROR|SUMMARY|terminate|Assertion' "$out" || echo "see $out")"
    failed=1
  fi
  printf '%-22s %12s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$units" "$result"
done
exit $failed
