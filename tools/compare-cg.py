#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judges tools/gpu-check.sh's `cg` step from its JSON files in OUTDIR:
  cg-8192-<form>-<round>.json   skein-cg, 8192 x 8192 float64 on one GPU (form fused, unfused,
                                pipelined), one file per round
  cg-8192-cupy-<round>.json     tools/peer-cg.py, the same CG in CuPy, in the same rounds
  cg-4096-1-<round>.json, cg-4096-N-ranks-<round>.json, cg-4096-N-one-rank-<round>.json
                                strong scaling at 4096 x 4096 float64, if present, one file per
                                alternating round
Prints per form the median time per iteration, floor / iteration (the 11 vector passes a CG
iteration needs at the device copy's bandwidth, measured by skein-cg in the same run) and the
median of the rounds' Skein / CuPy ratios (each round's Skein against that round's CuPy); then
the strong-scaling efficiencies t(1 GPU) / (N t(N GPUs)) from the medians of the rounds, with
each round's own efficiency. PASS or FAIL for the fused form: floor / iteration >= 0.9 and
Skein / CuPy <= 0.8; efficiencies (of the medians) >= 0.85.

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


def rounds_of(out, stem):
    """{round: seconds per iteration} of the files STEM-<round>.json."""
    runs = {}
    for path in glob.glob(os.path.join(out, f"{stem}-*.json")):
        m = re.search(re.escape(stem) + r"-(\d+)\.json$", path)
        if m:
            runs[m.group(1)] = load(path)["seconds_per_iteration"]
    return runs


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
    ones = rounds_of(out, "cg-4096-1")
    if ones:
        t1 = statistics.median(ones.values())
        modes = set()
        for path in glob.glob(os.path.join(out, "cg-4096-*-*-*.json")):
            m = re.search(r"cg-4096-(\d+)-(ranks|one-rank)-\d+\.json$", path)
            if m:
                modes.add((int(m.group(1)), m.group(2)))
        for n, mode in sorted(modes):
            runs = rounds_of(out, f"cg-4096-{n}-{mode}")
            tn = statistics.median(runs.values())
            eff = t1 / (n * tn)
            per_round = [ones[k] / (n * runs[k]) for k in sorted(runs, key=int) if k in ones]
            good = eff >= 0.85
            ok = ok and good
            print(f"cg 4096^2 float64 strong 1 -> {n} GPUs ({mode}): {t1 * 1e6:.1f} -> {tn * 1e6:.1f} us "
                  f"per iteration (medians of {len(ones)} and {len(runs)} rounds), efficiency {eff:.3f} "
                  f"(rounds {', '.join(f'{e:.3f}' for e in per_round)}): "
                  f"{'PASS' if good else 'FAIL'} (>= 0.85)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
