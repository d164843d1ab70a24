#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs heat2d_check.py (the heat2d examples' HDF5 files read by h5py) with a python3 that has h5py
# and numpy: Debian's are in the system Python, and a python3 earlier in PATH (pyenv, a venv) may
# lack them. Exits 77 (ctest's skip) when no python3 has them.
#
#   tests/bindings/heat2d_check.sh FILE.h5
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c "import h5py, numpy" 2>/dev/null; then
    exec "$py" "$HERE/heat2d_check.py" "$@"
  fi
done
echo "heat2d_check: skipped: no python3 with h5py and numpy (Debian: python3-h5py)"
exit 77
