#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The wheel: `pip wheel SOURCE --no-build-isolation --no-deps` (offline; pyproject.toml's in-tree
# backend builds Skein with CMake into WORK/build, kept between runs so that a second run rebuilds
# only what changed), `pip install --no-index --target` of the wheel into a scratch folder, then
# `import skein` from another directory with PYTHONPATH alone (tests/python/test_install.sh: the
# module and Skein's libraries from that folder) and the guide's docs/examples/python_basics.py.
#
#   tests/python/test_wheel.sh SOURCE WORK PYTHON
#
# ctest's packaging.wheel (label wheel), which CI leaves out: it is a whole second Skein build.
set -euo pipefail

if (($# != 3)); then
  echo "usage: $0 SOURCE WORK PYTHON" >&2
  exit 2
fi
SOURCE="$(cd "$1" && pwd)"
mkdir -p "$2"
WORK="$(cd "$2" && pwd -P)"
PYTHON="$3"
rm -rf "$WORK/dist" "$WORK/site"
start=$SECONDS
echo "wheel: $PYTHON -m pip wheel $SOURCE --no-build-isolation --no-deps (build folder $WORK/build)"
SKEIN_WHEEL_BUILD_DIR="$WORK/build" "$PYTHON" -m pip wheel "$SOURCE" --no-build-isolation \
  --no-deps --no-index -w "$WORK/dist" >"$WORK/wheel.log" 2>&1 || { tail -n 50 "$WORK/wheel.log"; exit 1; }
wheels=("$WORK"/dist/skein-*.whl)
[[ -f "${wheels[0]}" ]] || { echo "wheel: FAIL: no skein-*.whl in $WORK/dist" >&2; exit 1; }
echo "wheel: built $(basename "${wheels[0]}") ($(du -k "${wheels[0]}" | cut -f1) KiB) in $((SECONDS - start)) s:"
"$PYTHON" -m zipfile -l "${wheels[0]}"
"$PYTHON" -m pip install --no-deps --no-index --target "$WORK/site" "${wheels[0]}" >"$WORK/install.log" 2>&1 ||
  { cat "$WORK/install.log"; exit 1; }
bash "$SOURCE/tests/python/test_install.sh" "$WORK/site" "$PYTHON" "$WORK/site"
echo "wheel: docs/examples/python_basics.py with the installed wheel"
(cd "$WORK" && env -u LD_LIBRARY_PATH PYTHONPATH="$WORK/site" "$PYTHON" "$SOURCE/docs/examples/python_basics.py")
echo "wheel: passed in $((SECONDS - start)) s"
