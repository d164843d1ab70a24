#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The closing line of every pytest run in the last ctest run of a build directory (the Python
# package's suites, tests/python), from its LastTest.log:
#   tools/pytest-summary.sh BUILD_DIR
# Prints "ctest-name: <pytest's closing line>" per run (e.g. "python.pocl: 310 passed, 2 skipped in
# 9.1s"), and the passed/failed/skipped counts summed over them, so that a CI log says how many
# Python cases ran, not only that the ctest entries passed. Prints nothing when no pytest ran.
set -uo pipefail
log="${1:?usage: $0 BUILD_DIR}/Testing/Temporary/LastTest.log"
[[ -r "$log" ]] || exit 0
awk '
  /^[0-9]+\/[0-9]+ Test: / { name = $3 }
  # pytest closing line: "===== 12 passed, 1 skipped in 0.53s =====" (with -q: no "=" signs).
  /^=* *[0-9]+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed|warnings?)(, [0-9]+ [a-z]+)* in [0-9.]+s/ {
    line = $0
    gsub(/^=+ */, "", line); gsub(/ *=+$/, "", line)
    printf "%s: %s\n", name, line
    n = split(line, parts, ", ")
    for (i = 1; i <= n; i++) {
      split(parts[i], kv, " ")
      total[kv[2]] += kv[1]
    }
    runs += 1
  }
  END {
    if (runs == 0) exit
    printf "pytest: %d run(s): %d passed, %d failed, %d errors, %d skipped\n", runs,
      total["passed"], total["failed"], total["error"] + total["errors"], total["skipped"]
  }
' "$log"
