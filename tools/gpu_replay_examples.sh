#!/usr/bin/env bash
# Replays every example on the GPU (docs/GPU.md "Trace programs replayed on
# the GPU") and prints one Markdown table row each: the simulator's verdict
# over every execution (explore --strategy dfs), the schedule replayed (the
# first finding's, or the first execution's for a clean trace), the ops held
# back, and what the GPU's stamp kernels saw in 10 runs: corrupted reads, and
# live buffers whose final contents were not the last write's.
# Usage: bash tools/gpu_replay_examples.sh [STREAMCHECK] [EXAMPLE...]
# Needs python3 (to read the JSON reports) and a GPU; exits 2 without one.
set -euo pipefail
cd "$(dirname "$0")/.."
streamcheck="${1:-build/gpu/tools/streamcheck}"
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then examples=("$@"); else examples=(examples/*.trace); fi
echo "| trace | simulator verdict (every execution) | schedule | held back | runs with corrupted reads (of 10) | mismatching words | runs with wrong final contents (of 10) | such words |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for f in "${examples[@]}"; do
  explored=$("$streamcheck" explore "$f" --strategy dfs --json || true)
  schedule=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); fs=d["findings"]; print(d["schedule_texts"][fs[0]["schedule"]] if fs else "")' "$explored")
  # A clean trace has no finding's schedule: replay its first execution
  # (every observed choice 0), as long as it needs.
  candidates=("$schedule")
  if [ -z "$schedule" ]; then
    candidates=(v2,observed:-)
    for k in $(seq 1 32); do candidates+=("v2,observed:$(printf '0%.0s' $(seq 1 "$k"))"); done
  fi
  for schedule in "${candidates[@]}"; do
    rc=0
    "$streamcheck" replay "$f" --schedule "$schedule" >/dev/null 2>&1 || rc=$?
    [ "$rc" -ne 2 ] && break  # 2: the schedule does not fit
  done
  replayed=$("$streamcheck" replay "$f" --schedule "$schedule" --backend cuda --json 2>/tmp/gpu_replay_stderr || true)
  python3 - "$f" "$explored" "$schedule" "$replayed" "$(head -c 200 /tmp/gpu_replay_stderr)" <<'PY'
import json, os, sys
name, explored, schedule, replayed, stderr = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
kinds = sorted({f["kind"] + (" (definite)" if f.get("definite") else "") for f in explored["findings"]})
if explored["notes"]:
    kinds.append(f"{len(explored['notes'])} error note(s)")
verdict = ", ".join(kinds) if kinds else "clean"
try:
    r = json.loads(replayed)
except json.JSONDecodeError:
    r = {}
if "gpu" not in r:
    why = (stderr.strip().splitlines() or ["?"])[0]
    print(f"| {os.path.basename(name)} | {verdict} | `{schedule}` | - | no GPU replay: {why} | - | - | - |")
    sys.exit(0)
held = sorted({f"{f['first']['stream']}#{f['first']['index']}" for f in r["findings"] if f["severity"] == "error"})
gpu = r.get("gpu", {})
print(f"| {os.path.basename(name)} | {verdict} | `{schedule}` | {', '.join(held) or 'nothing'} | "
      f"{gpu.get('runs_with_mismatches', '?')} | {gpu.get('mismatching_words', '?')} | "
      f"{gpu.get('runs_with_wrong_final_contents', '?')} | {gpu.get('wrong_final_words', '?')} |")
PY
done
