#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The ratios of the small-arrays step of one GPU run (tools/gpu-check.sh, group `small`), judged:

    tools/compare-small.py DIR

    small-<i>.json                 tools/peer-small-arrays.py --skein ...: Skein / CuPy host time per
                                   call, each run's ratio the median of its rounds' ratios
    small-kernels-pool-<i>.json    skein-bench-array-kernels (1 GiB float32 by default, device time) with the
                                   array pool (the default)
    small-kernels-nopool-<i>.json  the same with SKEIN_ARRAY_POOL=0: plain allocations, the path of
                                   every call before the pool
    small-kernels-base-<i>.json    the same program of another build (SMALL_BASE_BUILD_DIR, e.g. the
                                   tree before the pool), where there is one

The bounds (issue 34, "Results from a pool by default"): `auto s = skein::sum(queue, x)` and
`auto y = skein::astype(queue, x, Dtype::float64)` in a loop at most 0.5 x CuPy's host time per call
(x.sum(), x.astype(cupy.float64)) from 1 KiB to 1 MiB, for the program as a code starts it (the
`skein` label; the one with the context made current is printed beside); and large arrays
unchanged: the bandwidth of astype and sum, into given outputs and making their results, at least
0.98 of the same program's with the pool off (and of the base build's, where run), medians over
the runs. Prints each ratio with PASS or FAIL; exit status 1 when any fails, 2 when nothing was
found.
"""

import glob
import json
import os
import re
import statistics
import sys

SMALL_BOUND = 0.5
SMALL_JUDGED = ("sum_result", "astype")
SMALL_SIZES = (1 << 10, 1 << 20)  # judged from .. to, bytes
LARGE_BOUND = 0.98
LARGE_JUDGED = ("astype_f64", "sum", "astype_f64_result", "sum_result")
CUPY_CALL = {"elementwise": "ElementwiseKernel", "sum": "x.sum()", "astype": "x.astype(float64)",
             "empty": "cupy.empty"}
COLUMNS = [["axpy", "elementwise", "sum", "raw", "graph"],
           ["sum_result", "astype", "empty", "sum_result_nopool", "astype_nopool", "empty_nopool",
            "raw_alloc_async"]]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def runs(d, pattern):
    found = []
    for path in glob.glob(os.path.join(d, pattern)):
        m = re.search(r"-(\d+)\.json$", path)
        j = load(path)
        if m and j:
            found.append((int(m.group(1)), j))
    return [j for _, j in sorted(found, key=lambda p: p[0])]


def span(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main(d):
    lines, failures = [], []

    def judge(label, value, detail, bound, ok):
        lines.append(f"{label:<68} {value:7.3f}  {detail:<26} {bound:<8} {'PASS' if ok else 'FAIL'}")
        if not ok:
            failures.append(label)

    # --- host time per call against CuPy ---------------------------------------------------------
    small = runs(d, "small-[0-9]*.json")
    ratios = {}  # (label, variant, bytes) -> [each run's median ratio]
    labels, reference = [], {}
    for j in small:
        reference.update(j.get("reference", {}))
        for s in j["skein"]:
            if s["label"] not in labels:
                labels.append(s["label"])
            for r in s["rows"]:
                for key, value in r.items():
                    if key.endswith("_ratio"):
                        ratios.setdefault((s["label"], key[:-len("_ratio")], r["bytes"]), []).append(value)
    for label in labels:
        print(f"{label} / CuPy over {len(small)} run(s) (each run: the median of its rounds' ratios): "
              "median (lowest-highest). Against CuPy's "
              + ", ".join(f"{v}: {CUPY_CALL.get(reference.get(v, ''), reference.get(v, '?'))}"
                          for v in ("axpy", "sum", "sum_result", "astype", "empty")
                          if reference.get(v))
              + ". Raw launch / raw graph: bare cuLaunchKernel / cuGraphLaunch against CuPy's "
              "ElementwiseKernel, the floors of a call that launches a kernel; _nopool: the array "
              "pool off (plain allocations, as before the pool); raw_alloc_async: "
              "cuMemAllocAsync + cuMemFreeAsync against cupy.empty")
        present = {k[1] for k in ratios if k[0] == label}
        sizes = sorted({k[2] for k in ratios if k[0] == label})
        for cols in COLUMNS:
            cols = [v for v in cols if v in present]
            if not cols:
                continue
            print(f"{'bytes':>10}" + "".join(f" {v:>19}" for v in cols))
            for b in sizes:
                cells = [span(ratios[(label, v, b)]) if (label, v, b) in ratios else "-" for v in cols]
                print(f"{b:>10}" + "".join(f" {c:>19}" for c in cells))
    if small:
        judged_label = "skein" if "skein" in labels else (labels[0] if labels else None)
        lines.append(f"Judged: {judged_label} / CuPy, host time per call, the median over the runs "
                     f"(lowest-highest), bound <= {SMALL_BOUND}")
        for v in SMALL_JUDGED:
            for b in sorted({k[2] for k in ratios if k[0] == judged_label and k[1] == v}):
                if not SMALL_SIZES[0] <= b <= SMALL_SIZES[1]:
                    continue
                r = ratios[(judged_label, v, b)]
                m = statistics.median(r)
                judge(f"{v} / CuPy {CUPY_CALL.get(reference.get(v, ''), '')}, {b} B", m,
                      f"({min(r):.2f}-{max(r):.2f}, {len(r)} runs)", f"<= {SMALL_BOUND}",
                      m <= SMALL_BOUND)
    else:
        lines.append("no small-<i>.json (CuPy's script did not run): host-time ratios not judged")

    # --- large arrays: bandwidth with the pool against without it (and the base build) ----------
    def gbps(js):
        table = {}
        for j in js:
            for r in j.get("results", []):
                table.setdefault(r["op"], []).append(r["gbps"])
        return table

    pool_runs = runs(d, "small-kernels-pool-*.json")
    pool = gbps(pool_runs)
    mib = pool_runs[0].get("mib", "?") if pool_runs else "?"
    against = [("the pool off (SKEIN_ARRAY_POOL=0)", gbps(runs(d, "small-kernels-nopool-*.json"))),
               ("the base build", gbps(runs(d, "small-kernels-base-*.json")))]
    if pool:
        lines.append(f"Judged: large arrays (skein-bench-array-kernels, {mib} MiB float32, device time), "
                     f"GB/s with the pool against the same op, medians over the runs, bound >= "
                     f"{LARGE_BOUND}")
        for what, other in against:
            if not other:
                continue
            for op in LARGE_JUDGED:
                if op not in pool or op not in other:
                    continue
                mine, theirs = statistics.median(pool[op]), statistics.median(other[op])
                judge(f"{op} with the pool / {what}", mine / theirs,
                      f"({mine:.0f} / {theirs:.0f} GB/s)", f">= {LARGE_BOUND}",
                      mine >= LARGE_BOUND * theirs)
        lines.append("All ops, GB/s (medians): " + "; ".join(
            f"{op} {statistics.median(v):.0f}" for op, v in pool.items()))
    else:
        lines.append("no small-kernels-pool-<i>.json: large arrays not judged")

    print("\n".join(lines))
    if not small and not pool:
        print(f"no results in {d}")
        return 2
    if failures:
        print("FAIL: " + "; ".join(failures))
        return 1
    print("PASS: every judged ratio is within its bound.")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
