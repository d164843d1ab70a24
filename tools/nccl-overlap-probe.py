#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Does an 8-byte combine between two GPUs run alongside a memory-bound kernel on another queue?

Run on a GPU machine under mpirun, one rank per GPU (two ranks):

    NCCL_NVLS_ENABLE=0 mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE \
        -x NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2 python3 tools/nccl-overlap-probe.py

Each timed iteration is a CG-like step on 8 Mi float64 per GPU: `r -= a w` with `r . r` over a third
of the vector (atomics), the 8-byte combine of `r . r`, and `x = x + a p` over the whole vector,
launched with one of six grids (as many 256-item groups as fit at once, `full`; the groups of two
multiprocessors fewer, `spare2`; one or two groups fewer per multiprocessor, `minus1`/`minus2`;
half of them, `half`; N / 1024 groups, each item taking 4 elements, `nonpers`: groups that end
throughout the launch, as LaunchGroups::per_chunk).
The combine is NCCL's all_reduce (called through ctypes, on a queue of the highest priority) or
`flag`: each GPU writes its value into the other's slot over CUDA IPC memory and raises a flag,
then spins on its own flags (one 32-thread group). Modes: `kern` (no combine), `serial` (the
combine on the kernels' queue), `overlap` (on the second queue, the update's queue waiting for it
at the end), `comb` (no update of x). Rank 0 prints the medians of 3 alternating rounds, microseconds
per iteration (200 iterations after 20 of warm-up, the slower rank's time). CuPy, mpi4py and NCCL's
library are needed; the figures of 2026-11-30 are in docs/performance.md.
"""
import ctypes, os, sys, time, statistics as st
from mpi4py import MPI
import numpy as np, cupy as cp
comm = MPI.COMM_WORLD; rank = comm.rank; size = comm.size
local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
cp.cuda.Device(local).use()
dev = cp.cuda.Device(local)
sms = dev.attributes["MultiProcessorCount"]
nccl = ctypes.CDLL(os.environ.get("NCCL_LIB", "libnccl.so.2"))
class UID(ctypes.Structure): _fields_ = [("internal", ctypes.c_char * 128)]
uid = UID()
if rank == 0: assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
raw = comm.bcast(ctypes.string_at(ctypes.addressof(uid), 128) if rank == 0 else None, root=0)
uid = UID(); ctypes.memmove(ctypes.byref(uid), raw, 128)
ncomm = ctypes.c_void_p()
rc = nccl.ncclCommInitRank(ctypes.byref(ncomm), size, uid, rank); assert rc == 0, rc
nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]

N = 4096 * 2048
x = cp.random.rand(N); p = cp.random.rand(N); w = cp.random.rand(N); r = cp.random.rand(N)
src = r'''
extern "C" __global__ void axpy(double* out, const double* x, const double* p, double a, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    out[i] = x[i] + a * p[i];
}
extern "C" __global__ void upd_r(double* r, const double* w, double a, double* rr, long n) {
  double s = 0;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    double v = r[i] - a * w[i]; r[i] = v; s += v * v; }
  for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(rr, s);
}
// Flag combine: write my value into every peer's slot, raise their flag, spin on my flags.
extern "C" __global__ void flag_combine(const double* mine, double* out, double** peer_vals,
    unsigned long long** peer_flags, volatile double* my_vals, volatile unsigned long long* my_flags,
    int rank, int size, unsigned long long seq, int slot) {
  if (threadIdx.x != 0) return;
  double v = mine[0];
  for (int q = 0; q < size; ++q) {
    peer_vals[q][slot * 8 + rank] = v;
  }
  __threadfence_system();
  for (int q = 0; q < size; ++q) {
    atomicExch(peer_flags[q] + slot * 8 + rank, seq);
  }
  double s = 0;
  for (int q = 0; q < size; ++q) {
    while (my_flags[slot * 8 + q] < seq) { }
    __threadfence_system();
    s += my_vals[slot * 8 + q];
  }
  out[0] = s;
}
'''
mod = cp.RawModule(code=src)
axpy = mod.get_function("axpy"); upd_r = mod.get_function("upd_r"); flagk = mod.get_function("flag_combine")
# IPC slots
vals = cp.zeros(8 * 8, dtype=cp.float64); flags = cp.zeros(8 * 8, dtype=cp.uint64)
hv = cp.cuda.runtime.ipcGetMemHandle(vals.data.ptr); hf = cp.cuda.runtime.ipcGetMemHandle(flags.data.ptr)
allh = comm.allgather((hv, hf))
pv, pf = [], []
for q, (a, b) in enumerate(allh):
    if q == rank: pv.append(vals.data.ptr); pf.append(flags.data.ptr)
    else:
        pv.append(cp.cuda.runtime.ipcOpenMemHandle(a)); pf.append(cp.cuda.runtime.ipcOpenMemHandle(b))
pv = cp.asarray(np.array(pv, dtype=np.uint64)); pf = cp.asarray(np.array(pf, dtype=np.uint64))
seq = [0]

main = cp.cuda.Stream(non_blocking=True)
side = cp.cuda.Stream(non_blocking=True, priority=-5)
rr = cp.zeros(1); rr2 = cp.zeros(1)
# Occupancy of axpy: blocks per SM at 256 threads
bps = 8
grids = {"full": sms * bps, "spare2": (sms - 2) * bps, "minus1": sms * (bps - 1), "minus2": sms * (bps - 2),
         "half": sms * bps // 2, "nonpers": N // 256 // 4}
def combine(kind, s):
    if kind == "nccl":
        assert nccl.ncclAllReduce(rr.data.ptr, rr2.data.ptr, 1, 8, 0, ncomm, s.ptr) == 0
    elif kind == "flag":
        seq[0] += 1
        flagk((1,), (32,), (rr, rr2, pv, pf, vals, flags, np.int32(rank), np.int32(size), np.uint64(seq[0]), np.int32(seq[0] % 4)), stream=s)
def iteration(kind, grid, mode):
    # mode: 'kern' only the update, 'comb' only the combine, 'serial', 'overlap'
    upd_r((sms * bps,), (256,), (r, w, np.float64(1e-9), rr, np.int64(N // 3)), stream=main)
    if mode == "kern":
        axpy((grid,), (256,), (x, x, p, np.float64(1e-9), np.int64(N)), stream=main); return
    if mode == "comb":
        combine(kind, main); return
    if mode == "serial":
        combine(kind, main)
        axpy((grid,), (256,), (x, x, p, np.float64(1e-9), np.int64(N)), stream=main); return
    e = main.record(); side.wait_event(e)
    combine(kind, side)
    axpy((grid,), (256,), (x, x, p, np.float64(1e-9), np.int64(N)), stream=main)
    main.wait_event(side.record())
def timed(kind, grid, mode, iters=200):
    for _ in range(20): iteration(kind, grid, mode)
    main.synchronize(); comm.Barrier()
    t0 = main.record()
    for _ in range(iters): iteration(kind, grid, mode)
    t1 = main.record(); t1.synchronize()
    us = cp.cuda.get_elapsed_time(t0, t1) * 1e3 / iters
    return comm.allreduce(us, op=MPI.MAX)
res = {}
for rnd in range(3):
    for kind in ("nccl", "flag"):
        res.setdefault((kind, "-", "comb"), []).append(timed(kind, 0, "comb"))
        for gname, grid in grids.items():
            for mode in ("kern", "serial", "overlap"):
                if mode == "kern" and kind == "flag": continue
                res.setdefault((kind if mode != "kern" else "-", gname, mode), []).append(timed(kind, grid, mode))
if rank == 0:
    print("sms", sms, "N", N, os.environ.get("NCCL_NTHREADS", ""), os.environ.get("TAG", ""))
    for k in sorted(res):
        print("%-5s %-8s %-8s %8.1f us  %s" % (k[0], k[1], k[2], st.median(res[k]), ["%.1f" % v for v in res[k]]))
nccl.ncclCommDestroy(ncomm)
