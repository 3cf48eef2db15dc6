#!/usr/bin/env bash
# Records each PyTorch corpus script with streamcheck_torch, once with each
# recorder (the C++ one must build: recorder "cpp" is an error otherwise),
# explores the traces, and runs the same script under CSAN
# (TORCH_CUDA_SANITIZER=1): one table of the verdicts. Needs python3 with torch and a GPU: exits 77
# (Skipped) without them.   run_torch_corpus.sh STREAMCHECK [OUT_DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
streamcheck=$1 out=${2:-$(mktemp -d)}
mkdir -p "$out"
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "no python3 with torch and a GPU here"
  exit 77
fi
failed=0
printf '%-24s %-9s %-12s %-28s %s\n' script recorder expected streamcheck CSAN
while read -r script verdict; do
  [[ -z "$script" || "$script" == \#* ]] && continue
  for recorder in cpp python; do
    name=$script.$recorder
    (cd "$here" && STREAMCHECK_TORCH_RECORDER=$recorder STREAMCHECK_TORCH_TRACE="$out/$name.trace" python3 "$script.py") \
      >"$out/$name.run" 2>&1
    "$streamcheck" explore "$out/$name.trace" --strategy dfs --schedules 20000 >"$out/$name.report" 2>&1
    rc=$?
    if [[ "$verdict" == clean ]]; then
      ok=$([[ $rc == 0 ]] && echo yes || echo no); got=$([[ $rc == 0 ]] && echo clean || echo "rc=$rc")
    else
      got=$(grep -oE '^(data race|reuse race|use after free|use before ready)' "$out/$name.report" | sort -u | paste -sd, -)
      ok=$([[ $rc == 1 ]] && grep -q "^$verdict" "$out/$name.report" && echo yes || echo no)
    fi
    if [[ $recorder == cpp ]]; then
      (cd "$here" && TORCH_CUDA_SANITIZER=1 python3 "$script.py") >"$out/$script.csan" 2>&1
      csan=$(grep -q "CSAN detected a possible data race" "$out/$script.csan" && echo "data race" || echo clean)
    fi
    printf '%-24s %-9s %-12s %-28s %s\n' "$script" "$recorder" "$verdict" "$got $([[ $ok == yes ]] && echo PASS || echo FAIL)" "$csan"
    if [[ $ok != yes ]]; then
      failed=1
      sed 's/^/    /' "$out/$name.run" "$out/$name.report" | head -60
    fi
  done
done <"$here/expected.txt"
if (cd "$here" && python3 recorder_failures.py) >"$out/recorder_failures.run" 2>&1; then
  echo "recorder_failures: PASS (an op the C++ recorder fails on: an error and no trace; no nesting; torch.compile noted)"
else
  failed=1
  echo "recorder_failures: FAIL"
  sed 's/^/    /' "$out/recorder_failures.run" | head -40
fi
exit $failed
