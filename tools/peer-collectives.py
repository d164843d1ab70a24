#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The peer of skein-bench-collectives: PyTorch's torch.distributed collectives over NCCL, with
the same options, sizes, input values, checks and table (nccl-tests' format), so that a GPU run
can put the two side by side.

    torchrun --nproc_per_node 4 tools/peer-collectives.py --coll all_reduce -b 8 -e 1G -f 2

Only the GPU machine runs it (it needs CUDA, NCCL and PyTorch). One GPU per process, the
process's LOCAL_RANK. The collective is --coll, -o/--op the reduction, as in
skein-bench-collectives.

torch.distributed's all_reduce, broadcast and reduce only work in place; for them both columns
run in place (on separate tensors), and the header says so. all_gather and reduce_scatter have
both forms (all_gather_into_tensor / reduce_scatter_tensor, in place when the small tensor is the
rank's block of the large one, which is NCCL's in-place form).
"""

import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

# name -> (has a reduction, has a root, moves n blocks, nccl-tests' bus bandwidth factor)
COLLS = {
    "all_reduce": (True, False, False, lambda n: 2 * (n - 1) / n),
    "all_gather": (False, False, True, lambda n: (n - 1) / n),
    "broadcast": (False, True, False, lambda n: 1.0),
    "reduce": (True, True, False, lambda n: 1.0),
    "reduce_scatter": (True, False, True, lambda n: (n - 1) / n),
}

# nccl-tests' type names (and Skein's) -> (torch dtype, the name the table prints)
TYPES = {
    "int8": (torch.int8, "int8"),
    "uint8": (torch.uint8, "uint8"),
    "int32": (torch.int32, "int32"),
    "uint32": (getattr(torch, "uint32", None), "uint32"),
    "int64": (torch.int64, "int64"),
    "uint64": (getattr(torch, "uint64", None), "uint64"),
    "half": (torch.float16, "half"),
    "float16": (torch.float16, "half"),
    "float": (torch.float32, "float"),
    "float32": (torch.float32, "float"),
    "double": (torch.float64, "double"),
    "float64": (torch.float64, "double"),
    "bfloat16": (torch.bfloat16, "bfloat16"),
}

OPS = {
    "sum": dist.ReduceOp.SUM,
    "prod": dist.ReduceOp.PRODUCT,
    "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX,
    "avg": dist.ReduceOp.AVG,
}


def parse_size(text):
    """'8', '64K', '1M', '1G': nccl-tests' sizes (binary multiples)."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if text and text[-1].lower() in scale:
        return int(float(text[:-1]) * scale[text[-1].lower()])
    return int(float(text))


# --- the same values as skein-bench-collectives: every result is exact --------------------------


def input_values(op, member, n, count, device):
    j = torch.arange(count, device=device, dtype=torch.int64)
    if op == "prod":
        # One member contributes a 2 to each element, the rest 1: no product overflows.
        return torch.where((member + j) % n == 0, 2.0, 1.0).to(torch.float64)
    return ((member * 7 + j * 3) % 5).to(torch.float64)


def expected_reduction(op, n, count, device, is_integer):
    acc = input_values(op, 0, n, count, device)
    for r in range(1, n):
        v = input_values(op, r, n, count, device)
        if op in ("sum", "avg"):
            acc = acc + v
        elif op == "prod":
            acc = acc * v
        elif op == "min":
            acc = torch.minimum(acc, v)
        else:
            acc = torch.maximum(acc, v)
    if op == "avg":
        acc = acc / n
        if is_integer:
            acc = torch.floor(acc)  # the integer average truncates
    return acc


def count_wrong(got, want, dtype, op):
    got = got.to(torch.float64)
    if op != "avg" or not dtype.is_floating_point:
        return int((got != want).sum().item())
    # NCCL multiplies by 1/n before summing: a few units in the last place.
    tol = {torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float32: 1e-6}.get(dtype, 1e-14)
    return int(((got - want).abs() > tol * torch.clamp(want.abs(), min=1.0)).sum().item())


# --- the harness --------------------------------------------------------------------------------


class Bench:
    def __init__(self, args, rank, n, device):
        self.a, self.rank, self.n, self.device = args, rank, n, device
        self.dtype = TYPES[args.datatype][0]
        self.has_op, self.has_root, self.blocks, self.bus_factor = COLLS[args.coll]
        self.op = OPS[args.op]

    def count_for(self, nbytes):
        item = torch.tensor([], dtype=self.dtype).element_size()
        return nbytes // (item * (self.n if self.blocks else 1))

    def size_bytes(self, count):
        item = torch.tensor([], dtype=self.dtype).element_size()
        return count * (self.n if self.blocks else 1) * item

    def setup(self, count, in_place):
        """Makes the tensors and the function that runs the collective once on them."""
        a, n, r, dev, dt = self.a, self.n, self.rank, self.device, self.dtype
        coll = a.coll
        if coll == "all_reduce":
            t = torch.empty(count, dtype=dt, device=dev)
            self.inputs = [(t, input_values(a.op, r, n, count, dev))]
            self.output = t
            return lambda: dist.all_reduce(t, op=self.op)
        if coll == "broadcast":
            t = torch.empty(count, dtype=dt, device=dev)
            v = input_values(a.op, r, n, count, dev) if r == a.root else torch.full((count,), 9.0, dtype=torch.float64, device=dev)
            self.inputs = [(t, v)]
            self.output = t
            return lambda: dist.broadcast(t, src=a.root)
        if coll == "reduce":
            t = torch.empty(count, dtype=dt, device=dev)
            self.inputs = [(t, input_values(a.op, r, n, count, dev))]
            self.output = t
            return lambda: dist.reduce(t, dst=a.root, op=self.op)
        if coll == "all_gather":
            big = torch.empty(n * count, dtype=dt, device=dev)
            send = big[r * count:(r + 1) * count] if in_place else torch.empty(count, dtype=dt, device=dev)
            self.inputs = [(big, torch.zeros(n * count, dtype=torch.float64, device=dev)),
                           (send, input_values(a.op, r, n, count, dev))]
            self.output = big
            return lambda: dist.all_gather_into_tensor(big, send)
        # reduce_scatter
        big = torch.empty(n * count, dtype=dt, device=dev)
        recv = big[r * count:(r + 1) * count] if in_place else torch.empty(count, dtype=dt, device=dev)
        self.inputs = [(big, input_values(a.op, r, n, n * count, dev))]
        self.output = recv
        return lambda: dist.reduce_scatter_tensor(recv, big, op=self.op)

    def fill(self):
        for tensor, values in self.inputs:
            tensor.copy_(values.to(self.dtype))
        torch.cuda.synchronize()

    def wrong(self, count):
        a, n, r, dev = self.a, self.n, self.rank, self.device
        is_int = not self.dtype.is_floating_point
        if a.coll == "all_reduce" or (a.coll == "reduce" and r == a.root):
            want = expected_reduction(a.op, n, count, dev, is_int)
        elif a.coll == "reduce":
            return 0  # only the root's result is defined
        elif a.coll == "broadcast":
            want = input_values(a.op, a.root, n, count, dev)
        elif a.coll == "all_gather":
            want = torch.cat([input_values(a.op, m, n, count, dev) for m in range(n)])
        else:
            want = expected_reduction(a.op, n, n * count, dev, is_int)[r * count:(r + 1) * count]
        return count_wrong(self.output, want, self.dtype, a.op)

    def measure(self, count, in_place):
        a = self.a
        run = self.setup(count, in_place)
        self.fill()
        for _ in range(a.warmup_iters):
            run()
        torch.cuda.synchronize()
        # Timed from the same moment on every rank; the host clock around the iterations with one
        # final synchronisation, as nccl-tests (and skein-bench-collectives) do, averaged over
        # the ranks.
        dist.barrier(device_ids=[self.device.index])
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(a.iters):
            run()
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / max(a.iters, 1)
        t = torch.tensor([seconds], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        seconds = t.item() / self.n
        algbw = self.size_bytes(count) / seconds / 1e9 if seconds > 0 else 0.0
        result = {"time_us": seconds * 1e6, "algbw_GBps": algbw,
                  "busbw_GBps": algbw * self.bus_factor(self.n), "wrong": None}
        if a.check:
            self.fill()
            run()
            torch.cuda.synchronize()
            w = torch.tensor([self.wrong(count)], dtype=torch.int64, device=self.device)
            dist.all_reduce(w)
            result["wrong"] = int(w.item())
        return result


def format_time(us):
    if us >= 10000.0:
        return "%7.0f" % us
    if us >= 100.0:
        return "%7.1f" % us
    return "%7.2f" % us


def format_column(m):
    wrong = "  N/A" if m["wrong"] is None else "%5d" % m["wrong"]
    return "  %s  %6.2f  %6.2f  %s" % (format_time(m["time_us"]), m["algbw_GBps"], m["busbw_GBps"], wrong)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coll", default="all_reduce", choices=sorted(COLLS))
    p.add_argument("-b", "--minbytes", default="32M")
    p.add_argument("-e", "--maxbytes", default="32M")
    p.add_argument("-f", "--stepfactor", type=float, default=2.0)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1, choices=[0, 1])
    p.add_argument("-d", "--datatype", default="float", choices=sorted(TYPES))
    p.add_argument("-o", "--op", default="sum", choices=sorted(OPS))
    p.add_argument("-r", "--root", type=int, default=0)
    p.add_argument("--json", default="", help="also write every row to this JSON file (rank 0)")
    a = p.parse_args()
    if TYPES[a.datatype][0] is None:
        p.error(f"this PyTorch has no {a.datatype}")
    if a.stepfactor <= 1:
        p.error("--stepfactor must be > 1")

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    try:
        # Binds the process group to the device at once (PyTorch 2.3+): NCCL's communicator is
        # created eagerly, not inside the first timed call.
        dist.init_process_group("nccl", device_id=device)
    except TypeError:
        dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    printer = rank == 0
    if not 0 <= a.root < n:
        if printer:
            print(f"peer-collectives: root {a.root} is not a rank (0..{n - 1})", file=sys.stderr)
        dist.destroy_process_group()
        return 2

    min_bytes, max_bytes = parse_size(a.minbytes), parse_size(a.maxbytes)
    nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    props = torch.cuda.get_device_properties(device)
    bus = ("%04x:%02x:%02x" % (props.pci_domain_id, props.pci_bus_id, props.pci_device_id)
           if hasattr(props, "pci_bus_id") else "")
    info = (socket.gethostname(), os.getpid(), torch.cuda.get_device_name(device), bus)
    everyone = [None] * n
    dist.all_gather_object(everyone, info)
    has_op, has_root, _, _ = COLLS[a.coll]
    redop = a.op if has_op else "none"
    root = a.root if has_root else -1
    type_name = TYPES[a.datatype][1]
    if printer:
        print(f"# peer-collectives (PyTorch {torch.__version__}, torch.distributed): {a.coll} over "
              f"NCCL {nccl}, {n} rank(s)")
        print(f"# nThread 1 nGpus 1 minBytes {min_bytes} maxBytes {max_bytes} step: "
              f"{a.stepfactor:g}(factor) warmup iters: {a.warmup_iters} iters: {a.iters} "
              f"agg iters: 1 validation: {a.check} graph: 0")
        if a.coll in ("all_reduce", "broadcast", "reduce"):
            print(f"# torch.distributed's {a.coll} works in place: both columns run in place")
        print("#\n# Using devices")
        for r, (host, pid, name, bus) in enumerate(everyone):
            print("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s" % (r, pid, host, 0, bus, name))
        print("#")
        print("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
              % ("", "", "", "", ""))
        print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s"
              % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                 "time", "algbw", "busbw", "#wrong"))
        print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s"
              % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                 "(GB/s)", ""), flush=True)

    bench = Bench(a, rank, n, device)
    rows, wrong_total, busbw = [], 0, []
    nbytes, last_count = float(min_bytes), 0
    while nbytes <= max_bytes:
        count = bench.count_for(int(nbytes))
        nbytes = max(nbytes * a.stepfactor, nbytes + 1)
        if count == 0 or count == last_count:
            continue
        last_count = count
        out = bench.measure(count, False)
        inp = bench.measure(count, True)
        for m in (out, inp):
            wrong_total += m["wrong"] or 0
            busbw.append(m["busbw_GBps"])
        if printer:
            print("%12d  %12d  %8s  %6s  %6d%s%s" % (bench.size_bytes(count), count, type_name, redop,
                                                    root, format_column(out), format_column(inp)),
                  flush=True)
        rows.append({"size": bench.size_bytes(count), "count": count, "type": type_name,
                     "redop": redop, "root": root, "out_of_place": out, "in_place": inp})
    avg = sum(busbw) / len(busbw) if busbw else 0.0
    if printer:
        print("# Out of bounds values : %d %s" % (wrong_total, "FAILED" if wrong_total else "OK"))
        print("# Avg bus bandwidth    : %g\n#" % avg, flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"tool": "peer-collectives", "torch_version": torch.__version__,
                           "collective": a.coll, "backend": f"NCCL {nccl}", "ranks": n,
                           "members": n, "iters": a.iters, "warmup_iters": a.warmup_iters,
                           "check": a.check, "rows": rows, "out_of_bounds": wrong_total,
                           "avg_busbw_GBps": avg}, f, indent=2)
    dist.destroy_process_group()
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
