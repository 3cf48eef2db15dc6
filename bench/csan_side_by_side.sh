#!/usr/bin/env bash
# Issue 16's device figures in one call (docs/PERFORMANCE.md): three
# processes of torch_overhead.py with STREAMCHECK (CSAN's overhead beside
# the streamed check's slope, same program, same device), each followed by
# BENCH_GPU; then STREAMCHECK and each EARLIER binary's `check --stream` of
# the first process's two recorded traces (5,000 and 100,000 iterations),
# taking turns, best of seven, for slopes measured side by side.
#
#   bash bench/csan_side_by_side.sh OUT BENCH_GPU STREAMCHECK [EARLIER...]
#
# OUT gets each process's full output (torchN.txt, bench_gpuN.txt). Needs
# python3 with torch and a GPU (torch_overhead.py exits 77 without them).
set -u
if [ $# -lt 3 ]; then
  echo "usage: bash bench/csan_side_by_side.sh OUT BENCH_GPU STREAMCHECK [EARLIER_STREAMCHECK...]" >&2
  exit 2
fi
out=$1 bench_gpu=$2
shift 2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
traces=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)"
for i in 1 2 3; do
  echo "=== process $i"
  python3 "$here/torch_overhead.py" 5000 7 "$traces/t$i.trace" "$1" 100000 > "$out/torch$i.txt" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { cat "$out/torch$i.txt"; exit $rc; }
  grep -E "GPU:|overhead: CSAN|analysis" "$out/torch$i.txt"
  "$bench_gpu" > "$out/bench_gpu$i.txt" 2>&1
  sed -n '/ratios of medians/,$p' "$out/bench_gpu$i.txt" | head -8
done
python3 - "$traces/t1.trace" "$@" <<'PY'
import subprocess, sys, time
short, binaries = sys.argv[1], sys.argv[2:]
long = short + ".long"
best = {(b, t): float("inf") for b in binaries for t in (short, long)}
for _ in range(7):
    for b in binaries:
        for t in (short, long):
            start = time.perf_counter()
            done = subprocess.run([b, "check", "--stream", t], capture_output=True)
            best[(b, t)] = min(best[(b, t)], time.perf_counter() - start)
            if done.returncode != 0:
                sys.exit("%s check --stream %s exited %d" % (b, t, done.returncode))
for b in binaries:
    slope = (best[(b, long)] - best[(b, short)]) / (100000 - 5000) * 1e6
    print("interleaved: %s: %.4f s at 5,000 iterations, %.4f s at 100,000: slope %.3f us/iteration"
          % (b, best[(b, short)], best[(b, long)], slope))
PY
rm -rf "$traces"
