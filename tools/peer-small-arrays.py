#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""CuPy's side of skein-bench-small: the host time per call, float32, 1 KiB to 16 MiB, in batches
of --batch calls with the stream synchronised after each batch, median over --rounds rounds, of
  elementwise  an ElementwiseKernel "z = a * x + y" into a given output (as CuPy's axpy would be
               written)
  sum          s = x.sum() (a device scalar, a new array each call)
  astype       y = x.astype(cupy.float64) (a new array each call)
  empty        e = cupy.empty(n, cupy.float32) (CuPy's memory pool)
Results are checked against NumPy.

With --skein (once or more: each a skein-bench-small command line, run with --serve), Skein's
batches alternate with CuPy's in every round: CuPy's ElementwiseKernel, then each Skein process's
raw launch, raw graph launch, axpy and user ElementwiseKernel; CuPy's sum, then each Skein
process's sum into a given output, sum making its result (auto s = skein::sum(queue, x)) and the
same with the array pool off (plain allocations, as before the pool); CuPy's astype, then Skein's
astype(queue, x, float64) with the pool and without; CuPy's empty, then Skein's Array::empty with
the pool and without, and a raw cuMemAllocAsync + cuMemFreeAsync (CUDA's stream-ordered allocator).
The host's speed moves by 30 % or more for seconds at a time on these machines (the raw launch
too), so a ratio is only fair between neighbouring batches: each round gives Skein / CuPy from its
own batches (each Skein variant against the CuPy batch of its group), and the figure is the median
of those ratios. The raw launch's ratio (a bare cuLaunchKernel of an axpy kernel against CuPy's
ElementwiseKernel) is the floor any library that launches a kernel per call can reach. Every Skein
process checks its results against the host after each size.

  python3 tools/peer-small-arrays.py [--rounds 15] [--batch 1000] [--max-bytes 16777216] [--json FILE]
  python3 tools/peer-small-arrays.py --skein "build/tests/bench/skein-bench-small" \\
      --skein "build/tests/bench/skein-bench-small --make-current" --json FILE

