#!/usr/bin/env bash
# Runs every program of the capture corpus under `streamcheck capture` and
# compares the verdict with tests/capture/expected.txt. Needs a GPU: exits 77
# (CTest: Skipped) when streamcheck says it cannot capture on this machine.
#   run_corpus.sh STREAMCHECK BIN_DIR EXPECTED [OUT_DIR]
set -u
streamcheck=$1 bin_dir=$2 expected=$3 out=${4:-$(mktemp -d)}
mkdir -p "$out"
failed=0
while read -r name verdict; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  args=()
  options=()
  program=${name%@*}
  [[ "$name" == *@no-ptx ]] && options=(--no-ptx)
  [[ "$name" == many_launches ]] && args=(1000)
  "$streamcheck" capture --strategy dfs --schedules 20000 "${options[@]}" --trace "$out/$name.trace" -- \
    "$bin_dir/$program" "${args[@]}" >"$out/$name.report" 2>"$out/$name.stderr"
  rc=$?
  if [[ $rc == 2 ]] && grep -q "cannot capture here" "$out/$name.stderr"; then
    echo "no GPU here: $(cat "$out/$name.stderr")"
    exit 77
  fi
  got="rc=$rc"
  # Every call the capture follows became a statement: the trace's footer
  # counts the runtime calls the program made, its comments name the call of
  # each statement (a dropped call once went unnoticed: a parameterless one).
  dropped=""
  while read -r api count; do
    case "$api" in
      cudaStreamCreate*|cudaStreamDestroy|cudaEventCreate*|cudaEventDestroy|cudaEventRecord*|cudaStreamWaitEvent*|\
      cudaStreamSynchronize*|cudaEventSynchronize|cudaDeviceSynchronize|cudaMalloc*|cudaFree*|cudaLaunchKernel*|\
      cudaMemcpy*|cudaMemset*|cudaStreamBeginCapture*|cudaStreamEndCapture*|cudaGraphLaunch*)
        made=$(grep -cE "  # $api(:| at |\$)" "$out/$name.trace")
        (( made >= count )) || dropped+=" $api($made of $count)" ;;
    esac
  done < <(sed -nE 's/^# runtime calls: (.*)_v[0-9]+ x([0-9]+)$/\1 \2/p' "$out/$name.trace" 2>/dev/null)
  [[ -n "$dropped" ]] && got+=" dropped:$dropped"
  if [[ "$verdict" == clean ]]; then
    ok=$([[ $rc == 0 ]] && echo yes || echo no)
  else
    ok=$([[ $rc == 1 ]] && grep -q "^$verdict" "$out/$name.report" && echo yes || echo no)
  fi
  [[ -n "$dropped" ]] && ok=no
  printf '%-20s expected %-16s %s %s\n' "$name" "$verdict" "$got" "$([[ $ok == yes ]] && echo PASS || echo FAIL)"
  if [[ $ok != yes ]]; then
    failed=1
    sed 's/^/    /' "$out/$name.stderr" "$out/$name.report" | head -40
  fi
done <"$expected"
exit $failed
