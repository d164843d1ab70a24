#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs `skein-bench scaling` and checks what it wrote (tests/apps/bench.cmake):

    bench_check_scaling.py --json FILE --svg FILE --configs 1x1,1x2,2x2 [--weak] -- COMMAND...
    bench_check_scaling.py --expect-failure TEXT -- COMMAND...

The first form needs COMMAND to succeed, and checks
  the JSON: exactly the configurations given (ranks x devices per rank, in that order), each with
            positive, finite times and figures, the global size the scaling asks for (the same
            for strong scaling, size x devices for weak axpy and sum), speed-up 1 on the first and
            speed-up = figure / first figure, efficiency = speed-up / devices;
  the SVG:  well-formed XML (xml.dom.minidom, and xmllint where installed), an <svg> root, one
            Skein point and one reference point per configuration, an ideal line and a legend.
The second form needs COMMAND to fail (non-zero exit) with TEXT in its output.
Exit 0: good; 1: a check failed; 77 (ctest: skipped): no XML parser (cannot happen with python3's
standard library, kept for symmetry with the other checks).
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys

try:
    import xml.dom.minidom as minidom
except ImportError:  # pragma: no cover
    minidom = None


def fail(message):
    print(f"bench_check_scaling: {message}")
    sys.exit(1)


def run(command, timeout=300):
    print("bench_check_scaling: running " + " ".join(command), flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=timeout)
    print(result.stdout)
    return result


def check_json(path, configs, weak):
    with open(path) as f:
        data = json.load(f)
    if data.get("mode") != "scaling":
        fail(f"{path}: mode is {data.get('mode')!r}, expected 'scaling'")
    if data.get("scaling") != ("weak" if weak else "strong"):
        fail(f"{path}: scaling is {data.get('scaling')!r}")
    got = data["configurations"]
    names = [f"{c['ranks']}x{c['devices_per_rank']}" for c in got]
    if names != configs:
        fail(f"{path}: configurations {names}, expected {configs}")
    base = got[0]
    for c in got:
        name = f"{c['ranks']}x{c['devices_per_rank']}"
        for key in ("time_s", "skein", "reference_time_s", "reference", "ratio", "speedup",
                    "efficiency", "reference_speedup"):
            value = c[key]
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                fail(f"{path}: {name}: {key} is {value!r}, expected a positive number")
        if c["devices"] != c["ranks"] * c["devices_per_rank"]:
            fail(f"{path}: {name}: devices {c['devices']}")
        if data["benchmark"] != "gemm":
            expected = data["size"] * c["devices"] if weak else data["size"]
            if c["size"] != expected:
                fail(f"{path}: {name}: size {c['size']}, expected {expected}")
        elif not weak and c["size"] != data["size"]:
            fail(f"{path}: {name}: size {c['size']}, expected {data['size']}")
        if not math.isclose(c["speedup"], c["skein"] / base["skein"], rel_tol=1e-9):
            fail(f"{path}: {name}: speedup {c['speedup']} is not the figure over the first's")
        if not math.isclose(c["efficiency"], c["speedup"] / c["devices"], rel_tol=1e-9):
            fail(f"{path}: {name}: efficiency {c['efficiency']}")
        if not math.isclose(c["ratio"], c["skein"] / c["reference"], rel_tol=1e-9):
            fail(f"{path}: {name}: ratio {c['ratio']}")
    if not math.isclose(base["speedup"], 1.0):
        fail(f"{path}: the first configuration's speed-up is {base['speedup']}")
    print(f"bench_check_scaling: {path}: {len(got)} configurations, good")


def check_svg(path, count):
    if shutil.which("xmllint"):
        result = subprocess.run(["xmllint", "--noout", path], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        if result.returncode != 0:
            fail(f"{path}: xmllint: {result.stdout}")
    if minidom is None:
        print("bench_check_scaling: skipped: no XML parser")
        sys.exit(77)
    try:
        doc = minidom.parse(path)
    except Exception as e:  # the parser's own exception types vary
        fail(f"{path}: not well-formed XML: {e}")
    root = doc.documentElement
    if root.tagName != "svg" or root.getAttribute("xmlns") != "http://www.w3.org/2000/svg":
        fail(f"{path}: the root is <{root.tagName}>, expected an SVG <svg>")

    def classes(element):
        return element.getAttribute("class").split()

    circles = root.getElementsByTagName("circle")
    for series in ("skein", "reference"):
        points = [c for c in circles if "point" in classes(c) and series in classes(c)]
        if len(points) != count:
            fail(f"{path}: {len(points)} {series} points, expected {count} (one per configuration)")
        for p in points:
            if not p.getElementsByTagName("title"):
                fail(f"{path}: a {series} point has no <title>")
    groups = {" ".join(classes(g)) for g in root.getElementsByTagName("g")}
    for needed in ("series ideal", "axes", "legend", "ticks"):
        if needed not in groups:
            fail(f"{path}: no <g class=\"{needed}\">")
    print(f"bench_check_scaling: {path}: well-formed SVG, {count} points per series, good")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json")
    parser.add_argument("--svg")
    parser.add_argument("--configs", help="e.g. 1x1,1x2,2x2")
    parser.add_argument("--weak", action="store_true")
    parser.add_argument("--expect-failure", metavar="TEXT")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()

    if args.expect_failure is not None:
        result = run(args.command)
        if result.returncode == 0:
            fail("the command succeeded, expected it to fail")
        if args.expect_failure not in result.stdout:
            fail(f"the output does not say {args.expect_failure!r}")
        print(f"bench_check_scaling: failed as expected (exit {result.returncode}), good")
        return 0

    if not (args.json and args.svg and args.configs):
        parser.error("--json, --svg and --configs are needed unless --expect-failure is given")
    for path in (args.json, args.svg):
        if os.path.exists(path):
            os.remove(path)
    result = run(args.command)
    if result.returncode != 0:
        fail(f"the command failed with exit code {result.returncode}")
    configs = args.configs.split(",")
    check_json(args.json, configs, args.weak)
    check_svg(args.svg, len(configs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
