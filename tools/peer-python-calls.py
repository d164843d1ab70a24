#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Python's overhead on small arrays (issue 39): the host time per call of the same calls from
Python with skein, from C++ (skein-bench-small --serve) and from CuPy (when it imports and the API
is CUDA), float32, 1 KiB to --max-bytes, in batches of --batch calls with the queue synchronised
after each batch, median over --rounds rounds, the three alternating within each round so that each
comparison is between neighbouring batches:
  elementwise  an ElementwiseKernel "z = a * x + y" (float a, float x, float y -> float z) into a
               preallocated output: k(queue, a, x, y, z), the call users write most
  sum          s = skein.sum(queue, x), a new one-element array each call (C++: skein::sum(queue,
               x); CuPy: x.sum())
The table gives each median, python - cpp (us: the median of the rounds' differences) and
python / cupy (the median of the rounds' ratios). Results are checked against NumPy.

  python3 tools/peer-python-calls.py --api cuda --json FILE            (the GPU machine)
  POCL_DEVICES=pthread python3 tools/peer-python-calls.py --api opencl  (a check that it runs)

Run it with the interpreter the package was built for, with <build>/python on PYTHONPATH (the
script adds build/python of the source tree when skein does not import).
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import skein
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import skein

VARIANTS = {"elementwise": "elementwise", "sum": "sum_result"}  # ours -> skein-bench-small's


class Cpp:
    """A skein-bench-small --serve process: one command per line, one reply line each."""

    def __init__(self, command, api, batch):
        self.command = command
        self.proc = subprocess.Popen(
            shlex.split(command) + ["--serve", "--api", api, "--batch", str(batch)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        hello = self.proc.stdout.readline().strip()
        if not hello.startswith("ready"):
            sys.exit(f"peer-python-calls: {command} did not start: {hello or 'no reply'}")

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if not reply or reply.startswith("error"):
            sys.exit(f"peer-python-calls: {self.command}: '{line}' answered '{reply}'")
        return reply

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=60)


def timed(call, batch, sync):
    """Host microseconds per call over one batch, the queue synchronised at its end."""
    t0 = time.perf_counter()
    for _ in range(batch):
        call()
    sync()
    return (time.perf_counter() - t0) * 1e6 / batch


def cupy_module(api):
    if api != "cuda":
        return None, "CuPy compared on --api cuda only"
    try:
        import cupy
        return cupy, None
    except ImportError as e:
        return None, f"CuPy does not import ({e})"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", default="cuda", choices=["cuda", "opencl"])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--max-bytes", type=int, default=1 << 20)
    p.add_argument("--cpp", default=os.path.join(ROOT, "build", "tests", "bench",
                                                 "skein-bench-small"),
                   help="the skein-bench-small command line (run with --serve); '' to skip C++")
    p.add_argument("--json")
    p.add_argument("--cpu", type=int, default=None,
                   help="the CPU this process and the C++ process run on (default: the last one "
                        "allowed): one core for both, so that neither gains from the core it lands "
                        "on (unpinned, both Python libraries' rows came out 1.2-1.7 us slower in "
                        "some sizes than in others, C++'s not); -1: not pinned")
    args = p.parse_args()

    api = next((a for a in skein.API.all_available() if a.shortcut == args.api), None)
    if api is None:
        sys.exit(f"peer-python-calls: API {args.api} is not available: {skein.API.status()}")
    context = skein.Context.from_criteria(api)
    queue = skein.Queue(context)
    cp, no_cupy = cupy_module(args.api)
    pinned = "not pinned"
    if args.cpu != -1 and hasattr(os, "sched_setaffinity"):
        cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})  # the C++ process, started next, inherits it
        pinned = f"both on CPU {cpu}"
    cpp = Cpp(args.cpp, args.api, args.batch) if args.cpp else None
    kernel = skein.ElementwiseKernel("float a, float x, float y", "float z", "z = a * x + y",
                                     name="py_bench_axpy")
    if cp is not None:
        cp_kernel = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z",
                                         "z = a * x + y", "peer_axpy")
    a = np.float32(2)
    print(f"skein {skein.__version__} on {context.devices[0].name} ({args.api}), {pinned}; "
          f"{'CuPy ' + cp.__version__ if cp else no_cupy}; host us per call, batches of "
          f"{args.batch}, median of {args.rounds} rounds")
    head = (f"{'bytes':>9} {'call':>12} {'python':>9} {'cpp':>9} {'cupy':>9} "
            f"{'py-cpp us':>10} {'py/cupy':>8}")
    print(head)
    rows = []
    nbytes = 1 << 10
    while nbytes <= args.max_bytes:
        n = nbytes // 4
        hx = (np.arange(n) % 13).astype(np.float32) * np.float32(0.25)
        hy = (np.arange(n) % 7).astype(np.float32) - np.float32(3)
        x, y = skein.Array.from_host(queue, hx), skein.Array.from_host(queue, hy)
        z = skein.Array.empty(queue, n, np.float32)
        calls = {"elementwise": lambda: kernel(queue, a, x, y, z),
                 "sum": lambda: skein.sum(queue, x)}
        if cp is not None:
            cx, cy = cp.asarray(hx), cp.asarray(hy)
            cz = cp.empty_like(cx)
            stream = cp.cuda.get_current_stream()
            cp_calls = {"elementwise": lambda: cp_kernel(a, cx, cy, cz), "sum": lambda: cx.sum()}
        if cpp:
            cpp.ask(f"size {nbytes}")
        # Warm-up, a whole batch of each (compile, plans, pools, and the host's caches and clocks:
        # with 10 calls, the first size's Python and CuPy rows came out 1.5 us slower than the next
        # sizes' on the H200 machine, C++'s not).
        for name in calls:
            timed(calls[name], args.batch, queue.synchronize)
            if cp is not None:
                timed(cp_calls[name], args.batch, stream.synchronize)
            if cpp:
                cpp.ask(f"batch {VARIANTS[name]}")
        times = {name: {"python": [], "cpp": [], "cupy": []} for name in calls}
        for _ in range(args.rounds):
            for name in calls:
                t = times[name]
                t["python"].append(timed(calls[name], args.batch, queue.synchronize))
                if cpp:
                    t["cpp"].append(float(cpp.ask(f"batch {VARIANTS[name]}")))
                if cp is not None:
                    t["cupy"].append(timed(cp_calls[name], args.batch, stream.synchronize))
        # The results, against NumPy.
        kernel(queue, a, x, y, z)
        want = a * hx + hy
        if not np.allclose(z.get(), want, rtol=1e-6):
            sys.exit(f"peer-python-calls: elementwise on {nbytes} bytes gave wrong values")
        if not np.isclose(skein.sum(queue, x).get()[0], hx.sum(dtype=np.float64), rtol=1e-5):
            sys.exit(f"peer-python-calls: sum on {nbytes} bytes gave a wrong value")
        if cpp and cpp.ask("check") != "ok":
            sys.exit(f"peer-python-calls: skein-bench-small's check failed on {nbytes} bytes")
        for name, t in times.items():
            row = {"bytes": nbytes, "call": name,
                   **{k: statistics.median(v) if v else None for k, v in t.items()}}
            row["python_minus_cpp_us"] = (statistics.median(
                [p_ - c_ for p_, c_ in zip(t["python"], t["cpp"])]) if t["cpp"] else None)
            row["python_over_cupy"] = (statistics.median(
                [p_ / c_ for p_, c_ in zip(t["python"], t["cupy"])]) if t["cupy"] else None)
            rows.append(row)

            def f(v, fmt):
                return format(v, fmt) if v is not None else "-".rjust(int(fmt.split(".")[0]))
            print(f"{nbytes:>9} {name:>12} {f(row['python'], '9.3f')} {f(row['cpp'], '9.3f')} "
                  f"{f(row['cupy'], '9.3f')} {f(row['python_minus_cpp_us'], '10.3f')} "
                  f"{f(row['python_over_cupy'], '8.3f')}")
        nbytes *= 4
    if cpp:
        cpp.close()
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"api": args.api, "device": context.devices[0].name,
                       "batch": args.batch, "rounds": args.rounds,
                       "cupy": cp.__version__ if cp else None, "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
