#!/bin/sh
# Mpi.TwoRanksPrintTheUnshardedReport: `mpirun -n 2 streamcheck-mpi` prints,
# byte for byte, the report of one `streamcheck explore` of the same
# exploration (random, pct and exhaustive dfs), and exits as it does.
# Usage: mpi_merge.sh MPIEXEC STREAMCHECK_MPI STREAMCHECK EXAMPLES_DIR
set -u
mpiexec=$1 mpi=$2 streamcheck=$3 examples=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for args in "--schedules 300" "--strategy pct --depth 2 --schedules 200 --faults on" "--strategy dfs --faults on"; do
  for trace in 05_opportunistic_reuse 09_resource_clean; do
    # shellcheck disable=SC2086
    "$mpiexec" -n 2 --oversubscribe "$mpi" "$examples/$trace.trace" $args --json >"$out/mpi.json"
    mpi_exit=$?
    # shellcheck disable=SC2086
    "$streamcheck" explore "$examples/$trace.trace" $args --json >"$out/one.json"
    one_exit=$?
    if ! cmp -s "$out/mpi.json" "$out/one.json" || [ "$mpi_exit" != "$one_exit" ]; then
      echo "FAIL: $trace $args: mpirun -n 2 exit $mpi_exit, explore exit $one_exit"
      diff "$out/mpi.json" "$out/one.json" | head -5
      status=1
    else
      echo "ok: $trace $args (exit $one_exit, $(wc -c <"$out/one.json") bytes identical)"
    fi
  done
done
exit $status
