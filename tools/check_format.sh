#!/usr/bin/env bash
# Fails when a C++/CUDA source differs from what .clang-format decides.
# Exit 77 (CTest: Skipped) when clang-format is not installed.
# Fix: clang-format -i $(the files listed)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not installed (apt-get install clang-format)"; exit 77; }
mapfile -t files < <(find model backend_sim backend_cuda props capture tests tools bench examples python \
  -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' \) | sort)
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "not formatted by .clang-format (run: clang-format -i ${bad[*]}):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "${#files[@]} files formatted"
