#!/usr/bin/env bash
# Fuzzes the trace parser and interpreter with libFuzzer (SPEC §9).
#   bash tools/fuzz.sh [SECONDS]      (default 300)
# Builds build/fuzz with clang (ASan + UBSan + libFuzzer), seeds the corpus
# with examples/ and tests/fuzz/corpus/, and runs until SECONDS have passed
# or an input crashes it. A crash leaves crash-* in build/fuzz/artifacts:
# add that file to tests/fuzz/corpus/ once fixed, so that the ordinary
# suite (FuzzCorpus.*) keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; install it with: sudo apt-get install clang" >&2
  exit 2
fi
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
work=build/fuzz/corpus
mkdir -p "$work" build/fuzz/artifacts
build/fuzz/fuzz_trace -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=build/fuzz/artifacts/ "$work" tests/fuzz/corpus examples
