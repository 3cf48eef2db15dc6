#!/usr/bin/env bash
# Records each PyTorch corpus script with streamcheck_torch, explores the
# trace, and runs the same script under CSAN (TORCH_CUDA_SANITIZER=1): one
# table of both verdicts. Needs python3 with torch and a GPU: exits 77
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
printf '%-24s %-12s %-28s %s\n' script expected streamcheck CSAN
while read -r name verdict; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  (cd "$here" && STREAMCHECK_TORCH_TRACE="$out/$name.trace" python3 "$name.py") >"$out/$name.run" 2>&1
  "$streamcheck" explore "$out/$name.trace" --strategy dfs --schedules 20000 >"$out/$name.report" 2>&1
  rc=$?
  if [[ "$verdict" == clean ]]; then
    ok=$([[ $rc == 0 ]] && echo yes || echo no); got=$([[ $rc == 0 ]] && echo clean || echo "rc=$rc")
  else
    got=$(grep -oE '^(data race|reuse race|use after free|use before ready)' "$out/$name.report" | sort -u | paste -sd, -)
    ok=$([[ $rc == 1 ]] && grep -q "^$verdict" "$out/$name.report" && echo yes || echo no)
  fi
  (cd "$here" && TORCH_CUDA_SANITIZER=1 python3 "$name.py") >"$out/$name.csan" 2>&1
  csan=$(grep -q "CSAN detected a possible data race" "$out/$name.csan" && echo "data race" || echo clean)
  printf '%-24s %-12s %-28s %s\n' "$name" "$verdict" "$got $([[ $ok == yes ]] && echo PASS || echo FAIL)" "$csan"
  if [[ $ok != yes ]]; then
    failed=1
    sed 's/^/    /' "$out/$name.run" "$out/$name.report" | head -60
  fi
done <"$here/expected.txt"
exit $failed
