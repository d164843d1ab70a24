#!/usr/bin/env bash
# The two Quick start commands of README.md, for a fresh Debian 12 machine:
#
#   bash tools/quickstart.sh demo   # install dependencies, build into build/, run skein-info
#   bash tools/quickstart.sh test   # install dependencies, build into build/, run the test suite
#
# Both install only the missing Debian packages (tools/install-deps.sh) and build with
# tools/build.sh (Release, Ninja, CUDA compiled in when the toolkit is at /usr/local/cuda).
# BUILD_DIR overrides the build directory; `test` exits with ctest's status.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"

usage() {
  echo "usage: $0 demo|test" >&2
  echo "  demo  install dependencies, build, and run skein-info (what this machine offers)" >&2
  echo "  test  install dependencies, build, and run the test suite with ctest" >&2
}

if (($# != 1)); then
  usage
  exit 2
fi
mode="$1"
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

echo "== quickstart: installing dependencies"
bash "$ROOT/tools/install-deps.sh"

echo "== quickstart: building into $BUILD_DIR"
bash "$ROOT/tools/build.sh" "$BUILD_DIR"

case "$mode" in
  demo)
    echo "== quickstart: running skein-info"
    # With POCL_DEVICES unset, PoCL shows one CPU device; e.g.
    # POCL_DEVICES="pthread pthread pthread pthread" shows four.
    exec "$BUILD_DIR/apps/skein-info/skein-info"
    ;;
  test)
    echo "== quickstart: running the tests"
    status=0
    ctest --test-dir "$BUILD_DIR" --output-on-failure || status=$?
    if ((status == 0)); then
      echo "== quickstart: all tests passed"
    else
      echo "== quickstart: ctest failed (exit status $status)"
    fi
    exit "$status"
    ;;
esac
