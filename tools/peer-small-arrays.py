#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""CuPy's side of skein-bench-small: the host time per call of an ElementwiseKernel
"z = a * x + y" into a given output (as CuPy's axpy would be written) and of x.sum() (a device
scalar), float32, 1 KiB to 1 MiB, in batches of --batch calls with the stream synchronised after
each batch, median over --rounds rounds, both alternating. Results are checked against NumPy.

With --skein (once or more: each a skein-bench-small command line, run with --serve), Skein's
batches alternate with CuPy's in every round: CuPy's ElementwiseKernel, then each Skein process's
raw launch, raw graph launch, axpy and user ElementwiseKernel, then CuPy's sum, then each Skein process's sum. The
host's speed moves by 30 % or more for seconds at a time on these machines (the raw launch too),
so a ratio is only fair between neighbouring batches: each round gives Skein / CuPy from its own
batches, and the figure is the median of those ratios. The raw launch's ratio (a bare
cuLaunchKernel of an axpy kernel against CuPy's ElementwiseKernel) is the floor any library that
launches a kernel per call can reach. Every Skein process checks its results
against the host after each size.

  python3 tools/peer-small-arrays.py [--rounds 15] [--batch 1000] [--json FILE]
  python3 tools/peer-small-arrays.py --skein "build/tests/bench/skein-bench-small" \\
      --skein "build/tests/bench/skein-bench-small --make-current" --json FILE
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

SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]


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
    p.add_argument("--skein", action="append", default=[],
                   help="a skein-bench-small command line whose batches alternate with CuPy's")
    p.add_argument("--json")
    ARGS = args = p.parse_args()
    skeins = [Skein(c) for c in args.skein]
    axpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y",
                                "peer_axpy")
    rows = []
    skein_rows = {s.label: [] for s in skeins}
    print(f"CuPy {cp.__version__}: host time per call (us), batches of {args.batch}, "
          f"median of {args.rounds} rounds")
    print(f"{'bytes':>10} {'elementwise':>12} {'sum':>10}")
    for nbytes in SIZES:
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

        def user():
            axpy(a, x, y, z)

        def total():
            x.sum()

        for _ in range(2):
            batch(user)
            batch(total)
        t_user, t_sum = [], []
        t_skein = {s.label: {v: [] for v in ("raw", "graph", "axpy", "elementwise", "sum")} for s in skeins}
        for _ in range(args.rounds):
            t_user.append(batch(user))
            for s in skeins:
                for v in ("raw", "graph", "axpy", "elementwise"):
                    t_skein[s.label][v].append(float(s.ask(f"batch {v}")))
            t_sum.append(batch(total))
            for s in skeins:
                t_skein[s.label]["sum"].append(float(s.ask("batch sum")))
        assert np.allclose(cp.asnumpy(z), a * hx + hy)
        assert np.isclose(float(x.sum()), float(hx.astype(np.float64).sum()), rtol=1e-5)
        for s in skeins:
            verdict = s.ask("check")
            if verdict != "ok":
                sys.exit(f"peer-small-arrays: {s.command}: {nbytes} bytes: {verdict}")
        row = {"bytes": nbytes, "elementwise_us": statistics.median(t_user),
               "sum_us": statistics.median(t_sum)}
        rows.append(row)
        print(f"{nbytes:>10} {row['elementwise_us']:>12.2f} {row['sum_us']:>10.2f}")
        for s in skeins:
            t = t_skein[s.label]
            ref = {"raw": t_user, "graph": t_user, "axpy": t_user, "elementwise": t_user,
                   "sum": t_sum}
            srow = {"bytes": nbytes}
            for v in ("raw", "graph", "axpy", "elementwise", "sum"):
                srow[f"{v}_us"] = statistics.median(t[v])
                # Skein / CuPy from the batches of each round, then their median.
                srow[f"{v}_ratio"] = statistics.median(
                    [mine / theirs for mine, theirs in zip(t[v], ref[v])])
            skein_rows[s.label].append(srow)
    for s in skeins:
        s.close()
    for label, srows in skein_rows.items():
        print(f"{label} / CuPy, batches alternating in each round: median of the rounds' ratios "
              f"(Skein's median us / CuPy's)")
        print(f"{'bytes':>10} {'axpy':>18} {'elementwise':>18} {'sum':>18} {'raw launch':>18}"
              f" {'raw graph':>18}")
        for r, c in zip(srows, rows):
            print(f"{r['bytes']:>10} {r['axpy_ratio']:>5.2f} ({r['axpy_us']:5.2f}/{c['elementwise_us']:5.2f})"
                  f" {r['elementwise_ratio']:>5.2f} ({r['elementwise_us']:5.2f}/{c['elementwise_us']:5.2f})"
                  f" {r['sum_ratio']:>5.2f} ({r['sum_us']:5.2f}/{c['sum_us']:5.2f})"
                  f" {r['raw_ratio']:>5.2f} ({r['raw_us']:5.2f}/{c['elementwise_us']:5.2f})"
                  f" {r['graph_ratio']:>5.2f} ({r['graph_us']:5.2f}/{c['elementwise_us']:5.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cupy": cp.__version__,
                       "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                       "batch": args.batch, "rounds": args.rounds, "rows": rows,
                       "skein": [{"command": s.command, "label": s.label, "rows": skein_rows[s.label]}
                                 for s in skeins]}, f, indent=2)


if __name__ == "__main__":
    main()
