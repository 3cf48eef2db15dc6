#!/usr/bin/env bash
# The stateful property alone, at RapidCheck's default settings (100 cases),
# against one named mutant, RUNS times with fresh seeds: passes when it
# kills the mutant in at least NEED runs (issue 11: >= 19 of 20).
# RC_PARAMS_EXTRA (e.g. max_success=1000) is added to every run's RC_PARAMS.
# A single run (RUNS=1) prints the shrunk counterexample it found.
# usage: kill_rate.sh PROPERTY_BINARY MUTANT RUNS NEED
set -euo pipefail
binary=$1 mutant=$2 runs=$3 need=$4
extra=${RC_PARAMS_EXTRA:+ $RC_PARAMS_EXTRA}
killed=0
for ((run = 1; run <= runs; ++run)); do
  seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  # A kill is the property failing (RapidCheck: "Falsifiable"), not a crash.
  if output=$(STREAMCHECK_PROTOCOL=$mutant RC_PARAMS="seed=$seed$extra" "$binary" \
    --gtest_filter=ProtocolSim.SelectedProtocolKeepsEveryProperty 2>&1); then
    echo "run $run: $mutant survived; reproduce with STREAMCHECK_PROTOCOL=$mutant RC_PARAMS=\"seed=$seed$extra\" $binary"
  elif grep -q "Falsifiable after" <<<"$output"; then
    killed=$((killed + 1))
    ((runs > 1)) || echo "$output"
  else
    echo "run $run: the property binary failed without a counterexample (seed $seed):"
    echo "$output" | tail -20
    exit 2
  fi
done
echo "$mutant killed in $killed of $runs runs with fresh seeds (need $need)"
((killed >= need))
