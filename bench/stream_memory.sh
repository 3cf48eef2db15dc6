#!/usr/bin/env bash
# Issue 16's "a 100 M-op trace checks within 1 GiB": writes the bench
# workload (bench/workload.h, 8 streams, race-free) of N steady-state
# statements to a file and runs `streamcheck check --stream` on it under
# /usr/bin/time, printing the peak resident memory and the time; then the
# same for `streamcheck check` (the whole trace in memory) when N is at most
# WHOLE_MAX (default 4 M: a whole 100 M-statement check needs about 25 GB).
#   bash bench/stream_memory.sh [N] [BUILD_DIR]     (N default 100000000, BUILD_DIR build/default)
# The file (about 27 bytes a statement: 2.7 GB at 100 M) goes to $TMPDIR
# (default /tmp) and is removed at the end. Nothing here asserts a figure:
# docs/PERFORMANCE.md records what it printed, with the machine.
set -euo pipefail
n="${1:-100000000}"
build="${2:-build/default}"
whole_max="${WHOLE_MAX:-4194304}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/streamcheck-stream-memory-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$build/bench/workload_file" "$n" "$dir/workload.trace"
echo "workload: $n statements, $(stat -c %s "$dir/workload.trace") bytes"
measure() {
  local what="$1"; shift
  # The report's verdict and coverage lines, then time's line.
  /usr/bin/time -f "$what: peak RSS %M KB, %e s elapsed, %U s user" "$@" > "$dir/report.txt" 2> "$dir/time.txt" || {
    code=$?
    # 1: findings (the workload has none: a broken workload, or a broken checker)
    cat "$dir/report.txt" "$dir/time.txt" >&2
    echo "stream_memory.sh: $what exited $code" >&2
    exit 1
  }
  grep -E '^(coverage|verdict)' "$dir/report.txt"
  tail -n 1 "$dir/time.txt"
}
measure "check --stream" "$build/tools/streamcheck" check --stream "$dir/workload.trace"
if [ "$n" -le "$whole_max" ]; then
  measure "check" "$build/tools/streamcheck" check "$dir/workload.trace"
fi
