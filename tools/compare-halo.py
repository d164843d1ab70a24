#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judges skein-bench-halo's results against issue 35's bounds, printing PASS or FAIL per row.

    tools/compare-halo.py [options] FILE_OR_DIR...

Each argument is a JSON file written by skein-bench-halo --json, or a folder whose halo-*.json
files are read. For every row (one size):
  large faces   face_bytes >= --large-min (default 1 MiB): floor_us / exchange_us >= --ratio
                (default 0.9), the floor being the same transfers of the same bytes (a face that
                the exchange moves as whole ghost planes counted as those planes) moved by plain
                device copies and send/recv in the same run and rounds
  small faces   face_bytes <= --small-max (default 64 KiB), where the run has a send/recv
                reference: exchange_us - sendrecv_us <= --slack-us (default 2 us)
  other sizes   reported, not judged
The exit status is 1 when a row fails, a file cannot be read or lacks a field, or nothing at all
was judged; else 0. --format-only checks the files' fields and judges nothing (the PoCL smoke
test's use: figures from CPU devices mean nothing).
"""
import argparse
import glob
import json
import os
import sys

ROW_FIELDS = ("shape", "grid", "face_bytes", "exchange_us", "floor_us", "floor_over_exchange", "sendrecv_us",
              "exchange_minus_sendrecv_us")
DOC_FIELDS = ("ranks", "members", "devices_per_rank", "backend", "api", "fields", "halo", "stencil", "rows")


def files_of(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            out.extend(sorted(glob.glob(os.path.join(a, "halo-*.json"))))
        else:
            out.append(a)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+")
    p.add_argument("--large-min", type=int, default=1 << 20, help="bytes of a face from which the ratio is judged")
    p.add_argument("--small-max", type=int, default=64 << 10, help="bytes of a face up to which the slack is judged")
    p.add_argument("--ratio", type=float, default=0.9, help="floor / exchange at least this for large faces")
    p.add_argument("--slack-us", type=float, default=2.0, help="exchange - sendrecv at most this for small faces")
    p.add_argument("--format-only", action="store_true", help="check the files' fields, judge nothing")
    a = p.parse_args()

    files = files_of(a.paths)
    if not files:
        print("compare-halo: no halo-*.json files found")
        return 1
    failed = judged = 0
    for f in files:
        try:
            doc = json.load(open(f))
            missing = [k for k in DOC_FIELDS if k not in doc]
            missing += [f"rows[{i}].{k}" for i, r in enumerate(doc.get("rows", [])) for k in ROW_FIELDS if k not in r]
        except (OSError, ValueError) as e:
            print(f"FAIL {f}: cannot read it ({e})")
            failed += 1
            continue
        if missing or not doc["rows"]:
            print(f"FAIL {f}: {'missing ' + ', '.join(missing) if missing else 'no rows'}")
            failed += 1
            continue
        mode = "one rank" if doc["ranks"] == 1 and doc["members"] > 1 else f"{doc['ranks']} ranks"
        print(f"{os.path.basename(f)}: {doc['members']} members ({mode}, {doc['devices_per_rank']} per rank), "
              f"{doc['api']} / {doc['backend']}, {doc['fields']} field(s), halo {doc['halo']} {doc['stencil']}")
        if a.format_only:
            print(f"  {len(doc['rows'])} rows, fields complete (not judged: --format-only)")
            continue
        for r in doc["rows"]:
            face = r["face_bytes"]
            size = f"{'x'.join(map(str, r['shape'])):>16} grid {'x'.join(map(str, r['grid'])):>6} face {face / 1024:9.1f} KiB"
            figures = (f"exchange {r['exchange_us']:9.2f} us  floor {r['floor_us']:9.2f} us  "
                       f"sendrecv {r['sendrecv_us']:8.2f} us")
            if "plane_transfers_member0" in r:  # written by skein-bench-halo since whole planes
                figures += (f"  into member 0: {r['message_bytes_member0'] / 1024:.1f} KiB in "
                            f"{r['messages_member0']} transfer(s), {r['plane_transfers_member0']} of whole planes")
            verdicts = []
            if face >= a.large_min:
                ok = r["floor_over_exchange"] >= a.ratio
                verdicts.append(f"{'PASS' if ok else 'FAIL'} floor/exchange {r['floor_over_exchange']:.3f} "
                                f"(>= {a.ratio})")
                judged += 1
                failed += not ok
            if face <= a.small_max and r["sendrecv_us"] > 0:
                ok = r["exchange_minus_sendrecv_us"] <= a.slack_us
                verdicts.append(f"{'PASS' if ok else 'FAIL'} exchange - sendrecv "
                                f"{r['exchange_minus_sendrecv_us']:.2f} us (<= {a.slack_us})")
                judged += 1
                failed += not ok
            print(f"  {size}  {figures}  {'; '.join(verdicts) or 'not judged'}")
    if a.format_only:
        print(f"compare-halo: {len(files)} file(s), {'FAIL' if failed else 'PASS'} (format only)")
        return 1 if failed else 0
    if judged == 0:
        print("compare-halo: FAIL: no row was judged (no large or small faces)")
        return 1
    print(f"compare-halo: {judged} verdict(s), {failed} FAIL: {'FAIL' if failed else 'PASS'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
