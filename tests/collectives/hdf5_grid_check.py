# SPDX-License-Identifier: BSD-3-Clause
"""Checks the files GridHdf5Cross.Write (tests/collectives/hdf5_grid_test.cpp) wrote on 4 ranks over
a 2 x 2 x 1 process grid, with h5py: each dataset read whole is the global array (the points' axes,
then the components axis), with the values recomputed here from the same formula, its NumPy dtype,
and Skein's attributes (skein_global_shape, skein_dtype, skein_layout naming the writer's grid,
skein_step), so a file whose blocks landed in the wrong hyperslabs fails.

    python3 hdf5_grid_check.py FILE...      exit 0: all good; 1: a mismatch (each one printed)
"""
import sys

import h5py
import numpy as np

# name: (points' shape, components, NumPy dtype, salt, the writer's grid in skein_layout)
DATASETS = {
    "u": ((6, 5, 4), 1, "float64", 31, "grid 2 x 2 x 1"),
    "v": ((7, 5), 3, "float32", 32, "grid 2 x 2"),
    "n": ((3, 1, 4), 2, "int32", 33, "grid 2 x 2 x 1"),
}


def reference(shape, components, dtype, salt):
    """Element k of the global array (C order): hdf5_grid_test.cpp's reference()."""
    full = shape + ((components,) if components > 1 else ())
    k = np.arange(int(np.prod(full)), dtype=np.int64)
    whole = ((k * 7919 + 13 + salt * 101) % 20011 - 10005).astype(np.float64)
    if np.dtype(dtype).kind == "f":
        whole += 0.25
    return whole.astype(dtype).reshape(full)


def check(path):
    problems = []
    with h5py.File(path, "r") as f:
        for name, (shape, components, dtype, salt, grid) in DATASETS.items():
            where = f"{path}:{name}"
            if name not in f:
                problems.append(f"{where}: missing")
                continue
            d = f[name]
            want = reference(shape, components, dtype, salt)
            if d.dtype != np.dtype(dtype):
                problems.append(f"{where}: h5py reads dtype {d.dtype}, expected {dtype}")
            if d.shape != want.shape:
                problems.append(f"{where}: shape {d.shape}, expected {want.shape}")
                continue
            got = d[()]
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)
                problems.append(f"{where}: {len(bad)} values differ, first at {bad[0].tolist()}: "
                                f"{got[tuple(bad[0])]} instead of {want[tuple(bad[0])]}")
            a = d.attrs
            if list(a.get("skein_global_shape", [])) != list(want.shape):
                problems.append(f"{where}: skein_global_shape is {a.get('skein_global_shape')!r}")
            if a.get("skein_dtype") != dtype:
                problems.append(f"{where}: skein_dtype is {a.get('skein_dtype')!r}")
            if a.get("skein_step") != salt:
                problems.append(f"{where}: skein_step is {a.get('skein_step')!r}, expected {salt}")
            if grid not in a.get("skein_layout", ""):
                problems.append(f"{where}: skein_layout {a.get('skein_layout')!r} does not name {grid!r}")
    return problems


def main():
    problems = []
    for path in sys.argv[1:]:
        problems += check(path)
    for p in problems:
        print("MISMATCH", p)
    print(f"h5py {h5py.version.version} (HDF5 {h5py.version.hdf5_version}) checked {len(sys.argv) - 1} grid "
          f"file(s): {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
