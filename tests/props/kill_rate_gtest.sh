#!/usr/bin/env bash
# A mutant test of a property binary (SUITE.MUTANT: passes only when some
# property of the binary kills the mutant) at RapidCheck's default settings
# (100 cases a property), RUNS times with fresh seeds: passes when the mutant
# is killed in at least NEED runs (issue 11's measure, >= 19 of 20, for the
# pool's and the debug tier's mutants as for M1-M18: kill_rate.sh).
# usage: kill_rate_gtest.sh BINARY TEST RUNS NEED
set -euo pipefail
binary=$1 test=$2 runs=$3 need=$4
killed=0
for ((run = 1; run <= runs; ++run)); do
  seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  if output=$(RC_PARAMS="seed=$seed" "$binary" --gtest_filter="$test" 2>&1); then
    killed=$((killed + 1))
  elif grep -q "FAILED TEST" <<<"$output"; then
    echo "run $run: $test's mutant survived; reproduce with RC_PARAMS=\"seed=$seed\" $binary --gtest_filter=$test"
  else
    echo "run $run: the property binary failed without a test verdict (seed $seed):"
    echo "$output" | tail -20
    exit 2
  fi
done
echo "$test: killed in $killed of $runs runs with fresh seeds (need $need)"
((killed >= need))
