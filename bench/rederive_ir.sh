#!/bin/bash
# Instructions executed by a re-derivation's applying thread (apply and decide: the core's hot
# path), counted by valgrind's callgrind. Unlike wall-clock figures on this VM, which swing by
# half within minutes, the count comes out the same run after run, so two builds of the core
# compare by a change of a per cent or two.
#
#   bench/rederive_ir.sh [EVENTS] [BUILD_DIR]      # defaults: 50000, build/release
#
# Runs rederive_bench EVENTS under callgrind (about a minute and a half at 50,000 events),
# collecting only inside rederive_decisions on the thread that calls it and on the reading
# thread it starts (the log's writing is not counted), and prints the applying thread's count
# per pass and per decision, that of its per-event callback alone (deciding and applying),
# the steadiest figure, and the reading thread's per pass and per event.
# The profile is left in the printed directory for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-50000}
build=${2:-build/release}
source bench/ir_prepare.sh
ir_prepare "$build" rederive_bench
# The whole signature: a bare prefix would also match the lambdas inside the function, whose
# entry toggles collection off again.
valgrind --tool=callgrind --separate-threads=yes --collect-atstart=no \
  --toggle-collect='baton::replay::rederive_decisions(baton::events::event_store const&, baton::replay::rederive_range, std::function<void (unsigned long)> const&)' \
  --toggle-collect='std::thread::_State_impl<*scan_decoded*>::_M_run()' \
  --callgrind-out-file="$out/callgrind.out" "$bench" "$events" >"$out/bench.txt" 2>"$out/valgrind.txt"
total=$(grep -h '^totals:' "$out"/callgrind.out-01 | awk '{print $2}')
# The reading threads (one per pass) are the other threads with a count.
reading=$(for f in "$out"/callgrind.out-*; do [ "$f" = "$out/callgrind.out-01" ] || grep -h '^totals:' "$f"; done | awk '{s += $2} END {print s + 0}')
sha=$(for f in "$out"/callgrind.out-*; do [ "$f" = "$out/callgrind.out-01" ] && continue; [ "$(grep -h '^totals:' "$f" | awk '{print $2}')" = 0 ] && continue
  callgrind_annotate --inclusive=yes "$f" 2>/dev/null | awk '!n && /baton::util::sha256(_into)?\(/ {gsub(",", "", $1); print $1; n = 1}'; done | awk '{s += $1} END {print s + 0}')
passes=$(grep -c '^rederive:' "$out/bench.txt")
decisions=$(grep -m1 '^rederive:' "$out/bench.txt" | awk '{print $2}')
applied=$(grep -m1 '^rederive:' "$out/bench.txt" | sed 's/.* in \([0-9]*\) events.*/\1/')
mismatches=$(grep -o 'mismatches [0-9]*' "$out/bench.txt" | awk '{s += $2} END {print s}')
echo "rederive_bench $events: $passes passes of $decisions decisions in $applied events, mismatches $mismatches"
# The part that decides and applies (the callback per event): the rest of the thread's count
# (waiting for the reader, freeing spent batches) moves by a few per cent with timing.
# (Every filter reads its input to the end: one that stopped early, like grep -m1 or head -1,
# could kill the writer with SIGPIPE, and pipefail then ended this script without a word.)
per_event=$(callgrind_annotate --inclusive=yes "$out"/callgrind.out-01 2>/dev/null |
  awk -v f='lambda(baton::events::decoded_event&)' '!n && /rederive.cpp:baton::replay::rederive_decisions\(/ && index($0, f) {
    gsub(",", "", $1); print $1; n = 1 }')
awk -v t="$total" -v c="$per_event" -v p="$passes" -v d="$decisions" -v e="$applied" 'BEGIN {
  printf "applying thread: %.0f instructions per pass, %.0f per decision\n", t / p, t / p / d
  printf "of which deciding and applying each event: %.0f per pass, %.0f per event, %.0f per decision\n", c / p, c / p / e, c / p / d }'
awk -v r="$reading" -v s="$sha" -v p="$passes" -v e="$applied" 'BEGIN {
  printf "reading thread: %.0f instructions per pass, %.0f per event; without SHA-256 (which valgrind runs without the CPU'"'"'s SHA instructions) %.0f per pass, %.0f per event\n", r / p, r / p / e, (r - s) / p, (r - s) / p / e }'
echo "profile: $out/callgrind.out-01, the reading thread's in the others (callgrind_annotate --inclusive=yes)"
