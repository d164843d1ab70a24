#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""skein-heat's 3-D weak scaling from its JSON summaries (tools/gpu-check.sh's heat3d step).

    tools/compare-heat3d.py DIR

Reads DIR/heat3d-weak-1.json (one GPU), DIR/heat3d-weak-ranks-<n>[-<PxQxR>].json (n GPUs, one per
rank; on the automatic process grid or the one named), DIR/heat3d-weak-1rank-<n>[-<PxQxR>].json (n
GPUs driven by one rank), every one the same block per GPU, and
DIR/heat3d-floor-<dtype>.json (one GPU, the stencil against its floor) where present. Prints, per
run: the GPUs, process grid, step time, the stencil's floor (the block's points read and written
once at the device copy bandwidth measured in that run, on its slowest GPU), floor / step, floor /
kernel, the halo time left exposed, the time steps per kernel launch (--steps-per-pass), and the
weak-scaling efficiency t_step(1 GPU) / t_step(n GPUs).

Judged (issue 35): every weak run on more than one GPU at an efficiency of at least 0.95 with its
halos overlapped, and every weak run at floor / step of at least 0.9; every run's own analytic
check passed; every weak run with the 1-GPU run's steps per launch. Prints PASS or FAIL for each and overall; exits 0 when all pass, 1 otherwise (also
when there is no 1-GPU run or no run on more GPUs).
"""
import json
import pathlib
import sys

MIN_EFFICIENCY = 0.95
MIN_FLOOR = 0.9


def load(path):
    return json.loads(path.read_text())


def row(name, s, efficiency):
    grid = "x".join(str(g) for g in s["process_grid"])
    eff = f"{efficiency:10.3f}" if efficiency is not None else f"{'-':>10}"
    return (f"{name:26} {s['devices']:4d} {grid:>7} {s['t_step_s'] * 1e3:10.3f} {s['floor_s'] * 1e3:9.3f} "
            f"{s['floor_ratio']:10.3f} {s['kernel_floor_ratio']:12.3f} {100 * s['halo_exposed_share']:8.1f} "
            f"{s.get('halo_exchange', '-'):>10} {s.get('steps_per_pass', 1):>5} {eff}")


def run_key(path, mode):
    """(GPUs, grid) of heat3d-weak-MODE-<n>[-<PxQxR>].json, the automatic grid ('') first."""
    n, _, grid = path.stem.removeprefix(f"heat3d-weak-{mode}-").partition("-")
    return (int(n), grid)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = pathlib.Path(sys.argv[1])
    base_path = d / "heat3d-weak-1.json"
    if not base_path.exists():
        print("compare-heat3d: FAIL: no 1-GPU run (heat3d-weak-1.json)", file=sys.stderr)
        return 1
    base = load(base_path)
    runs = [("weak-1", base)]
    for mode in ("ranks", "1rank"):
        found = sorted(d.glob(f"heat3d-weak-{mode}-*.json"), key=lambda p: run_key(p, mode))
        runs += [(p.stem.removeprefix("heat3d-"), load(p)) for p in found]
    print(f"{'run':26} {'GPUs':>4} {'grid':>7} {'t_step ms':>10} {'floor ms':>9} {'floor/step':>10} "
          f"{'floor/kernel':>12} {'exposed%':>8} {'halo':>10} {'steps':>5} {'efficiency':>10}")
    for path in sorted(d.glob("heat3d-floor-*.json")):
        print(row(path.stem.removeprefix("heat3d-"), load(path), None))
    failures = []
    block = (base.get("nx_per_device"), base.get("ny_per_device"), base.get("nz_per_device"))
    for name, s in runs:
        efficiency = base["t_step_s"] / s["t_step_s"]
        print(row(name, s, efficiency if s["devices"] > 1 else None))
        if not s["check"]["passed"]:
            failures.append(f"{name}: its analytic check failed")
        if (s.get("nx_per_device"), s.get("ny_per_device"), s.get("nz_per_device")) != block or not s.get("weak"):
            failures.append(f"{name}: not a weak run of the 1-GPU run's block {block}")
        if s.get("steps_per_pass", 1) != base.get("steps_per_pass", 1):
            failures.append(f"{name}: {s.get('steps_per_pass', 1)} steps per launch, the 1-GPU run "
                            f"{base.get('steps_per_pass', 1)}")
        if s["floor_ratio"] < MIN_FLOOR:
            failures.append(f"{name}: floor / step {s['floor_ratio']:.3f} < {MIN_FLOOR}")
        if s["devices"] > 1:
            if s.get("halo_exchange") != "overlapped":
                failures.append(f"{name}: halos {s.get('halo_exchange')}, not overlapped")
            if efficiency < MIN_EFFICIENCY:
                failures.append(f"{name}: efficiency {efficiency:.3f} < {MIN_EFFICIENCY}")
    if len(runs) < 2:
        failures.append("no run on more than one GPU")
    for f in failures:
        print(f"FAIL {f}")
    print(f"heat3d weak scaling (efficiency >= {MIN_EFFICIENCY}, floor / step >= {MIN_FLOOR}, halos overlapped): "
          f"{'PASS' if not failures else 'FAIL'}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
