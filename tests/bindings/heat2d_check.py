#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the HDF5 file of docs/examples/heat2d.c or heat2d.f90 (ctest capi.heat2d.h5,
fortran.heat2d.h5) with h5py, which shares no code with Skein: the field (u[ny][nx] of the C
program, u(nx, ny) of the Fortran one) is the dataset "u" of dimensions (ny, nx) (HDF5's C order),
equal to lambda**steps u0 within the bound the program
used, and the attributes are there. Exits 77 (skipped) when h5py is missing."""
import math
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    print("h5py or numpy is not installed: skipped")
    sys.exit(77)

NX, NY, KX, KY = 64, 48, 1, 1

with h5py.File(sys.argv[1], "r") as f:
    u = f["u"][...]
    steps = int(f.attrs["steps"])
    error_written = float(f.attrs["max_error"])
    lam = float(f["u"].attrs["lambda"])
    time = float(f["u"].attrs["time"])

problems = []
if u.shape != (NY, NX) or u.dtype != np.float64:
    problems.append(f"dataset u is {u.shape} {u.dtype}, expected ({NY}, {NX}) float64")
else:
    hx, hy = 1.0 / (NX + 1), 1.0 / (NY + 1)
    x = np.arange(1, NX + 1) * hx
    y = np.arange(1, NY + 1) * hy
    exact = lam**steps * np.outer(np.sin(KY * math.pi * y), np.sin(KX * math.pi * x))
    error = float(np.max(np.abs(u - exact)))
    tolerance = 8 * 2.0**-53 * (2 + (1 - abs(lam) ** steps) / (1 - abs(lam)))
    if error > tolerance:
        problems.append(f"max |u - lambda^n u0| = {error:.3e} > {tolerance:.3e}")
    if abs(error - error_written) > tolerance:
        problems.append(f"the file's max_error {error_written:.3e} differs from {error:.3e}")
dt = 0.2 * min(1.0 / (NX + 1), 1.0 / (NY + 1)) ** 2
if steps != 100 or abs(time - steps * dt) > 1e-15:
    problems.append(f"attributes steps={steps}, time={time}: expected 100 and {100 * dt}")
for p in problems:
    print("heat2d.h5:", p)
print("heat2d.h5:", "FAIL" if problems else "OK")
sys.exit(1 if problems else 0)
