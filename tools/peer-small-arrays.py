#!/usr/bin/env python3
"""CuPy's side of skein-bench-small: the host time per call of an ElementwiseKernel
"z = a * x + y" into a given output (as CuPy's axpy would be written) and of x.sum() (a device
scalar), float32, 1 KiB to 1 MiB, in batches of --batch calls with the stream synchronised after
each batch, median over --rounds rounds, both alternating. Results are checked against NumPy.

  python3 tools/peer-small-arrays.py [--rounds 15] [--batch 1000] [--json FILE]
"""
import argparse
import json
import statistics
import time

import cupy as cp
import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--json")
    args = p.parse_args()
    axpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y",
                                "peer_axpy")
    rows = []
    print(f"CuPy {cp.__version__}: host time per call (us), batches of {args.batch}, "
          f"median of {args.rounds} rounds")
    print(f"{'bytes':>10} {'elementwise':>12} {'sum':>10}")
    for nbytes in [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]:
        n = nbytes // 4
        hx = (np.arange(n) % 13).astype(np.float32) * np.float32(0.25)
        hy = (np.arange(n) % 7).astype(np.float32) - np.float32(3)
        x, y = cp.asarray(hx), cp.asarray(hy)
        z = cp.empty_like(x)
        a = np.float32(2)
        stream = cp.cuda.get_current_stream()

        def batch(call):
            t0 = time.perf_counter()
            for _ in range(args.batch):
                call()
            stream.synchronize()
            return (time.perf_counter() - t0) / args.batch * 1e6

        def user():
            axpy(a, x, y, z)

        def total():
            x.sum()

        for _ in range(2):
            batch(user)
            batch(total)
        t_user, t_sum = [], []
        for _ in range(args.rounds):
            t_user.append(batch(user))
            t_sum.append(batch(total))
        assert np.allclose(cp.asnumpy(z), a * hx + hy)
        assert np.isclose(float(x.sum()), float(hx.astype(np.float64).sum()), rtol=1e-5)
        row = {"bytes": nbytes, "elementwise_us": statistics.median(t_user),
               "sum_us": statistics.median(t_sum)}
        rows.append(row)
        print(f"{nbytes:>10} {row['elementwise_us']:>12.2f} {row['sum_us']:>10.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cupy": cp.__version__, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                       "batch": args.batch, "rounds": args.rounds, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
