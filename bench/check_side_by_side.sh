#!/usr/bin/env bash
# Issue 16's `check` side by side on the traces a streamed run that makes no
# choice cannot stand for (docs/TRACES.md, "`check` streams a trace first"):
#   buf       ITERATIONS of `buffer A 1K on s` / `launch k on s writes A` /
#             `free A on s`: a pool choice every iteration (streamed again
#             as `check`'s own run since 2026-12-07, no longer read whole)
#   bufu      the same with a fresh buffer name each iteration (`b<i>`)
#   w1m_race  the bench workload (bench/workload.h, 1 M statements) with one
#             racing write before its end: the streamed run finds it, then
#             the whole trace is read for the report
#   race      RACE_ITERATIONS (default 2000) of `launch produce on s1 writes
#             A` / `record e on s1` / `launch consume on s2 reads A`: the
#             wait is missing, so every iteration races twice (a real
#             program's bug: a finding per iteration, each grouped and fixed)
# and then, of `race`, `fix --schedules 10` side by side the same way and
# each binary's `explore` (1,000 random schedules) once for its peak RSS.
# Each BINARY (a `streamcheck` of an earlier commit beside this one's) checks
# each file, the binaries taking turns (hyperfine -N, min and median), then
# once more under /usr/bin/time for its peak RSS. Nothing asserts a figure:
# docs/PERFORMANCE.md records what it printed, with the machine.
#   bash bench/check_side_by_side.sh [ITERATIONS] BINARY...
#     ITERATIONS default 200000; RUNS (default 8) runs each; WORKLOAD_FILE
#     default build/default/bench/workload_file; RACE_ITERATIONS default 2000
set -euo pipefail
iterations=200000
if [[ $# -gt 0 && "$1" =~ ^[0-9]+$ ]]; then
  iterations="$1"
  shift
fi
if [ $# -eq 0 ]; then
  echo "usage: bash bench/check_side_by_side.sh [ITERATIONS] BINARY..." >&2
  exit 2
fi
command -v hyperfine > /dev/null || {
  echo "check_side_by_side.sh: needs hyperfine (apt-get install hyperfine)" >&2
  exit 2
}
workload_file="${WORKLOAD_FILE:-build/default/bench/workload_file}"
[ -x "$workload_file" ] || {
  echo "check_side_by_side.sh: no $workload_file: build the default preset, or set WORKLOAD_FILE" >&2
  exit 2
}
runs="${RUNS:-8}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/streamcheck-check-side-by-side-XXXXXX")
trap 'rm -rf "$dir"' EXIT

awk -v n="$iterations" 'BEGIN {
  print "stream s"
  for (i = 0; i < n; i++) print "buffer A 1K on s\nlaunch k on s writes A\nfree A on s"
}' > "$dir/buf.trace"
awk -v n="$iterations" 'BEGIN {
  print "stream s"
  for (i = 0; i < n; i++) printf "buffer b%d 1K on s\nlaunch k on s writes b%d\nfree b%d on s\n", i, i, i
}' > "$dir/bufu.trace"
awk -v n="${RACE_ITERATIONS:-2000}" 'BEGIN {
  print "stream s1\nstream s2\nevent e\nbuffer A 4096 on s1"
  for (i = 0; i < n; i++) print "launch produce on s1 writes A\nrecord e on s1\nlaunch consume on s2 reads A"
  print "sync device\nfree A on s1"
}' > "$dir/race.trace"
"$workload_file" 1048576 "$dir/w1m.trace"
# The racing write goes before the workload's closing `sync device`.
last_sync=$(grep -n '^sync device$' "$dir/w1m.trace" | tail -n 1 | cut -d: -f1)
sed "${last_sync}i launch racer on s1 writes out0" "$dir/w1m.trace" > "$dir/w1m_race.trace"
rm "$dir/w1m.trace"

binaries=("$@")
# Each binary runs VERB ARGS... (hyperfine -N, taking turns); prints each
# one's min and median. NAME names the JSON hyperfine writes.
side_by_side() {
  local name="$1" verb="$2"
  shift 2
  local commands=() binary
  for binary in "${binaries[@]}"; do commands+=("$binary $verb $*"); done
  # Exit 1 (findings) is the verdict of w1m_race and race, not a failure.
  hyperfine -N -i -w 1 -r "$runs" --export-json "$dir/$name.json" "${commands[@]}" > /dev/null 2> "$dir/hyperfine.txt" || {
    cat "$dir/hyperfine.txt" >&2
    exit 1
  }
  python3 - "$dir/$name.json" "$verb" << 'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"  {r['command'].split(' ' + sys.argv[2] + ' ')[0]}: min {r['min']:.3f} s, median {r['median']:.3f} s")
EOF
}

for trace in buf bufu w1m_race race; do
  file="$dir/$trace.trace"
  echo "== check $trace ($(wc -l < "$file") lines)"
  side_by_side "$trace" check "$file"
  for binary in "${binaries[@]}"; do
    /usr/bin/time -f "  $binary: peak RSS %M KB" "$binary" check "$file" > /dev/null 2> "$dir/time.txt" || true
    tail -n 1 "$dir/time.txt"
  done
done

file="$dir/race.trace"
echo "== fix race --schedules 10"
side_by_side fix fix "$file" -o "$dir/fixed.trace" --schedules 10
echo "== explore race (peak RSS)"
for binary in "${binaries[@]}"; do
  /usr/bin/time -f "  $binary: %e s, peak RSS %M KB" "$binary" explore "$file" --save-schedules "$dir" > /dev/null 2> "$dir/time.txt" || true
  tail -n 1 "$dir/time.txt"
done
