#!/usr/bin/env bash
# Installs what is missing, then builds and runs every test twice: release, and debug with
# ASan+UBSan (both replay the fuzz corpora), then fuzzes each libFuzzer target briefly
# (clang-14; bench/fuzz.sh). `--release-only` skips the sanitizer pass and the fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

presets=(release debug-asan)
[[ "${1:-}" == "--release-only" ]] && presets=(release)
jobs=$(nproc)
for p in "${presets[@]}"; do
  echo "== $p: configure and build"
  cmake --preset "$p" >/dev/null
  log="build/$p-build.log"
  mkdir -p build
  if ! cmake --build --preset "$p" -j "$jobs" >"$log" 2>&1; then
    grep -E -A5 "error" "$log" | head -60
    echo "build failed: see $log"
    exit 1
  fi
  echo "== $p: tests"
  ctest --preset "$p" -j "$jobs" --timeout 600
done
if [[ "${1:-}" != "--release-only" ]]; then
  echo "== fuzz: each target for ${BATON_CI_FUZZ_SECONDS:-20} s"
  bash bench/fuzz.sh "${BATON_CI_FUZZ_SECONDS:-20}"
fi
