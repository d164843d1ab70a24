#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judges tools/gpu-check.sh's `cg` step from its JSON files in OUTDIR:
  cg-8192-<form>-<round>.json   skein-cg, 8192 x 8192 float64 on one GPU (form fused, unfused,
                                pipelined), one file per round
  cg-8192-cupy-<round>.json     tools/peer-cg.py, the same CG in CuPy, in the same rounds
  cg-4096-1.json, cg-4096-N-ranks.json, cg-4096-N-one-rank.json   strong scaling, if present
Prints per form the median time per iteration, floor / iteration (the 11 vector passes a CG
iteration needs at the device copy's bandwidth, measured by skein-cg in the same run) and the
median of the rounds' Skein / CuPy ratios (each round's Skein against that round's CuPy); then
the strong-scaling efficiencies t(1 GPU) / (N t(N GPUs)). PASS or FAIL for the fused form:
floor / iteration >= 0.9 and Skein / CuPy <= 0.8; efficiencies >= 0.85.

  python3 tools/compare-cg.py OUTDIR
"""
import glob
import json
import os
import re
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    out = sys.argv[1]
    ok = True
    cupy = {}
    for path in glob.glob(os.path.join(out, "cg-8192-cupy-*.json")):
        cupy[re.search(r"-(\d+)\.json$", path).group(1)] = load(path)["seconds_per_iteration"]
    for form in ("fused", "unfused", "pipelined"):
        runs = {}
        for path in glob.glob(os.path.join(out, f"cg-8192-{form}-*.json")):
            runs[re.search(r"-(\d+)\.json$", path).group(1)] = load(path)
        if not runs:
            continue
        times = [r["seconds_per_iteration"] for r in runs.values()]
        floors = [r["floor_ratio"] for r in runs.values()]
        ratios = [runs[k]["seconds_per_iteration"] / cupy[k] for k in runs if k in cupy]
        passes = next(iter(runs.values()))["passes_per_iteration"]
        line = (f"cg 8192^2 float64 {form:9} ({passes} passes): {statistics.median(times) * 1e3:.3f} ms per iteration, "
                f"floor / iteration {statistics.median(floors):.3f} (rounds {', '.join(f'{f:.3f}' for f in floors)})")
        if ratios:
            line += f", Skein / CuPy {statistics.median(ratios):.3f} (rounds {', '.join(f'{r:.3f}' for r in ratios)})"
        if form == "fused":
            good = statistics.median(floors) >= 0.9 and (not ratios or statistics.median(ratios) <= 0.8)
            line += ": " + ("PASS" if good else "FAIL") + " (floor >= 0.9, Skein / CuPy <= 0.8)"
            ok = ok and good and bool(ratios)
        print(line)
    if cupy:
        print(f"cupy: {statistics.median(cupy.values()) * 1e3:.3f} ms per iteration (rounds "
              f"{', '.join(f'{v * 1e3:.3f}' for v in cupy.values())})")
    one = os.path.join(out, "cg-4096-1.json")
    if os.path.exists(one):
        t1 = load(one)["seconds_per_iteration"]
        for path in sorted(glob.glob(os.path.join(out, "cg-4096-*-*.json"))):
            m = re.search(r"cg-4096-(\d+)-(ranks|one-rank)\.json$", path)
            if not m:
                continue
            n = int(m.group(1))
            r = load(path)
            eff = t1 / (n * r["seconds_per_iteration"])
            good = eff >= 0.85
            ok = ok and good
            print(f"cg 4096^2 float64 strong 1 -> {n} GPUs ({m.group(2)}): {t1 * 1e3:.3f} -> "
                  f"{r['seconds_per_iteration'] * 1e3:.3f} ms per iteration, efficiency {eff:.3f}: "
                  f"{'PASS' if good else 'FAIL'} (>= 0.85)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
