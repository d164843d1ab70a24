#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""skein-heat's weak scaling from its JSON summaries (tools/gpu-check.sh's apps step).

    tools/compare-heat.py DIR     reads DIR/heat-weak-<n>.json (n GPUs, the same rows per GPU)

Prints, per run: the step time, the stencil's floor (the block read and written once at the
device copy bandwidth measured in that run), their ratio, the halo exchange's share of a step,
and the weak-scaling efficiency t_step(1 GPU) / t_step(n GPUs). Exits 1 when there is no 1-GPU run.
"""
import json
import pathlib
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    runs = {}
    for path in sorted(pathlib.Path(sys.argv[1]).glob("heat-weak-*.json")):
        summary = json.loads(path.read_text())
        runs[summary["devices"]] = summary
    if 1 not in runs:
        print("compare-heat: no 1-GPU run (heat-weak-1.json)", file=sys.stderr)
        return 1
    base = runs[1]["t_step_s"]
    print(f"{'GPUs':>4} {'grid':>14} {'t_step ms':>10} {'floor ms':>9} {'floor/step':>10} "
          f"{'halo':>6} {'copy GB/s':>9} {'efficiency':>10}")
    for n, s in sorted(runs.items()):
        grid = f"{s['nx']}x{s['ny']}"
        print(f"{n:4d} {grid:>14} {s['t_step_s'] * 1e3:10.3f} {s['floor_s'] * 1e3:9.3f} "
              f"{s['floor_ratio']:10.3f} {s['halo_share']:6.3f} {s['copy_GBps']:9.1f} "
              f"{base / s['t_step_s']:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
