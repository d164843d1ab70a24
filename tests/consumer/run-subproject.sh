#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds Skein as a subproject of fetch-project/: configures it once with plain add_subdirectory
# (configure only: the checks of fetch-project/CMakeLists.txt), then with FetchContent, builds
# only the programs it lists (and so only the Skein libraries they link) and runs them.
#
#   tests/consumer/run-subproject.sh BUILD_DIR WORK_DIR [GENERATOR] [C_COMPILER] [CXX_COMPILER]
#
# BUILD_DIR: a configured Skein build tree, whose export set (the targets the installed package
# has) fetch-project must find under the same names, and whose compiler launcher (ccache) it
# reuses. WORK_DIR receives the two build trees; it is emptied first.
set -euo pipefail

if (($# < 2)); then
  echo "usage: $0 BUILD_DIR WORK_DIR [GENERATOR] [C_COMPILER] [CXX_COMPILER]" >&2
  exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SOURCE_DIR="$(cd "$HERE/../.." && pwd)"
BUILD_DIR="$(cd "$1" && pwd)"
WORK_DIR="$2"
GENERATOR="${3:-}"
C_COMPILER="${4:-}"
CXX_COMPILER="${5:-}"
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR"
step() { echo "subproject: $*"; }

# The installed package's targets: what CMake generated for install(EXPORT SkeinTargets).
mapfile -t exported < <(cat "$BUILD_DIR"/CMakeFiles/Export/*/SkeinTargets.cmake 2>/dev/null |
  grep -o 'add_library(Skein::[A-Za-z0-9_]*' | sed 's/^add_library(//' | sort -u)
((${#exported[@]} > 0)) || { echo "subproject: FAIL: no SkeinTargets.cmake in $BUILD_DIR" >&2; exit 1; }
expected="$(IFS=';'; echo "${exported[*]}")"
step "the installed package exports ${exported[*]}"

common=(-S "$HERE/fetch-project" "-DSKEIN_SOURCE_DIR=$SOURCE_DIR" "-DSKEIN_EXPECTED_TARGETS=$expected")
[[ -n "$GENERATOR" ]] && common+=(-G "$GENERATOR")
[[ -n "$C_COMPILER" ]] && common+=("-DCMAKE_C_COMPILER=$C_COMPILER")
[[ -n "$CXX_COMPILER" ]] && common+=("-DCMAKE_CXX_COMPILER=$CXX_COMPILER")
launcher="$(sed -n 's/^CMAKE_CXX_COMPILER_LAUNCHER:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")"
if [[ -n "$launcher" ]]; then
  common+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher" "-DCMAKE_C_COMPILER_LAUNCHER=$launcher")
  # As tools/build.sh sets them, so that the cache's entries hold across build trees.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$SOURCE_DIR}"
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
  export CCACHE_DEPEND="${CCACHE_DEPEND:-1}"
fi

step "add_subdirectory: configure only"
cmake "${common[@]}" -B "$WORK_DIR/subdirectory" -DSKEIN_CONSUMER_MODE=subdirectory \
  >"$WORK_DIR/subdirectory.log" || { cat "$WORK_DIR/subdirectory.log"; exit 1; }
grep 'Skein as a subproject' "$WORK_DIR/subdirectory.log"

step "FetchContent: configure"
cmake "${common[@]}" -B "$WORK_DIR/fetch" -DSKEIN_CONSUMER_MODE=fetch >"$WORK_DIR/fetch.log" ||
  { cat "$WORK_DIR/fetch.log"; exit 1; }
grep 'Skein as a subproject' "$WORK_DIR/fetch.log"
mapfile -t programs <"$WORK_DIR/fetch/consumer-programs.txt"
for program in "${programs[@]}"; do
  # Two compile jobs, not Ninja's default of two more than the cores, which starved the tests
  # running beside it on CI's 2 cores. (Declaring PROCESSORS 2 instead made it run alone: the
  # release tests took 495 s against 461 s.)
  step "cmake --build --parallel 2 --target $program"
  cmake --build "$WORK_DIR/fetch" --parallel 2 --target "$program"
done
for program in "${programs[@]}"; do
  step "running $program"
  "$WORK_DIR/fetch/$program"
done
step "passed"
