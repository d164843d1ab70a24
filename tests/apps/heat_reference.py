#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An independent check of skein-heat's final field (tests/apps/heat.cmake).

    heat_reference.py FIELD.bin NX NY STEPS DTYPE KX KY DT_FACTOR

FIELD.bin is the dataset "u" of heat.h5 as raw little-endian values (h5dump -b LE). The exact
solution of the discrete problem is computed here from the problem's definition alone (no code
shared with the app): u0 = sin(KX pi x) sin(KY pi y) on the interior points x = (c + 1) / (NX + 1),
y = (r + 1) / (NY + 1); dt = DT_FACTOR min(hx, hy)^2 (alpha = 1); one FTCS step multiplies the
mode by lambda = c0 + 2 rx cos(KX pi hx) + 2 ry cos(KY pi hy), with rx, ry and c0 = 1 - 2 rx - 2 ry
rounded to DTYPE as the kernel gets them. The field must be lambda^STEPS u0 to within a bound far
below any error of the stencil or the halo exchange (a missing or stale halo row, a wrong boundary,
a lost or repeated step all change the field by more than 1e-4 of its size) and far above
rounding. Exit status 0 when it is, 1 (with the largest error) otherwise.
"""
import math
import struct
import sys
from array import array


def main():
    if len(sys.argv) != 9:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    nx, ny, steps = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    dtype, kx, ky, factor = sys.argv[5], int(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8])
    code = {"float32": "f", "float64": "d"}[dtype]

    def rounded(v):
        return struct.unpack(code, struct.pack(code, v))[0]

    values = array(code)
    with open(path, "rb") as f:
        values.frombytes(f.read())
    if sys.byteorder != "little":
        values.byteswap()
    if len(values) != nx * ny:
        print(f"heat_reference: {path} holds {len(values)} values, expected {nx} x {ny} = {nx * ny}")
        return 1

    hx, hy = 1.0 / (nx + 1), 1.0 / (ny + 1)
    dt = factor * min(hx, hy) ** 2
    rx, ry = rounded(dt / hx**2), rounded(dt / hy**2)
    c0 = rounded(1 - 2 * rx - 2 * ry)
    lam = c0 + 2 * rx * math.cos(kx * math.pi * hx) + 2 * ry * math.cos(ky * math.pi * hy)
    decay = lam**steps
    sx = [math.sin(kx * math.pi * (c + 1) * hx) for c in range(nx)]
    sy = [math.sin(ky * math.pi * (r + 1) * hy) for r in range(ny)]

    worst, where = 0.0, (0, 0)
    for r in range(ny):
        for c in range(nx):
            e = abs(values[r * nx + c] - decay * sy[r] * sx[c])
            if not e <= worst:  # NaN counts as the worst
                worst, where = (e if e == e else math.inf), (r, c)
    bound = 1e-11 if dtype == "float64" else 2e-5
    verdict = "ok" if worst <= bound else "WRONG"
    print(f"heat_reference: {nx} x {ny} {dtype} after {steps} steps: max |u - lambda^n u0| = {worst:.3e} "
          f"at row {where[0]}, column {where[1]} (bound {bound:.0e}): {verdict}")
    return 0 if worst <= bound else 1


if __name__ == "__main__":
    sys.exit(main())
