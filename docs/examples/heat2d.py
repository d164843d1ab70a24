# SPDX-License-Identifier: BSD-3-Clause
"""heat2d: the 2-D heat equation u_t = alpha (u_xx + u_yy) on the unit square from Python, over
every device of every MPI rank, with mpi4py (docs/examples/heat2d.c does the same from C).

The field u[y, x] (NY rows of NX points, C order) is split over a process grid of the devices,
each block with one halo cell; the boundary is u = 0 (constant halos). Each step exchanges the
halos and runs the explicit 5-point (FTCS) step as a Skein stencil kernel, one source for CUDA
and OpenCL; every REPORT steps the kernel also reduces max |v - u| on each device, and the
devices' values are combined by one all_reduce: the residual. At the end the field is checked
against the exact solution of the discrete problem, lambda^n u0 (u0 = sin(kx pi x) sin(ky pi y)
is an eigenvector of the step), then written to an HDF5 file with what it was checked against,
and read back.

    mpirun -n 2 python3 heat2d.py [output.h5]

Exits 0 when the check passes (on every rank: the values compared are the same everywhere).
"""
import math
import sys

import numpy as np
from mpi4py import MPI  # starts MPI; Skein adopts its communicator

import skein

NX, NY, KX, KY, STEPS, REPORT = 64, 48, 1, 1, 100, 25


def set_mode(u, scale, hx, hy):
    """scale * u0 into this rank's blocks of `u` (each block's points, from its global offset)."""
    for local in range(u.local_size):
        (oy, ox), (ey, ex) = u.local_block(local)
        x = (ox + 1 + np.arange(ex)) * hx
        y = (oy + 1 + np.arange(ey)) * hy
        # In the C example's order, (scale * sin x) * sin y, so that both round alike.
        block = scale * np.sin(KX * math.pi * x)[None, :] * np.sin(KY * math.pi * y)[:, None]
        u.local(local).set(block)


def max_difference(a, b, work):
    """max |a - b| over the whole grid (collective): b - a into `work`, then its extremes."""
    skein.dist.axpy(-1.0, a, b, work)
    return max(skein.dist.max(work), -skein.dist.min(work))


def main(output):
    runtime = skein.Runtime(comm=MPI.COMM_WORLD)
    comm = skein.Communicator(runtime)
    rank = runtime.rank

    # The problem and the step's coefficients: u' = c0 u + rx (west + east) + ry (south + north).
    alpha, hx, hy = 1.0, 1.0 / (NX + 1), 1.0 / (NY + 1)
    dt = 0.2 * min(hx, hy) ** 2 / alpha
    rx, ry = alpha * dt / hx**2, alpha * dt / hy**2
    c0 = 1 - 2 * rx - 2 * ry
    lam = c0 + 2 * rx * math.cos(KX * math.pi * hx) + 2 * ry * math.cos(KY * math.pi * hy)

    # Three fields on a process grid chosen for the devices, one halo cell, u = 0 outside.
    def field():
        return skein.GridArray(comm, (NY, NX), np.float64, queue=runtime.queue, halo=1,
                               lower=0.0, upper=0.0)

    u, v, work = field(), field(), field()
    if rank == 0:
        grid = u.layout.process_grid()
        print(f"heat2d: {NY} x {NX} points on a {grid[0]} x {grid[1]} process grid "
              f"({runtime.size} rank(s)), {STEPS} steps", flush=True)
    set_mode(u, 1.0, hx, hy)

    # The step, and max |v - u| over the points it updates.
    step = skein.StencilKernel(
        "double u, double c0, double rx, double ry", "double v",
        "v = c0 * u + rx * (u(0, -1) + u(0, 1)) + ry * (u(-1, 0) + u(1, 0))",
        name="heat_step",
        reduction=skein.StencilReduction("fabs(v - u)", reduce="fmax(a, b)", identity="0"))

    for n in range(1, STEPS + 1):
        u.exchange_halos()
        args = [u, c0, rx, ry, v]
        if n % REPORT == 0:
            change = skein.dist.stencil_reduce(step, args, across="max")
            if rank == 0:
                print(f"heat2d: step {n:3d}  max |u' - u| = {change:.6e}", flush=True)
        else:
            skein.dist.stencil(step, args)
        u, v = v, u

    # The check: lambda^n u0 exactly, up to rounding (skein-heat's bound: each step adds a few
    # units of rounding of the field's size, and the step is a contraction).
    set_mode(v, lam**STEPS, hx, hy)
    error = max_difference(u, v, work)
    total = (1 - abs(lam) ** STEPS) / (1 - abs(lam))
    tolerance = 8 * 2.0**-53 * (2 + total)

    # The field and what it was checked against into an HDF5 file, then read back into v.
    reread = True
    if skein.hdf5.available():
        with skein.hdf5.File.create(comm, output) as f:
            f.write("u", u)
            f.set_attribute("u", "time", STEPS * dt)
            f.set_attribute("u", "lambda", lam)
            f.set_attribute("/", "steps", STEPS)
            f.set_attribute("/", "max_error", error)
        with skein.hdf5.File.open(comm, output) as f:
            f.read("u", v)
            time = f.attribute("u", "time")
        reread = max_difference(u, v, work) == 0 and time == STEPS * dt
    elif rank == 0:
        print("heat2d: this Skein has no HDF5: the file is not written", flush=True)

    passed = error <= tolerance and reread
    if rank == 0:
        print(f"heat2d: max |u - lambda^n u0| = {error:.3e} (tolerance {tolerance:.3e}); "
              f"{output} read back {'identical' if reread else 'DIFFERENT'}")
        print(f"heat2d: {'PASSED' if passed else 'FAILED'}", flush=True)
    return passed


if __name__ == "__main__":
    # The arrays, communicator and runtime go when main() returns, before mpi4py ends MPI.
    sys.exit(0 if main(sys.argv[1] if len(sys.argv) > 1 else "heat2d.h5") else 1)
