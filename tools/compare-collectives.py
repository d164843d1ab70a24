#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
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
Where DIR also holds latency-<skein|nccl>-<mode>-<round>.json (gpu-check.sh's alternating rounds
of 2000 calls of the 8-byte all_reduce), those decide the 8-byte line instead of the sweep's 20
calls: the median over the rounds of Skein's time against NCCL's, out of place and in place.
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


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


# The 8-byte all_reduce against nccl-tests' all_reduce_perf in the same run (issue 34): within
# this much, medians of the rounds, out of place and in place.
NCCLT_SLACK_US = {"1pr": 1.0, "1rank": 2.0}


def nccl_tests_row(path, size=8):
    """nccl-tests' out-of-place and in-place times (us) at `size` from its printed table."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#") or fields[0] != str(size):
                continue
            try:
                return float(fields[5]), float(fields[9])
            except (IndexError, ValueError):
                return None
    return None


def latency_rounds(directory, failures):
    """The 8-byte all_reduce in alternating rounds: latency-<who>-<mode>[-g<N>]-<round>.json (who:
    skein, nccl called directly) and latency-ncclt-<mode>-g<N>-<round>.txt (nccl-tests). Each
    round's times, and the medians over the rounds, out of place and in place: Skein against
    nccl-tests within NCCLT_SLACK_US where nccl-tests ran, else against NCCL called directly
    within LATENCY_SLACK_US. Returns the number of modes found."""
    found = 0
    tags = set()
    for name in os.listdir(directory) if os.path.isdir(directory) else []:
        if name.startswith("latency-skein-") and name.endswith(".json"):
            parts = name[len("latency-skein-"):-len(".json")].split("-")
            tags.add("-".join(parts[:-1]))  # "1pr-g4", or "1pr" (runs before the GPU counts)
    for tag in sorted(tags, key=lambda t: (t.split("-")[0], t)):
        mode = tag.split("-")[0]
        rounds = []
        iters = "?"
        r = 1
        while True:
            sk = load(os.path.join(directory, f"latency-skein-{tag}-{r}.json"))
            nc = load(os.path.join(directory, f"latency-nccl-{tag}-{r}.json"))
            nt = nccl_tests_row(os.path.join(directory, f"latency-ncclt-{tag}-{r}.txt"))
            if not sk and not nc:
                break
            if sk and 8 in rows_by_size(sk):
                s8 = rows_by_size(sk)[8]
                n8 = rows_by_size(nc).get(8) if nc else None
                iters = sk.get("iters", iters)
                rounds.append((r, s8["out_of_place"]["time_us"], s8["in_place"]["time_us"],
                               n8["out_of_place"]["time_us"] if n8 else None,
                               n8["in_place"]["time_us"] if n8 else None,
                               nt[0] if nt else None, nt[1] if nt else None))
            r += 1
        if not rounds:
            continue
        found += 1
        gpus = tag.split("-g")[1] if "-g" in tag else "?"
        print(f"\n## all_reduce 8 B latency, {'one GPU per rank' if mode == '1pr' else 'one rank, every GPU'}, "
              f"{gpus} GPUs ({len(rounds)} alternating rounds of {iters} calls; us)")
        print(f"{'round':>6} {'skein oop':>10} {'skein ip':>10} {'nccl oop':>10} {'nccl ip':>10} "
              f"{'ncclt oop':>10} {'ncclt ip':>10}")
        fmt = lambda v: f"{v:>10.2f}" if v is not None else f"{'-':>10}"
        for x in rounds:
            print(f"{x[0]:>6} " + " ".join(fmt(v) for v in x[1:]))
        med = [median([x[i] for x in rounds if x[i] is not None]) if any(x[i] is not None for x in rounds)
               else None for i in range(1, 7)]
        print(f"{'median':>6} " + " ".join(fmt(v) for v in med))
        mso, msi, mno, mni, mto, mti = med
        if mno is not None:
            print(f"  Skein - NCCL called directly: {mso - mno:+.2f} / {msi - mni:+.2f} us")
        if mto is not None:
            slack = NCCLT_SLACK_US[mode]
            print(f"  Skein - nccl-tests: {mso - mto:+.2f} / {msi - mti:+.2f} us (bound {slack} us)")
            if max(mso - mto, msi - mti) > slack:
                failures.append(f"all_reduce {tag} 8 B, medians of {len(rounds)} rounds: "
                                f"{mso - mto:+.2f} / {msi - mti:+.2f} us vs nccl-tests (bound {slack} us)")
        elif mno is not None and max(mso - mno, msi - mni) > LATENCY_SLACK_US:
            failures.append(f"all_reduce {tag} 8 B, medians of {len(rounds)} rounds: "
                            f"{mso - mno:+.2f} / {msi - mni:+.2f} us vs NCCL direct")
    return found


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
                    # Where the latency rounds ran, they decide (latency_rounds); the sweep's 20
                    # calls are shown.
                    rounds_ran = any(n.startswith(f"latency-skein-{mode}-")
                                     for n in os.listdir(directory))
                    if coll == "all_reduce" and not rounds_ran and min(so - do, si - di) > LATENCY_SLACK_US:
                        failures.append(f"all_reduce 8 B: {so - do:+.2f} / {si - di:+.2f} us vs NCCL direct")
                # nccl-tests' figure (another run, shared/PEERS.md) decides only where NCCL was
                # not called directly in this run: the host's speed moves from machine to machine.
                if coll == "all_reduce" and not d and min(so, si) - small_ref > LATENCY_SLACK_US:
                    failures.append(f"all_reduce {mode} 8 B: {min(so, si):.2f} us vs nccl-tests {small_ref} us")
                print(line)
    found += latency_rounds(directory, failures)
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
