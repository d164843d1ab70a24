#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An independent check of skein-heat's final field on a process grid (tests/apps/heat_grid.cmake).

    heat_grid_reference.py FIELD.bin NX NY NZ STEPS DTYPE KX KY KZ DT_FACTOR BOUNDARY [HEAT.h5]

FIELD.bin is dataset "u" of heat.h5 as raw little-endian values (h5dump -b LE), of shape (NZ, NY, NX)
(NZ 0: a 2-D run, (NY, NX)). The exact solution of the discrete problem is computed here from its
definition alone (no code shared with the app): per axis of n points, h = 1 / (n + 1), and the mode
  open      f(i) = sin(k pi (i + 1) h),       theta = k pi h
  periodic  f(i) = cos(2 pi k i / n),         theta = 2 pi k / n
  reflect   f(i) = cos(k pi (i + 1/2) / n),   theta = k pi / n
u0 = prod f; dt = DT_FACTOR (2 / d) min(h)^2 (alpha = 1, d axes); r_a = dt / h_a^2 and
c0 = 1 - 2 sum r_a rounded to DTYPE; lambda = c0 + 2 sum r_a cos(theta_a). The field must be
lambda^STEPS u0 to within a bound far below any error of the stencil or the halo exchange and far
above rounding. With HEAT.h5 and h5py installed, the file is also read whole with h5py and must
hold the same values (SKEIN_REQUIRE_H5PY=1: h5py must be there). Exit status 0 when it does, 1 otherwise.
"""
import math
import os
import struct
import sys
from array import array


def main():
    if len(sys.argv) not in (12, 13):
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    nx, ny, nz, steps = (int(a) for a in sys.argv[2:6])
    dtype = sys.argv[6]
    kx, ky, kz = (int(a) for a in sys.argv[7:10])
    factor, boundary = float(sys.argv[10]), sys.argv[11]
    code = {"float32": "f", "float64": "d"}[dtype]

    def rounded(v):
        return struct.unpack(code, struct.pack(code, v))[0]

    values = array(code)
    with open(path, "rb") as f:
        values.frombytes(f.read())
    if sys.byteorder != "little":
        values.byteswap()
    axes = [(nz, kz), (ny, ky), (nx, kx)] if nz > 0 else [(ny, ky), (nx, kx)]
    total = math.prod(n for n, _ in axes)
    if len(values) != total:
        print(f"heat_grid_reference: {path} holds {len(values)} values, expected {total}")
        return 1

    hs = [1.0 / (n + 1) for n, _ in axes]
    dt = factor * (2.0 / len(axes)) * min(hs) ** 2
    rs = [rounded(dt / h**2) for h in hs]
    c0 = rounded(1 - 2 * sum(rs))

    def mode(n, k, h):
        if boundary == "periodic":
            return [math.cos(2 * math.pi * k * i / n) for i in range(n)], 2 * math.pi * k / n
        if boundary == "reflect":
            return [math.cos(math.pi * k * (i + 0.5) / n) for i in range(n)], math.pi * k / n
        return [math.sin(k * math.pi * (i + 1) * h) for i in range(n)], k * math.pi * h

    modes = [mode(n, k, h) for (n, k), h in zip(axes, hs)]
    lam = c0 + sum(2 * r * math.cos(theta) for r, (_, theta) in zip(rs, modes))
    decay = lam**steps
    worst, where = 0.0, 0
    fs = [f for f, _ in modes]
    for idx in range(total):
        rest, u0 = idx, 1.0
        for f in reversed(fs):
            u0 *= f[rest % len(f)]
            rest //= len(f)
        e = abs(values[idx] - decay * u0)
        if not e <= worst:  # NaN counts as the worst
            worst, where = (e if e == e else math.inf), idx
    bound = 1e-11 if dtype == "float64" else 2e-5
    verdict = "ok" if worst <= bound else "WRONG"
    print(f"heat_grid_reference: {'x'.join(str(n) for n, _ in axes)} {dtype} {boundary} after {steps} steps: "
          f"max |u - lambda^n u0| = {worst:.3e} at flat index {where} (bound {bound:.0e}): {verdict}")
    ok = worst <= bound
    if len(sys.argv) == 13:
        try:
            import h5py  # noqa: PLC0415 (optional)
        except ImportError:
            if os.environ.get("SKEIN_REQUIRE_H5PY") == "1":
                print(f"heat_grid_reference: h5py is required here but {sys.executable} has none")
                return 1
            print("heat_grid_reference: h5py is not installed: the h5py read is skipped")
        else:
            with h5py.File(sys.argv[12], "r") as f:
                u = f["u"][...]
            same = tuple(u.shape) == tuple(n for n, _ in axes) and list(u.ravel()) == list(values)
            print(f"heat_grid_reference: h5py reads u of shape {u.shape}: {'the same values' if same else 'DIFFERENT'}")
            ok = ok and same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
