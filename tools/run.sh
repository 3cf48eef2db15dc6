#!/usr/bin/env bash
# One entry point for a fresh Debian machine with nothing but this repo:
#   bash tools/run.sh explore [streamcheck explore options]   # the main job
#   bash tools/run.sh test                                     # the whole test suite (CI)
# Both install what is missing (Debian packages), configure and build with
# the CMake preset "default" (build/default), then run. `test` then builds
# the preset "asan" (build/asan) and runs the CPU suite again under
# AddressSanitizer + UBSan (test preset "asan": no gpu, bench, style or package labels).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make libgtest-dev librapidcheck-dev libboost-graph-dev libbenchmark-dev libpng-dev librsvg2-bin
          clang-format python3-jsonschema libcli11-dev nlohmann-json3-dev libfmt-dev libopenmpi-dev openmpi-bin libzstd-dev
          libjemalloc-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run.sh: installing missing packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

verb="${1:-}"
[ $# -gt 0 ] && shift
cmake --preset default >/dev/null
case "$verb" in
  explore)
    cmake --build --preset default --target streamcheck
    exec build/default/tools/streamcheck explore "$@"
    ;;
  test)
    # Both builds take about 7 GB; say what the disk had, so that a build
    # that dies of "No space left on device" is told apart from a broken one.
    free_gb=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
    echo "run.sh: ${free_gb} GB free on the build disk (the default and asan builds take about 7 GB)"
    [ "${free_gb:-0}" -ge 10 ] || echo "run.sh: WARNING: less than 10 GB free; the builds may run out of disk" >&2
    cmake --build --preset default
    ctest --preset default "$@"
    cmake --preset asan >/dev/null
    cmake --build --preset asan
    exec ctest --preset asan "$@"
    ;;
  *)
    echo "usage: bash tools/run.sh explore [options] | test [ctest options]" >&2
    exit 2
    ;;
esac
