#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The two Quick start commands of README.md, for a fresh Debian 12 machine:
#
#   bash tools/quickstart.sh demo   # install dependencies, build into build/, run skein-info,
#                                   # then skein-heat on two ranks (mpirun)
#   bash tools/quickstart.sh test   # install dependencies, build into build/, run the test suite
#
# Both install only the missing Debian packages (tools/install-deps.sh) and build with
# tools/build.sh (Release, Ninja, CUDA compiled in when the toolkit is at /usr/local/cuda).
# BUILD_DIR overrides the build directory; `test` exits with ctest's status. Arguments after
# `test` go to ctest (.ci/run: `test -E REGEX` runs all but some tests, which it runs later).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"

usage() {
  echo "usage: $0 demo|test [ctest arguments]" >&2
  echo "  demo  install dependencies, build, run skein-info (what this machine offers) and" >&2
  echo "        skein-heat on two ranks" >&2
  echo "  test  install dependencies, build, and run the test suite with ctest" >&2
}

if (($# < 1)) || { (($# > 1)) && [[ "$1" != test ]]; }; then
  usage
  exit 2
fi
mode="$1"
shift
ctest_args=("$@")
case "$mode" in
  demo | test) ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    usage
    exit 2
    ;;
esac

# SKEIN_SKIP_DEPS=1 leaves the packages alone (a machine with no package registry, whose
# libraries are already there: the GPU machines); 0 or unset installs them. Any other value is
# refused before anything is done, as Skein's libraries refuse a bad value of their variables.
case "${SKEIN_SKIP_DEPS:-0}" in
  0|1) ;;
  *)
    echo "quickstart: SKEIN_SKIP_DEPS='${SKEIN_SKIP_DEPS}' is not valid; it takes 1 (do not install" \
         "the dependencies) or 0 (install what is missing, the default). Set it to one of them, or" \
         "unset it." >&2
    exit 2
    ;;
esac
if [[ "${SKEIN_SKIP_DEPS:-0}" == 1 ]]; then
  echo "== quickstart: SKEIN_SKIP_DEPS=1: not installing dependencies"
else
  echo "== quickstart: installing dependencies"
  bash "$ROOT/tools/install-deps.sh"
fi

echo "== quickstart: building into $BUILD_DIR"
BUILD_DIR="$BUILD_DIR" bash "$ROOT/tools/build.sh" --preset release

case "$mode" in
  demo)
    echo "== quickstart: running skein-info"
    # With POCL_DEVICES unset, PoCL shows one CPU device; e.g.
    # POCL_DEVICES="pthread pthread pthread pthread" shows four.
    "$BUILD_DIR/apps/skein-info/skein-info"
    HEAT="$BUILD_DIR/apps/skein-heat/skein-heat"
    if [[ ! -x "$HEAT" ]] || ! command -v mpirun >/dev/null 2>&1; then
      echo "== quickstart: skein-heat or mpirun is missing (Skein was built without MPI): no heat demo"
      exit 0
    fi
    # skein-heat on two ranks, on whatever devices the machine has: the ranks share out the GPUs
    # (or PoCL's CPU devices); with a single device both ranks use it (SKEIN_SHARE_DEVICES=1).
    # Open MPI needs to be told that root may run it and that two ranks may share one core.
    if ((EUID == 0)); then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
    export OMPI_MCA_rmaps_base_oversubscribe=1
    export SKEIN_SHARE_DEVICES="${SKEIN_SHARE_DEVICES:-1}"
    DEMO_DIR="$BUILD_DIR/heat-demo"
    echo "== quickstart: running skein-heat on 2 ranks (output in $DEMO_DIR)"
    exec mpirun -np 2 "$HEAT" --nx 512 --ny 512 --steps 400 --report-every 100 \
      --checkpoint-every 200 --out "$DEMO_DIR" --overwrite --png "$DEMO_DIR/heat.png"
    ;;
  test)
    echo "== quickstart: running the tests"
    status=0
    # Side by side on every core: each MPI test declares its ranks (PROCESSORS), so ctest never
    # runs more ranks at once than there are cores (or one test alone when it has more).
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" ${ctest_args[@]+"${ctest_args[@]}"} || status=$?
    bash "$ROOT/tools/slowest-tests.sh" "$BUILD_DIR"
    bash "$ROOT/tools/pytest-summary.sh" "$BUILD_DIR"
    if ((status == 0)); then
      echo "== quickstart: all tests passed"
    else
      echo "== quickstart: ctest failed (exit status $status)"
    fi
    exit "$status"
    ;;
esac