tools/compare-small.py judges the JSON files of several runs (tools/gpu-check.sh's `small` step).
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time

import cupy as cp
import numpy as np

# Each CuPy batch, and the Skein variants timed after it and compared with it.
GROUPS = [
    ("elementwise", ["raw", "graph", "axpy", "elementwise"]),
    ("sum", ["sum", "sum_result", "sum_result_nopool"]),
    ("astype", ["astype", "astype_nopool"]),
    ("empty", ["empty", "empty_nopool", "raw_alloc_async"]),
]
REFERENCE = {v: ref for ref, vs in GROUPS for v in vs}


class Skein:
    """A skein-bench-small --serve process: one command per line, one reply line each."""

    def __init__(self, command):
        self.command = command
        self.label = "skein, context made current" if "--make-current" in command else "skein"
        self.proc = subprocess.Popen(shlex.split(command) + ["--serve", "--batch", str(ARGS.batch)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        hello = self.proc.stdout.readline().strip()
        if not hello.startswith("ready"):
            sys.exit(f"peer-small-arrays: {command} did not start: {hello or 'no reply'}")
        has = set(self.ask("variants").split())
        self.variants = [v for v in REFERENCE if v in has]

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if not reply or reply.startswith("error"):
            sys.exit(f"peer-small-arrays: {self.command}: '{line}' answered '{reply}'")
        return reply

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=60)


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--max-bytes", type=int, default=16 << 20,
                   help="the largest size (1 KiB, 4 KiB, ... up to it)")
    p.add_argument("--skein", action="append", default=[],
                   help="a skein-bench-small command line whose batches alternate with CuPy's")
    p.add_argument("--json")
    ARGS = args = p.parse_args()
    sizes = []
    b = 1 << 10
    while b <= args.max_bytes:
        sizes.append(b)
        b *= 4
    skeins = [Skein(c) for c in args.skein]
    # Two command lines of one kind (two builds compared, e.g. before and after a change) would
    # share a label and so one another's rows: such labels carry the command line.
    labels = [s.label for s in skeins]
    for s in skeins:
        if labels.count(s.label) > 1:
            s.label = f"{s.label} ({s.command})"
    axpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y",
                                "peer_axpy")
    rows = []
    skein_rows = {s.label: [] for s in skeins}
    refs = [g for g, _ in GROUPS]
    print(f"CuPy {cp.__version__}: host time per call (us), batches of {args.batch}, "
          f"median of {args.rounds} rounds")
    print(f"{'bytes':>10}" + "".join(f" {r:>12}" for r in refs))
    for nbytes in sizes:
        n = nbytes // 4
        hx = (np.arange(n) % 13).astype(np.float32) * np.float32(0.25)
        hy = (np.arange(n) % 7).astype(np.float32) - np.float32(3)
        x, y = cp.asarray(hx), cp.asarray(hy)
        z = cp.empty_like(x)
        a = np.float32(2)
        stream = cp.cuda.get_current_stream()
        for s in skeins:
            s.ask(f"size {nbytes}")

        def batch(call):
            t0 = time.perf_counter()
            for _ in range(args.batch):
                call()
            stream.synchronize()
            return (time.perf_counter() - t0) / args.batch * 1e6

        calls = {
            "elementwise": lambda: axpy(a, x, y, z),
            "sum": lambda: x.sum(),
            "astype": lambda: x.astype(cp.float64),
            "empty": lambda: cp.empty(n, cp.float32),
        }
        for _ in range(2):
            for r in refs:
                batch(calls[r])
        t_cupy = {r: [] for r in refs}
        t_skein = {s.label: {v: [] for v in s.variants} for s in skeins}
        for _ in range(args.rounds):
            for ref, variants in GROUPS:
                t_cupy[ref].append(batch(calls[ref]))
                for s in skeins:
                    for v in variants:
                        if v in s.variants:
                            t_skein[s.label][v].append(float(s.ask(f"batch {v}")))
        axpy(a, x, y, z)
        assert np.allclose(cp.asnumpy(z), a * hx + hy)
        assert np.isclose(float(x.sum()), float(hx.astype(np.float64).sum()), rtol=1e-5)
        assert np.array_equal(cp.asnumpy(x.astype(cp.float64)), hx.astype(np.float64))
        for s in skeins:
            verdict = s.ask("check")
            if verdict != "ok":
                sys.exit(f"peer-small-arrays: {s.command}: {nbytes} bytes: {verdict}")
        row = {"bytes": nbytes}
        for r in refs:
            row[f"{r}_us"] = statistics.median(t_cupy[r])
        rows.append(row)
        print(f"{nbytes:>10}" + "".join(f" {row[f'{r}_us']:>12.2f}" for r in refs))
        for s in skeins:
            t = t_skein[s.label]
            srow = {"bytes": nbytes}
            for v in s.variants:
                ref = t_cupy[REFERENCE[v]]
                srow[f"{v}_us"] = statistics.median(t[v])
                # Skein / CuPy from the batches of each round, then their median.
                srow[f"{v}_ratio"] = statistics.median(
                    [mine / theirs for mine, theirs in zip(t[v], ref)])
            skein_rows[s.label].append(srow)
    for s in skeins:
        s.close()

    def cell(r, c, v):
        if f"{v}_ratio" not in r:
            return f"{'-':>19}"
        return f" {r[f'{v}_ratio']:>5.2f} ({r[f'{v}_us']:5.2f}/{c[REFERENCE[v] + '_us']:5.2f})"

    tables = [("kernels into given outputs, and the raw floors",
               ["axpy", "elementwise", "sum", "raw", "graph"]),
              ("calls that make their result: with the array pool, and without it (_nopool, "
               "plain allocations as before the pool)",
               ["sum_result", "astype", "empty", "sum_result_nopool", "astype_nopool",
                "empty_nopool", "raw_alloc_async"])]
    for s in skeins:
        srows = skein_rows[s.label]
        print(f"{s.label} / CuPy, batches alternating in each round: median of the rounds' ratios "
              f"(Skein's median us / CuPy's); each against CuPy's "
              + ", ".join(f"{v} -> {REFERENCE[v]}" for v in ("axpy", "sum_result", "astype", "empty")))
        for title, cols in tables:
            cols = [v for v in cols if v in s.variants]
            print(f"  {title}")
            print(f"{'bytes':>10}" + "".join(f" {v:>19}" for v in cols))
            for r, c in zip(srows, rows):
                print(f"{r['bytes']:>10}" + "".join(cell(r, c, v) for v in cols))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cupy": cp.__version__,
                       "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                       "batch": args.batch, "rounds": args.rounds, "rows": rows,
                       "reference": REFERENCE,
                       "skein": [{"command": s.command, "label": s.label, "variants": s.variants,
                                  "rows": skein_rows[s.label]} for s in skeins]}, f, indent=2)


if __name__ == "__main__":
    main()
