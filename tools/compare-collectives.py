#!/usr/bin/env python3
"""Puts skein-bench-collectives' results next to its peers' and prints the ratios.

    tools/compare-collectives.py DIR

DIR holds the JSON files (--json) of one GPU run, named by tools/gpu-check.sh:
    skein-<coll>-<mode>.json   mode: 1pr (one GPU per rank) or 1rank (one rank, every GPU)
    torch-<coll>.json          PyTorch's torch.distributed over NCCL, same sizes, same run
    nccl-<coll>.json           NCCL called directly as nccl-tests does (skein-bench-nccl), same run
    nccl-<coll>-1rank.json     the same from one rank driving every GPU (skein-bench-nccl -g N)
The nccl-tests figures are those of shared/PEERS.md (measured on 4 x H200, NVLS off): the
lower end of each range, so a ratio >= 1 there means at least nccl-tests' worst reported figure.

For each collective and mode it prints, at the sizes both have, Skein's busbw (out of place and
in place) over the peers', and for all_reduce at 8 B the times and their differences: within
2 us of NCCL called directly in the same run, or of nccl-tests' figure where there is none.
"""

import json
import os
import sys

# PEERS.md, nccl-tests 2.19.6, mpirun -np 4, one GPU per rank, float, sum, 20 iterations:
# size -> busbw (GB/s), lower end of the range; and the small-message time (µs), upper end.
NCCL_TESTS = {
    "all_reduce": {2 << 20: 103, 16 << 20: 250, 128 << 20: 329, 1 << 30: 356},
    "all_gather": {2 << 20: 79, 16 << 20: 190, 128 << 20: 291, 1 << 30: 326},
    "broadcast": {2 << 20: 102, 16 << 20: 250, 128 << 20: 341, 1 << 30: 360},
    "reduce_scatter": {2 << 20: 82, 16 << 20: 201, 128 << 20: 292, 1 << 30: 327},
    "reduce": {2 << 20: 105, 16 << 20: 261, 128 << 20: 348, 1 << 30: 365},
}
NCCL_TESTS_SMALL_US = {"all_reduce": (8, 13), "broadcast": (8, 10), "reduce": (8, 9),
                       "all_gather": (64, 10), "reduce_scatter": (64, 10)}
# One process driving 4 GPUs (-g 4): all_reduce only.
NCCL_TESTS_1RANK = {"all_reduce": {1 << 30: 354}}
NCCL_TESTS_1RANK_SMALL_US = {"all_reduce": (8, 37)}
BOUND = 0.97          # busbw ratio required at 64 MiB and above
LATENCY_SLACK_US = 2  # all_reduce at 8 B: at most this much slower than the peer


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def rows_by_size(result):
    return {r["size"]: r for r in result["rows"]} if result else {}


