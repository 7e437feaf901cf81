#!/usr/bin/env bash
# Lays out the C++ files git knows by .clang-format, with the clang-format of Debian 12
# (another version may lay out some lines differently). --check changes nothing and fails
# naming the files that differ (ctest formatting).
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=clang-format-14
command -v "$fmt" >/dev/null || { echo "format.sh: $fmt is missing (scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' | grep -v '^tests/data/')
if [[ "${1:-}" == "--check" ]]; then
  if ! out=$("$fmt" --dry-run -Werror "${files[@]}" 2>&1); then
    echo "not laid out by .clang-format (run scripts/format.sh):" >&2
    grep -o '^[^:]*:[0-9]*:[0-9]*: error' <<<"$out" | cut -d: -f1 | sort -u >&2
    exit 1
  fi
  exit 0
fi
"$fmt" -i "${files[@]}"
