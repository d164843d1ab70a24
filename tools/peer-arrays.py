#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The peer of skein-bench on one GPU: CuPy's copy, ElementwiseKernel axpy, sum and matmul, timed
the way skein-bench times Skein (CUDA events around each run, the median of --repeat runs after
warm-up), so that a GPU run puts the two side by side (shared/PEERS.md lists what CuPy reached).

    python3 tools/peer-arrays.py --bytes 1G --gemm 8192 --json peer.json

Figures: copy and axpy in GB/s counting bytes read and written (copy: 2 x size; axpy: 3 x
size), sum in GB/s of bytes read, matmul in TFLOP/s (2 n^3 / time).
"""

import argparse
import json
import statistics

import cupy as cp


def timed(f, repeat, warmup=3):
    for _ in range(warmup):
        f()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeat):
        start.record()
        f()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def parse_size(text):
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1].upper(), 1)
    return int(float(text[:-1] if mul > 1 else text) * mul)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bytes", default="1G", help="size of each float32 array")
    p.add_argument("--gemm", type=int, default=8192, help="matrix side for matmul")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--json", default="")
    a = p.parse_args()

    n = parse_size(a.bytes) // 4
    x = cp.random.random(n, dtype=cp.float32)
    y = cp.random.random(n, dtype=cp.float32)
    z = cp.empty_like(x)
    nbytes = n * 4
    results = {}

    t = timed(lambda: cp.copyto(z, x), a.repeat)
    results["copy_GBps"] = 2 * nbytes / t / 1e9

    axpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y",
                                "peer_axpy")
    t = timed(lambda: axpy(cp.float32(2.5), x, y, z), a.repeat)
    results["axpy_GBps"] = 3 * nbytes / t / 1e9

    t = timed(lambda: x.sum(), a.repeat)
    results["sum_GBps"] = nbytes / t / 1e9
    del x, y, z

    m = a.gemm
    for dtype, name in ((cp.float32, "float32"), (cp.float64, "float64")):
        A = cp.random.random((m, m)).astype(dtype)
        B = cp.random.random((m, m)).astype(dtype)
        C = cp.empty((m, m), dtype=dtype)
        t = timed(lambda: cp.matmul(A, B, out=C), max(5, a.repeat // 4), warmup=2)
        results[f"gemm_{name}_TFLOPs"] = 2 * m ** 3 / t / 1e12
        del A, B, C

    print(f"# CuPy {cp.__version__} on {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for k, v in results.items():
        print(f"{k:>22} {v:10.1f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"tool": "peer-arrays", "cupy_version": cp.__version__, "bytes": nbytes,
                       "gemm_n": m, **results}, f, indent=2)


if __name__ == "__main__":
    main()
