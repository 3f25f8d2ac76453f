#!/usr/bin/env bash
# Builds and runs the whole test suite, then prints the line
# "N passed, N failed" counted over individual GoogleTest cases.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$repo/tools/scripts/setup.sh"
status=0
meson test -C "$build_dir" --num-processes 2 --print-errorlogs || status=$?
python3 "$repo/tools/scripts/count_tests.py" "$build_dir/meson-logs/testlog.junit.xml" \
  || status=1
exit "$status"
