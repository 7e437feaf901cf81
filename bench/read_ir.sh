#!/bin/bash
# Instructions executed by a replay's reading thread over a log's tables, counted by valgrind's
# callgrind: the thread `events/scan_ahead` starts while `baton-replay rederive` runs on a data
# dir (as batond reads its own log from sequence 1, as a projection catches up).
# bench/rederive_ir.sh counts that thread too, but over 50,000 events in one small table;
# here it reads a log of several tables, and collects nothing else.
#
#   bench/read_ir.sh [EVENTS] [BUILD_DIR]      # defaults: 200000, build/release
#
# Writes rederive_bench's log of EVENTS events, flushed (REDERIVE_BENCH_KEEP=1), then runs
# baton-replay rederive on it under callgrind, collecting on the reading thread only, and
# prints its count per event with and without SHA-256 (valgrind runs SHA-256 without the
# CPU's SHA instructions), the part spent decompressing blocks, and the log's size on disk.
# About two minutes at 200,000 events; the profile is left in the printed directory.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-200000}
build=${2:-build/release}
source bench/ir_prepare.sh
ir_prepare "$build" rederive_bench
replay="$build/replay/baton-replay"
[ -x "$replay" ] || { echo "no $replay: build the release preset first" >&2; exit 1; }
REDERIVE_BENCH_KEEP=1 "$bench" "$events" >"$out/bench.txt" 2>&1
dir=$(sed -n 's/^kept: baton-replay rederive --data-dir //p' "$out/bench.txt")
[ -n "$dir" ] && [ -d "$dir/eventlog" ] || { echo "rederive_bench kept no log (see $out/bench.txt)" >&2; exit 1; }
trap 'rm -rf "$dir"' EXIT
size=$(du -sh "$dir/eventlog" | cut -f1)
logged=$(grep '^rederive:' "$out/bench.txt" | awk 'NR == 1 {sub(/.* in /, ""); print $1}')  # events in the log
valgrind --tool=callgrind --separate-threads=yes --collect-atstart=no \
  --toggle-collect='std::thread::_State_impl<*scan_decoded*>::_M_run()' \
  --callgrind-out-file="$out/callgrind.out" "$replay" rederive --data-dir "$dir" >"$out/replay.txt" 2>"$out/valgrind.txt"
grep -q '^ok:' "$out/replay.txt" || { echo "baton-replay rederive did not end ok (see $out/replay.txt)" >&2; exit 1; }
# The reading thread is the one thread with a count. (Every filter reads its input to the
# end: see rederive_ir.sh.)
profile=$(for f in "$out"/callgrind.out-*; do echo "$(grep -h '^totals:' "$f" | awk '{print $2}') $f"; done | sort -n | awk 'END {print $2}')
inclusive() {
  callgrind_annotate --inclusive=yes "$profile" 2>/dev/null | awk -v f="$1" '!n && index($0, f) {gsub(",", "", $1); print $1; n = 1} END {if (!n) print 0}'
}
total=$(grep -h '^totals:' "$profile" | awk '{print $2}')
sha=$(inclusive 'baton::util::sha256_into(')
unpack=$(inclusive 'rocksdb::UncompressBlockData(')
awk -v t="$total" -v s="$sha" -v u="$unpack" -v e="$logged" -v size="$size" 'BEGIN {
  printf "reading thread over %d flushed events (%s on disk): %.0f instructions per event; without SHA-256 %.0f per event (%.1f M)\n", e, size, t / e, (t - s) / e, (t - s) / 1e6
  printf "of which decompressing blocks: %.1f M (%.1f %% of the thread without SHA-256)\n", u / 1e6, 100 * u / (t - s) }'
echo "profile: $profile (callgrind_annotate --inclusive=yes)"
