#!/usr/bin/env bash
# Fails when a test names a file in the shared temp folder directly instead of
# using tests/temp_dir.h (FreshTempDir: a mkdtemp folder of its own, removed
# afterwards). Fixed names there collide between parallel tests and worktrees.
# Python's tempfile.TemporaryDirectory() is the same thing as FreshTempDir
# (mkdtemp, removed afterwards) and is allowed; its other calls are not.
# usage: check_temp_files.sh TESTS_DIR
set -euo pipefail
tests_dir=${1:?usage: check_temp_files.sh TESTS_DIR}
if hits=$(grep -rnE 'TempDir\(\)|temp_directory_path|"/tmp/|mkstemp|tmpnam|tempfile\.(mkstemp|mktemp|gettempdir|NamedTemporaryFile|TemporaryFile)' "$tests_dir" \
    --include='*.cpp' --include='*.h' --include='*.py' --include='*.cmake' \
    | grep -vE '^[^:]*/(temp_dir\.h|test_temp_dir\.cpp):'); then
  echo "these tests write into the shared temp folder; use tests/temp_dir.h (FreshTempDir) instead:"
  echo "$hits"
  exit 1
fi
echo "every test that writes files uses tests/temp_dir.h"
