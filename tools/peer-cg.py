#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""CuPy's side of skein-cg: the same CG (Saad, Algorithm 6.18) on the same system, the 5-point
Poisson matrix on an nx x ny grid with zero Dirichlet values outside, written as a CuPy user who
knows CuPy writes it:
  matvec   one ElementwiseKernel over the grid, reading p's neighbours through a raw pointer
  dots     cupy.dot on 1-D vectors (cuBLAS ddot / sdot), the value taken to the host
  update   one ElementwiseKernel for x += alpha p; r -= alpha w (in place)
  p        one ElementwiseKernel for p = r + beta p
b = A x for x with values in [-0.5, 0.5) (NumPy's generator), so that CG has work to do. Runs
--iterations iterations (no convergence test beyond the breakdown check: the time per iteration
is the figure) after --warmup ones, --rounds times, and reports the median time per iteration.
The first iterations' residuals are checked against NumPy's CG on a small grid (--check).

  python3 tools/peer-cg.py --nx 8192 --ny 8192 --iterations 300 --json cupy-cg.json
"""
import argparse
import json
import statistics
import sys
import time

import cupy as cp
import numpy as np

MATVEC = cp.ElementwiseKernel(
    "raw T p, int64 nx, int64 ny", "T w",
    """
    const long long row = i / nx, col = i - row * nx;
    T s = (T)4 * p[i];
    if (row > 0) s -= p[i - nx];
    if (row + 1 < ny) s -= p[i + nx];
    if (col > 0) s -= p[i - 1];
    if (col + 1 < nx) s -= p[i + 1];
    w = s;
    """, "cg_matvec")
UPDATE = cp.ElementwiseKernel("T alpha, T p, T w", "T x, T r", "x += alpha * p; r -= alpha * w", "cg_update")
DIRECTION = cp.ElementwiseKernel("T beta, T r", "T p", "p = r + beta * p", "cg_direction")


def cg(b, nx, ny, iterations, dtype):
    x = cp.zeros_like(b)
    r = b.copy()
    p = r.copy()
    w = cp.empty_like(b)
    rr = float(cp.dot(r, r))
    residuals = []
    for _ in range(iterations):
        MATVEC(p, nx, ny, w)
        pw = float(cp.dot(p, w))
        if not pw > 0:
            raise RuntimeError(f"CG broke down: p . A p = {pw}")
        alpha = rr / pw
        UPDATE(dtype(alpha), p, w, x, r)
        rr_next = float(cp.dot(r, r))
        residuals.append(rr_next)
        beta = rr_next / rr
        rr = rr_next
        DIRECTION(dtype(beta), r, p)
    return x, residuals


def host_cg(b, nx, ny, iterations):
    def apply(u):
        g = u.reshape(ny, nx)
        w = 4 * g
        w[1:, :] -= g[:-1, :]
        w[:-1, :] -= g[1:, :]
        w[:, 1:] -= g[:, :-1]
        w[:, :-1] -= g[:, 1:]
        return w.reshape(-1)
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = r @ r
    out = []
    for _ in range(iterations):
        w = apply(p)
        alpha = rr / (p @ w)
        x += alpha * p
        r -= alpha * w
        rr_next = r @ r
        out.append(rr_next)
        p = r + (rr_next / rr) * p
        rr = rr_next
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nx", type=int, default=8192)
    ap.add_argument("--ny", type=int, default=8192)
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float64")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    dtype = np.dtype(args.dtype).type

    # The check: 30 iterations on a 37 x 29 grid against NumPy's, relative residuals within 1e-9.
    nx, ny = 37, 29
    xs = np.random.default_rng(1).random(nx * ny) - 0.5
    xg = xs.reshape(ny, nx)
    bg = 4 * xg
    bg[1:, :] -= xg[:-1, :]
    bg[:-1, :] -= xg[1:, :]
    bg[:, 1:] -= xg[:, :-1]
    bg[:, :-1] -= xg[:, 1:]
    bh = bg.reshape(-1)
    _, got = cg(cp.asarray(bh), nx, ny, 30, np.float64)
    want = host_cg(bh, nx, ny, 30)
    worst = max(abs(g - w) / w for g, w in zip(got, want))
    if worst > 1e-9:
        print(f"peer-cg: CuPy's CG differs from NumPy's by {worst:.2e} (relative, r . r)", file=sys.stderr)
        return 1

    n = args.nx * args.ny
    x_true = cp.asarray(np.random.default_rng(2).random(n) - 0.5, dtype=args.dtype)
    b = cp.empty_like(x_true)
    MATVEC(x_true, args.nx, args.ny, b)
    cg(b, args.nx, args.ny, args.warmup, dtype)
    times = []
    for _ in range(args.rounds):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        cg(b, args.nx, args.ny, args.iterations, dtype)
        cp.cuda.Device().synchronize()
        times.append((time.perf_counter() - t0) / args.iterations)
    per_iteration = statistics.median(times)
    result = {"tool": "peer-cg", "peer": f"CuPy {cp.__version__}", "nx": args.nx, "ny": args.ny,
              "dtype": args.dtype, "iterations": args.iterations, "rounds": args.rounds,
              "seconds_per_iteration": per_iteration, "per_round": times, "check_worst_relative": worst}
    print(f"peer-cg: CuPy CG {args.nx} x {args.ny} {args.dtype}: {per_iteration * 1e3:.3f} ms per iteration "
          f"(median of {args.rounds} rounds of {args.iterations}); the check against NumPy: {worst:.1e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