def main(directory):
    failures = []
    found = 0
    for coll in NCCL_TESTS:
        torch = rows_by_size(load(os.path.join(directory, f"torch-{coll}.json")))
        # NCCL called directly in the same run: one GPU per rank, and one rank with every GPU
        # (skein-bench-nccl -g N, as nccl-tests' -g).
        directs = {"1pr": rows_by_size(load(os.path.join(directory, f"nccl-{coll}.json"))),
                   "1rank": rows_by_size(load(os.path.join(directory, f"nccl-{coll}-1rank.json")))}
        for mode in ("1pr", "1rank"):
            skein_result = load(os.path.join(directory, f"skein-{coll}-{mode}.json"))
            if not skein_result:
                continue
            found += 1
            direct = directs[mode]
            skein = rows_by_size(skein_result)
            ref = NCCL_TESTS[coll] if mode == "1pr" else NCCL_TESTS_1RANK.get(coll, NCCL_TESTS[coll])
            print(f"\n## {coll}, {'one GPU per rank' if mode == '1pr' else 'one rank, every GPU'} "
                  f"({skein_result['members']} members, {skein_result['backend']})")
            print(f"{'size (B)':>12} {'skein oop':>10} {'skein ip':>10} {'nccl-tests':>10} "
                  f"{'ratio':>6} {'torch oop':>10} {'torch ip':>10} {'ratio oop':>9} {'ratio ip':>9}"
                  f" {'nccl oop':>9} {'nccl ip':>9} {'ratio oop':>9} {'ratio ip':>9}")
            for size in sorted(skein):
                if size < (1 << 20):
                    continue
                s = skein[size]
                so, si = s["out_of_place"]["busbw_GBps"], s["in_place"]["busbw_GBps"]
                nt = ref.get(size)
                t = torch.get(size)
                to = t["out_of_place"]["busbw_GBps"] if t else None
                ti = t["in_place"]["busbw_GBps"] if t else None
                r_nt = min(so, si) / nt if nt else None
                r_to = so / to if to else None
                r_ti = si / ti if ti else None
                d = direct.get(size)
                do = d["out_of_place"]["busbw_GBps"] if d else None
                di = d["in_place"]["busbw_GBps"] if d else None
                r_do = so / do if do else None
                r_di = si / di if di else None
                fmt = lambda v, w=10, p=1: f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"
                print(f"{size:>12} {fmt(so)} {fmt(si)} {fmt(nt)} {fmt(r_nt, 6, 3)} {fmt(to)} "
                      f"{fmt(ti)} {fmt(r_to, 9, 3)} {fmt(r_ti, 9, 3)} {fmt(do, 9)} {fmt(di, 9)} "
                      f"{fmt(r_do, 9, 3)} {fmt(r_di, 9, 3)}")
                if size >= (64 << 20):
                    for name, r in (("nccl-tests", r_nt), ("torch oop", r_to), ("torch ip", r_ti),
                                    ("nccl direct oop", r_do), ("nccl direct ip", r_di)):
                        if r is not None and r < BOUND:
                            failures.append(f"{coll} {mode} {size} B: {r:.3f} x {name}")
            small_size, small_ref = (NCCL_TESTS_SMALL_US if mode == "1pr"
                                     else NCCL_TESTS_1RANK_SMALL_US).get(coll, (None, None))
            if small_size in skein:
                s = skein[small_size]
                so, si = s["out_of_place"]["time_us"], s["in_place"]["time_us"]
                line = (f"{small_size} B time: skein {so:.2f} us (oop) / {si:.2f} us (ip); "
                        f"nccl-tests <= {small_ref} us")
                t = torch.get(small_size) if mode == "1pr" else None
                if t:
                    to, ti = t["out_of_place"]["time_us"], t["in_place"]["time_us"]
                    line += (f"; torch {to:.2f} / {ti:.2f} us: skein - torch = {so - to:+.2f} / "
                             f"{si - ti:+.2f} us")
                    if coll == "all_reduce" and min(so - to, si - ti) > LATENCY_SLACK_US:
                        failures.append(f"all_reduce 8 B: {so - to:+.2f} / {si - ti:+.2f} us vs torch")
                d = direct.get(small_size)
                if d:
                    do, di = d["out_of_place"]["time_us"], d["in_place"]["time_us"]
                    line += (f"; NCCL direct {do:.2f} / {di:.2f} us: skein - NCCL = {so - do:+.2f} / "
                             f"{si - di:+.2f} us")
                    if coll == "all_reduce" and min(so - do, si - di) > LATENCY_SLACK_US:
                        failures.append(f"all_reduce 8 B: {so - do:+.2f} / {si - di:+.2f} us vs NCCL direct")
                # nccl-tests' figure (another run, shared/PEERS.md) decides only where NCCL was
                # not called directly in this run: the host's speed moves from machine to machine.
                if coll == "all_reduce" and not d and min(so, si) - small_ref > LATENCY_SLACK_US:
                    failures.append(f"all_reduce {mode} 8 B: {min(so, si):.2f} us vs nccl-tests {small_ref} us")
                print(line)
    print()
    if not found:
        print(f"No skein-<coll>-<mode>.json in {directory}")
        return 1
    if failures:
        print("BELOW THE BOUNDS:\n  " + "\n  ".join(failures))
        return 1
    print(f"Every ratio at >= 64 MiB is >= {BOUND}, and all_reduce at 8 B is within "
          f"{LATENCY_SLACK_US} us of its peers.")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
