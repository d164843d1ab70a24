#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks the files HDF5CrossRanks.Write (tests/collectives/hdf5_test.cpp) made on 4 ranks with a
# tool other than Skein: h5py (hdf5_check.py: dtypes, values, attributes, checksums) or h5dump (it
# reads every dataset; the attributes Skein writes are there with their values; the Fletcher32
# filter is on "u" and not on "n"); or, with h5py-grid, the GridArray files GridHdf5Cross.Write
# (hdf5_grid_test.cpp) made (hdf5_grid_check.py: each dataset whole is the global array).
#   bash hdf5_check.sh h5py|h5dump|h5py-grid DIR
# Exit 0: good; 1: a mismatch; 77 (ctest: skipped): the tool is not installed.
set -u
tool=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
files=("$dir/cross-mpiio.h5" "$dir/cross-rank0.h5")
writer=HDF5CrossRanks.Write
script=hdf5_check.py
if [[ $tool == h5py-grid ]]; then
  # The MPI-IO file exists only where HDF5 is parallel.
  files=("$dir/grid-rank0.h5")
  [[ -f $dir/grid-mpiio.h5 ]] && files+=("$dir/grid-mpiio.h5")
  writer=GridHdf5Cross.Write
  script=hdf5_grid_check.py
  tool=h5py
fi
for f in "${files[@]}"; do
  [[ -f $f ]] || { echo "hdf5_check: $f is missing ($writer makes it)"; exit 1; }
done

case $tool in
  h5py)
    # Debian's h5py is in the system Python; a python3 earlier in PATH (pyenv, venv) may lack it.
    for py in /usr/bin/python3 python3; do
      if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import h5py, numpy' >/dev/null 2>&1; then
        exec "$py" "$here/$script" "${files[@]}"
      fi
    done
    echo "hdf5_check: skipped: no python3 with h5py and numpy (Debian: python3-h5py)"
    exit 77
    ;;
  h5dump)
    command -v h5dump >/dev/null 2>&1 || { echo "hdf5_check: skipped: no h5dump (Debian: hdf5-tools)"; exit 77; }
    status=0
    for f in "${files[@]}"; do
      if ! attributes=$(h5dump -A "$f" 2>&1); then
        echo "hdf5_check: h5dump -A $f failed:"; echo "$attributes"; exit 1
      fi
      for word in skein_version skein_format_version skein_dtype skein_global_shape skein_layout \
                  skein_row_starts skein_step skein_time '"bfloat16"' '"complex64"' '"float16"' \
                  'over 4 members on 4 ranks' '"cross-rank test"'; do
        if ! grep -qF -- "$word" <<<"$attributes"; then
          echo "hdf5_check: h5dump -A $f shows no $word"; status=1
        fi
      done
      if ! data=$(h5dump "$f" 2>&1); then
        echo "hdf5_check: h5dump $f (every dataset) failed:"; echo "$data" | tail -20; exit 1
      fi
      # Values h5dump prints: "one" (int8) holds (0*31 + 0*7 + 9*13) % 251 - 125 = -8; "u" starts
      # with (1*13) % 251 - 125 = -112; "c" with -99 + 198i as the compound {r, i}.
      one=$(h5dump -d /one -w 0 "$f")
      grep -qE '\(0\): -8\b' <<<"$one" || { echo "hdf5_check: $f: /one is not -8:"; echo "$one"; status=1; }
      u=$(h5dump -d /u -s 0,0 -c 1,1 -w 0 "$f")
      grep -qE '\(0,0\): -112\b' <<<"$u" || { echo "hdf5_check: $f: /u[0,0] is not -112:"; echo "$u"; status=1; }
      # The checksum filter on "u"; "n" was written without it (contiguous).
      props=$(h5dump -p -H -d /u "$f")
      grep -qF 'CHECKSUM FLETCHER32' <<<"$props" ||
        { echo "hdf5_check: $f: /u has no Fletcher32 filter:"; echo "$props"; status=1; }
      props=$(h5dump -p -H -d /n "$f")
      grep -qF 'CONTIGUOUS' <<<"$props" && ! grep -qF 'FLETCHER32' <<<"$props" ||
        { echo "hdf5_check: $f: /n is not contiguous without filters:"; echo "$props"; status=1; }
      c=$(h5dump -d /c -s 0 -c 1 -w 0 "$f")
      grep -qE '\(0\): \{\s*-99,\s*198\s*\}' <<<"$(tr -s ' \n' ' ' <<<"$c")" ||
        { echo "hdf5_check: $f: /c[0] is not {-99, 198}:"; echo "$c"; status=1; }
    done
    [[ $status == 0 ]] && echo "hdf5_check: h5dump reads ${#files[@]} file(s); attributes and values as written"
    exit $status
    ;;
  *)
    echo "usage: hdf5_check.sh h5py|h5dump|h5py-grid DIR"; exit 2 ;;
esac
