#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The slowest tests of the last ctest run in a build directory, from its LastTest.log:
#   tools/slowest-tests.sh BUILD_DIR [N]     (N: how many, default 12)
# Prints "seconds  name", slowest first, then the sum of every test's time (more than the wall
# time when ctest ran tests side by side with -j).
set -uo pipefail
log="${1:?usage: $0 BUILD_DIR [N]}/Testing/Temporary/LastTest.log"
n="${2:-12}"
if [[ ! -r "$log" ]]; then
  echo "slowest-tests: no $log"
  exit 0
fi
times="$(awk '
  /^[0-9]+\/[0-9]+ Test: / { name = $3 }
  /^Test time = / { if (name != "") { printf "%8.1f  %s\n", $4, name; name = "" } }
' "$log" | sort -rn)"
echo "The slowest tests ($log):"
head -n "$n" <<<"$times"
awk '{ s += $1; c += 1 } END { printf "%8.1f  all %d tests together\n", s, c }' <<<"$times"
