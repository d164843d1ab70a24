#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The ratios of the arrays issue, from one GPU run's JSON files (tools/gpu-check.sh, group
`arrays`):

    tools/compare-arrays.py DIR

    peer.json                  tools/peer-arrays.py: CuPy's copy, axpy, sum, matmul on one GPU
    one-<bench>.json           skein-bench on one GPU (axpy, sum: 1 GiB float32; gemm32, gemm64:
                               8192^3)
    ocl-axpy.json              skein-bench axpy on NVIDIA's OpenCL, one GPU
    scale-<bench>-<mode>.json  skein-bench at scaling sizes: mode 1 (one GPU), Npr (N ranks, one
                               GPU each), Nr1 (one rank, N GPUs)
The speed-up bounds are the issue's for 4 GPUs (3.8 x for axpy and sum, 3.6 x for gemm), as
efficiencies (0.95, 0.90) for other GPU counts.
"""

import json
import os
import re
import sys


def load(d, name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def first_row(result):
    return result["rows"][0] if result else None


def main(d):
    failures, lines = [], []

    def check(label, value, bound, ok):
        lines.append(f"{label:<58} {value:8.3f}  (bound {bound})  {'ok' if ok else 'BELOW'}")
        if not ok:
            failures.append(label)

    peer = load(d, "peer.json")
    one = {b: first_row(load(d, f"one-{b}.json")) for b in ("axpy", "sum", "gemm32", "gemm64")}
    if peer:
        lines.append(f"CuPy {peer['cupy_version']}: copy {peer['copy_GBps']:.0f} GB/s, axpy "
                     f"{peer['axpy_GBps']:.0f} GB/s, sum {peer['sum_GBps']:.0f} GB/s, matmul "
                     f"{peer['gemm_float32_TFLOPs']:.1f} / {peer['gemm_float64_TFLOPs']:.1f} TFLOP/s")
    for b, r in one.items():
        if r:
            lines.append(f"Skein one GPU {b}: {r['skein']:.1f} {r['unit']}, same-run reference "
                         f"({r['reference_is']}) {r['reference']:.1f}: ratio {r['ratio']:.3f}")
    if one["axpy"]:
        r = one["axpy"]
        check("axpy / Skein's device copy (same run)", r["skein"] / r["reference"], ">= 0.90",
              r["skein"] >= 0.90 * r["reference"])
        if peer:
            check("axpy / CuPy's device copy (same run)", r["skein"] / peer["copy_GBps"], ">= 0.90",
                  r["skein"] >= 0.90 * peer["copy_GBps"])
            check("axpy / CuPy's ElementwiseKernel axpy", r["skein"] / peer["axpy_GBps"], "info",
                  True)
    if one["sum"] and peer:
        r = one["sum"]
        check("sum to the host of every rank / CuPy's sum", r["skein"] / peer["sum_GBps"], "info",
              True)
        rows = load(d, "one-sum.json")["rows"]
        kernel = next((x for x in rows if x["what"].startswith("sum, one device")), None)
        if kernel:
            check("sum on the device (events, as CuPy's) / CuPy's sum",
                  kernel["skein"] / peer["sum_GBps"], ">= 1.00", kernel["skein"] >= peer["sum_GBps"])
    for b, key in (("gemm32", "gemm_float32_TFLOPs"), ("gemm64", "gemm_float64_TFLOPs")):
        r = one[b]
        if r and peer:
            check(f"{b} 8192^3 / CuPy matmul (cuBLAS)", r["skein"] / peer[key], ">= 0.97",
                  r["skein"] >= 0.97 * peer[key])
        if r:
            check(f"{b} 8192^3 / cuBLAS called directly", r["ratio"], "info", True)
    ocl = first_row(load(d, "ocl-axpy.json"))
    if ocl:
        check("OpenCL (NVIDIA) axpy / its device copy", ocl["ratio"], ">= 0.80", ocl["ratio"] >= 0.80)
        if one["axpy"]:
            copy = one["axpy"]["reference"]
            check("OpenCL (NVIDIA) axpy / CUDA device copy", ocl["skein"] / copy, ">= 0.80",
                  ocl["skein"] >= 0.80 * copy)
    for b, efficiency in (("axpy", 0.95), ("sum", 0.95), ("gemm", 0.90)):
        base = first_row(load(d, f"scale-{b}-1.json"))
        for name in sorted(os.listdir(d)):
            prefix = f"scale-{b}-"
            if not name.startswith(prefix) or name == f"scale-{b}-1.json":
                continue
            mode = name[len(prefix):-len(".json")]
            match = re.fullmatch(r"(\d+)(pr|r1)", mode)
            gpus = int(match.group(1)) if match else 0
            r = first_row(load(d, name))
            if not (base and r and gpus):
                continue
            label = f"{gpus} ranks, one GPU each" if mode.endswith("pr") else f"one rank, {gpus} GPUs"
            speedup = r["skein"] / base["skein"]  # same size: throughput ratio = speedup
            bound = efficiency * gpus
            check(f"{b} speed-up on {gpus} GPUs ({label})", speedup, f">= {bound:.2f}", speedup >= bound)
    print("\n".join(lines))
    if not lines:
        print(f"no results in {d}")
        return 1
    if failures:
        print("BELOW THE BOUNDS: " + "; ".join(failures))
        return 1
    print("Every bound holds.")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
