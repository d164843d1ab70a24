#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Times variants of skein-heat's 3-D 7-point step on one CUDA device (CuPy), against a device copy.

The kernels' sources are in tools/stencil3d_kernels.py (imported from this script's directory).

    python3 tools/stencil3d-sweep.py [--n 512] [--dtype float64|float32] [--steps 20] [--rounds 3]
                                     [--only REGEX] [--list]

Every variant computes the same step on the halo layout of skein-heat's process-grid blocks (an
(n+2)^3 array, one ghost cell on every side, x fastest):

    out = c0*u + rx*(u[x-1] + u[x+1]) + ry*(u[y-1] + u[y+1]) + rz*(u[z-1] + u[z+1])

by that expression, in that order, compiled with --fmad=false, so every variant must give the
baseline's bits. Each variant is first checked on small odd grids (40x36x30, 37x29x23, 5x3x2)
against the baseline kernel (bit for bit) and a numpy reference (within rounding; the same
expression gives the same bits there too), then run once on the big grid and compared with the
baseline's output bit for bit, then timed: CUDA events around `--steps` launches, `--rounds`
rounds after a warm-up, the median per step. The floor is a device copy of an n^3 array (n^3
elements read, n^3 written: the bytes one step must move), timed the same way in the same run
(cudaMemcpyAsync device to device, and CuPy's elementwise copy; the faster is the floor).
floor/kernel is the fraction of the floor a variant reaches (1.0: as fast as the copy).

A variant that fails to compile, launch or check prints its error and the sweep goes on. Output:
one line per variant while it runs, then the table sorted by speed.

Variants (the name encodes the parameters):
  march      today's kernel (apps/skein-heat/heat_solver3d.cpp, heat_step_grid): a work item per
             (x, y) marching over ZCHUNK planes, the planes below and at the point in registers,
             x/y neighbours and the plane above from global memory; bx x by items, z = ZCHUNK,
             u = unroll of the march (0: the compiler's choice). Flags: ldg (loads by __ldg),
             stcs (stores by __stcs, streaming), i32 (32-bit indices), lbN (__launch_bounds__ with
             N blocks per SM)
  smem       2.5-D blocking: a work group owns a bx x by tile of a plane; each plane's tile plus its
             x/y halo is loaded once into shared memory, row by row by whole warps (coalesced), in a
             ring of three buffers (one barrier per plane); x/y neighbours from shared memory, the
             planes below and at the point in registers; the plane above from shared memory (asm)
             or from global memory (asg). al: each warp's row load starts at a 128-byte boundary
             (the row's misalignment is loaded and dropped)
  tb2        two steps per pass (temporal blocking): the first step on the output tile and a ring
             of one point around it by the march, put in shared memory plane by plane, the second
             from there one plane behind; checked against two host steps and two launches of the
             baseline, timed per step (a pass's time / 2)
  xstrideP   march with P points per work item along x, strided by bx (coalesced; ILP, fewer
             index computations)
  ycolP      march with P consecutive points per item along y: the y neighbours inside the column
             come from the registers of the march (only the rows below and above the column read)
  xvec2      march with 2 consecutive points per item along x: each row's 4 values (x-1 .. x+2)
             as two aligned 2-vectors (double2/float2) where the rows are even (n even; scalar
             loads otherwise), the x neighbours inside the pair from registers
  pitch      march on a padded layout (not skein-heat's): the row pitch rounded up to 128 bytes and
             the allocation led so that every row's first interior point starts at a 128-byte
             boundary (what aligned rows would give)
  march2     the march with any of three changes (stop 55; run in stop 56, none faster): pf, the plane
             after the one above loaded one iteration ahead (two planes' loads in flight per item);
             sh, the x neighbours from the neighbouring lanes' registers by warp shuffles (the
             lanes at a warp's ends and the row's last point load theirs; bx a multiple of 32);
             zf, the groups launched z-chunk fastest (blockIdx.x is the chunk, so that the groups
             marching one column's chunks run together and share their end planes in L2)
  persist    the march by resident groups: as many groups as fit at once (multiprocessors x the
             groups per multiprocessor the name gives, gN), each taking tiles (x fastest, then y,
             then the z-chunk: the order of the plain launch) in turn until none is left, so that
             no group is launched or retired per tile
  smema      2.5-D blocking by asynchronous copies (cp.async, sm_80 and later): a group of bx x by
             items owns a bx x (by*P) tile (P rows per item along y); the planes of its z-chunk,
             each with its x/y halo (corners left out), are copied into a ring of S shared-memory
             stages S - 3 planes ahead of the one computed (one barrier per plane), so every value
             is requested from L2 once per group; all seven values of a point from shared memory
  ymarch     the march along y instead of z: a work item per (x, z) marching over y-chunks (the
             name's yN), bx x (planes per group) items, so a group streams through contiguous rows;
             zf: the groups' planes vary faster than their y-chunks
  diag_*     diagnostics, not steps (timed only, no bit check): mcopy copies the interior in the
             march's pattern (the plane above loaded as the march loads it, no x/y neighbour),
             flat copies the whole (n+2)^3 array by a grid-stride loop (gN groups per SM)
  point      no march: a work item per point, bx x by x bz groups in launch order x, y, z (a
             plane's groups before the next plane's, so the z neighbours come from L2). al: each
             row's items shifted so that a warp's loads start at a 128-byte boundary (items outside
             the interior load nothing and store nothing)
"""

import argparse
import re
import sys
import time

import numpy as np

from stencil3d_kernels import (FLAT, HEADER, MARCH, MARCH2, MCOPY, PERSIST, POINT, SMEM, SMEMA, TB2,
                               XSTRIDE, XVEC2, YCOL, YMARCH)


class Variant:
    """One kernel: its family's source, its macros, its work-group shape and grid."""

    multiprocessors = 132  # the device's, set by main() (persist's grid)

    def __init__(self, name, body, bx, by, bz=1, zchunk=1, unroll=0, p=1, ldg=0, stcs=0, i32=0,
                 minb=0, align=0, above_smem=0, kind="march", pf=0, sh=0, zf=0, gpm=0,
                 stages=0):
        self.name, self.body, self.kind = name, body, kind
        self.gpm = gpm  # persist: groups per multiprocessor
        self.bx, self.by, self.bz, self.zchunk, self.unroll, self.p = bx, by, bz, zchunk, unroll, p
        self.macros = dict(BX=bx, BY=by, BZ=bz, ZCHUNK=zchunk, P=p, USE_LDG=ldg, USE_STCS=stcs,
                           IDX32=i32, MINB=minb, ALIGN=align, ABOVE_SMEM=above_smem,
                           PITCHED=int(kind == "pitch"), PF=pf, SH=sh, ZF=zf, STAGES=stages)

    def shared_bytes(self, dtype):
        """Dynamic shared memory of a launch (smema's ring of stages; 0 for the others)."""
        if self.kind != "smema":
            return 0
        return self.macros["STAGES"] * (self.bx + 2) * (self.by * self.p + 2) * np.dtype(dtype).itemsize

    def source(self, dtype):
        t = "double" if dtype == np.float64 else "float"
        lines = [f"#define TYPE {t}", f"#define TYPE2 {t}2"]
        lines += [f"#define {k} {v}" for k, v in self.macros.items()]
        pragma = f"#pragma unroll {self.unroll}" if self.unroll > 0 else ""
        return "\n".join(lines) + HEADER + self.body.replace("UNROLL_PRAGMA", pragma)

    def block(self):
        if self.kind == "tb2":
            return (self.bx + 2, self.by + 2, 1)
        return (self.bx, self.by, self.bz)

    def grid(self, nz, ny, nx, dtype):
        cdiv = lambda a, b: (a + b - 1) // b
        if self.kind == "point":
            al = 128 // np.dtype(dtype).itemsize if self.macros["ALIGN"] else 0
            return (cdiv(nx + al, self.bx), cdiv(ny, self.by), cdiv(nz, self.bz))
        if self.kind == "persist":
            return (Variant.multiprocessors * self.gpm, 1, 1)
        if self.kind == "flat":
            return (Variant.multiprocessors * self.gpm, 1, 1)
        if self.kind == "ymarch":
            if self.macros["ZF"]:
                return (cdiv(nx, self.bx), cdiv(nz, self.by), cdiv(ny, self.zchunk))
            return (cdiv(nx, self.bx), cdiv(ny, self.zchunk), cdiv(nz, self.by))
        if self.macros["ZF"]:
            return (cdiv(nz, self.zchunk), cdiv(nx, self.bx), cdiv(ny, self.by))
        if self.kind == "xvec2":
            return (cdiv(nx, 2 * self.bx), cdiv(ny, self.by), cdiv(nz, self.zchunk))
        if self.kind == "xstride":
            return (cdiv(nx, self.p * self.bx), cdiv(ny, self.by), cdiv(nz, self.zchunk))
        if self.kind in ("ycol", "smema"):
            return (cdiv(nx, self.bx), cdiv(ny, self.p * self.by), cdiv(nz, self.zchunk))
        return (cdiv(nx, self.bx), cdiv(ny, self.by), cdiv(nz, self.zchunk))


def variants(n):
    v = []
    whole = max(n, 1)

    def march(bx, by, z, u, **f):
        tag = "".join(f"_{k}" if val == 1 else f"_{k}{val}" for k, val in f.items() if val)
        v.append(Variant(f"march_{bx}x{by}x{z}_u{u}{tag}", MARCH, bx, by, zchunk=z, unroll=u, **f))

    march(64, 4, 16, 16)  # the baseline: skein-heat's default (GridTile 64x4x16, --unroll3d 16)
    for bx, by, z, u in ((32, 4, 16, 16), (32, 8, 16, 16), (128, 2, 16, 16), (64, 8, 8, 8),
                         (64, 4, 32, 32), (64, 2, 16, 16), (256, 1, 16, 16), (64, 4, 16, 0)):
        march(bx, by, z, u)
    for bx, by, z, u in ((64, 4, 8, 8), (128, 4, 8, 8), (32, 8, 8, 8), (64, 16, 8, 8),
                         (64, 8, 4, 4), (128, 8, 8, 8), (64, 8, 16, 16), (64, 8, 8, 0),
                         (32, 16, 8, 8), (64, 8, 8, 8)):
        if bx == 64 and by == 8 and z == 8 and u == 8:
            march(bx, by, z, u, minb=4)
        else:
            march(bx, by, z, u)
    for bx, by, z, u in ((64, 4, 16, 16), (64, 8, 8, 8), (128, 4, 8, 8), (32, 8, 8, 8)):
        v.append(Variant(f"pitch_{bx}x{by}x{z}_u{u}", MARCH, bx, by, zchunk=z, unroll=u,
                         kind="pitch"))
    march(64, 4, 16, 16, ldg=1)
    march(64, 4, 16, 16, stcs=1)
    march(64, 4, 16, 16, i32=1)
    march(64, 4, 16, 16, ldg=1, stcs=1, i32=1)
    march(64, 4, 16, 16, minb=8)
    march(32, 8, 16, 16, stcs=1, i32=1)

    def smem(bx, by, z, u, align, above, **f):
        zs = "all" if z >= whole else str(z)
        tag = ("_al" if align else "") + ("_asm" if above else "_asg")
        tag += "".join(f"_{k}" if val == 1 else f"_{k}{val}" for k, val in f.items() if val)
        v.append(Variant(f"smem_{bx}x{by}x{zs}_u{u}{tag}", SMEM, bx, by, zchunk=z, unroll=u,
                         align=align, above_smem=above, kind="smem", **f))

    for bx, by, z in ((64, 4, 16), (64, 4, 64), (64, 4, whole), (32, 8, 64), (64, 8, 64),
                      (128, 4, 64), (32, 4, 64), (128, 2, 64)):
        smem(bx, by, z, 4 if z > 16 else 16, 0, 1)
        smem(bx, by, z, 4 if z > 16 else 16, 1, 1)
    # skein-heat's --kernel3d shared is smem_..._al_asm (here with other unrolls, and fewer
    # registers by __launch_bounds__).
    smem(64, 4, 16, 4, 1, 1)
    smem(64, 4, 16, 1, 1, 1)
    smem(64, 4, 16, 16, 1, 1, minb=4)
    smem(32, 8, 16, 16, 1, 1)
    smem(64, 4, 64, 4, 0, 0)
    smem(64, 4, 64, 4, 1, 0)
    smem(64, 4, 64, 4, 1, 1, stcs=1, i32=1)
    smem(32, 8, 64, 4, 1, 1, stcs=1, i32=1)

    for bx, by, z, p in ((64, 4, 16, 2), (32, 4, 16, 2), (64, 4, 16, 4), (32, 8, 16, 2)):
        v.append(Variant(f"xstride{p}_{bx}x{by}x{z}_u{z}", XSTRIDE, bx, by, zchunk=z, unroll=z,
                         p=p, kind="xstride"))
    # skein-heat's --kernel3d column2 / column4 is ycol2 / ycol4 (--tile3d BXxBYxZ, --unroll3d U).
    for bx, by, z, p, u in ((64, 2, 16, 2, 16), (64, 4, 16, 2, 16), (64, 4, 16, 2, 4),
                            (64, 2, 16, 4, 16), (64, 2, 16, 4, 4), (64, 4, 16, 4, 4),
                            (32, 4, 16, 4, 16), (128, 1, 16, 4, 16), (64, 1, 16, 8, 16),
                            (64, 1, 16, 8, 2)):
        v.append(Variant(f"ycol{p}_{bx}x{by}x{z}_u{u}", YCOL, bx, by, zchunk=z, unroll=u, p=p,
                         kind="ycol"))
    for bx, by, z, u in ((32, 4, 16, 16), (32, 8, 16, 16), (64, 4, 16, 16), (32, 4, 32, 8)):
        v.append(Variant(f"xvec2_{bx}x{by}x{z}_u{u}", XVEC2, bx, by, zchunk=z, unroll=u,
                         kind="xvec2"))
    for bx, by, z, u in ((64, 8, 4, 4), (64, 8, 8, 8), (64, 4, 16, 16), (128, 4, 8, 8),
                         (32, 8, 8, 8)):
        for pf, sh, zf in ((1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 1), (1, 1, 1)):
            tag = ("_pf" if pf else "") + ("_sh" if sh else "") + ("_zf" if zf else "")
            v.append(Variant(f"march2_{bx}x{by}x{z}_u{u}{tag}", MARCH2, bx, by, zchunk=z,
                             unroll=u, kind="march2", pf=pf, sh=sh, zf=zf))
    # The unrolled shuffles took 95-254 registers (nvcc 13.0, sm_90): bounded to 4 groups of 512
    # items per multiprocessor (32 registers) as the plain march has.
    for bx, by, z, u, pf in ((64, 8, 4, 4, 0), (64, 8, 4, 4, 1), (64, 8, 8, 8, 0), (64, 8, 8, 8, 1),
                             (64, 4, 16, 16, 0), (128, 4, 8, 8, 1)):
        tag = "_pf_sh" if pf else "_sh"
        v.append(Variant(f"march2_{bx}x{by}x{z}_u{u}{tag}_lb4", MARCH2, bx, by, zchunk=z,
                         unroll=u, kind="march2", pf=pf, sh=1, minb=4))
    # Resident groups over the tiles: gpm groups per multiprocessor (as many as fit at the
    # plain march's 32 registers: 2048 items per multiprocessor), bounded to that by
    # __launch_bounds__ (with march2's pf the bound made nvcc 13.0 spill 84-128 bytes: left out).
    for bx, by, z, u in ((64, 8, 4, 4), (64, 8, 8, 8), (64, 4, 16, 16), (128, 4, 8, 8)):
        gpm = 2048 // (bx * by)
        v.append(Variant(f"persist_{bx}x{by}x{z}_u{u}_g{gpm}", PERSIST, bx, by, zchunk=z,
                         unroll=u, kind="persist", gpm=gpm, minb=gpm))
    # cp.async stages: bx x by items, P rows each, z-chunk, S stages (whole: one chunk per column).
    for bx, by, p, z, st in ((64, 8, 1, 16, 4), (64, 8, 1, 16, 5), (64, 8, 1, 16, 6),
                             (64, 8, 1, 32, 5), (64, 8, 1, whole, 5), (64, 8, 2, 16, 5),
                             (64, 8, 2, 32, 5), (64, 8, 2, 64, 5), (64, 4, 4, 32, 5),
                             (32, 16, 1, 32, 5), (128, 4, 2, 32, 5), (128, 4, 4, 16, 4),
                             (128, 4, 4, 32, 5), (256, 2, 4, 32, 4), (64, 8, 2, 32, 6),
                             (128, 8, 1, 32, 5)):
        zs = "all" if z >= whole else str(z)
        v.append(Variant(f"smema_{bx}x{by}p{p}_z{zs}_s{st}", SMEMA, bx, by, zchunk=z, unroll=1,
                         p=p, kind="smema", stages=st))
    # The same bounded to 3 groups of 512 items per multiprocessor (42 registers; 47-52 free).
    for bx, by, p, z, st in ((64, 8, 1, 16, 5), (64, 8, 1, 32, 5), (64, 8, 2, 32, 5),
                             (64, 8, 1, 32, 6), (128, 4, 2, 32, 4)):
        v.append(Variant(f"smema_{bx}x{by}p{p}_z{z}_s{st}_lb3", SMEMA, bx, by, zchunk=z,
                         unroll=1, p=p, kind="smema", stages=st, minb=3))
    # The march's tile with wider rows per group (x: whole 128- to 512-point rows), 4-plane chunks.
    for bx, by, z in ((128, 4, 4), (256, 2, 4), (512, 1, 4), (128, 8, 4), (256, 4, 4),
                      (32, 16, 4), (64, 16, 4), (128, 2, 8), (64, 8, 2)):
        march(bx, by, z, z)
    # Shorter chunks (call 3 of stop 56: 64 x 8 x 2 faster than x 4).
    for bx, by, z in ((128, 4, 2), (256, 2, 2), (512, 1, 2), (64, 8, 1), (32, 16, 2),
                      (64, 16, 2), (128, 8, 2), (32, 8, 2), (64, 4, 2), (128, 2, 2)):
        march(bx, by, z, z)
    # Whole-column marches with every group resident at once (at 512^3: 512 groups of 512 items,
    # 256 of 1024, 1024 of 256, at 32 registers), so the groups walk the planes together.
    for bx, by, u in ((64, 8, 16), (128, 4, 16), (64, 16, 16), (32, 8, 16), (64, 4, 16),
                      (64, 8, 4), (64, 8, 2)):
        march(bx, by, whole, u)
    for bx, by in ((64, 8), (32, 8)):
        v.append(Variant(f"diag_mcopy_{bx}x{by}x{whole}", MCOPY, bx, by, zchunk=whole,
                         unroll=16, kind="mcopy"))
    # The march along y (x: whole rows or parts, BY planes per group, y-chunks of ZCHUNK rows).
    for bx, bz, yc, zf in ((512, 1, 8, 0), (512, 1, 16, 0), (512, 1, 32, 0), (256, 2, 16, 0),
                           (256, 2, 8, 0), (128, 4, 16, 0), (128, 4, 8, 0), (512, 2, 16, 0),
                           (256, 4, 8, 0), (64, 8, 16, 0), (512, 1, 16, 1), (256, 2, 16, 1),
                           (128, 4, 16, 1), (512, 2, 8, 1), (256, 4, 4, 0), (512, 1, 4, 0)):
        v.append(Variant(f"ymarch_{bx}x{bz}_y{yc}_u{min(yc, 16)}" + ("_zf" if zf else ""), YMARCH,
                         bx, bz, zchunk=yc, unroll=min(yc, 16), kind="ymarch", zf=zf))
    # Two steps per pass: output tiles of bx x by, (bx + 2) x (by + 2) items, z-chunks of z.
    for bx, by, z, u in ((30, 8, 8, 1), (30, 8, 16, 1), (62, 6, 8, 1), (62, 6, 16, 1),
                         (62, 14, 16, 1), (126, 6, 16, 1), (30, 14, 16, 1), (62, 6, 32, 1),
                         (30, 6, 16, 1), (62, 6, 16, 2), (30, 14, 16, 2), (30, 6, 16, 2),
                         (62, 6, 32, 2), (62, 6, 8, 2), (62, 6, 16, 4), (30, 14, 16, 4),
                         (30, 14, 32, 2), (62, 14, 16, 2), (62, 10, 16, 2), (30, 8, 16, 2),
                         (94, 6, 16, 2), (62, 6, 32, 4), (30, 30, 16, 2), (62, 6, 64, 2)):
        v.append(Variant(f"tb2_{bx}x{by}x{z}_u{u}", TB2, bx, by, zchunk=z, unroll=u, kind="tb2"))
    for bx, by, z in ((64, 8, 4), (128, 4, 4), (512, 1, 4), (64, 4, 16), (64, 8, 1), (64, 8, 2),
                      (128, 4, 2), (512, 1, 2), (256, 2, 4), (512, 2, 2)):
        v.append(Variant(f"diag_mcopy_{bx}x{by}x{z}", MCOPY, bx, by, zchunk=z, unroll=z,
                         kind="mcopy"))
    for g in (4, 8, 16):
        v.append(Variant(f"diag_flat_256_g{g}", FLAT, 256, 1, kind="flat", gpm=g))
    for bx, by, bz, al in ((64, 4, 1, 0), (64, 4, 4, 0), (32, 8, 4, 0), (128, 2, 2, 0),
                           (256, 1, 1, 0), (64, 4, 1, 1), (64, 4, 4, 1), (128, 2, 2, 1)):
        v.append(Variant(f"point_{bx}x{by}x{bz}" + ("_al" if al else ""), POINT, bx, by, bz=bz,
                         align=al, kind="point"))
    return v


def coefficients(dtype):
    rx, ry, rz = 0.11, 0.13, 0.17
    c0 = 1.0 - 2.0 * (rx + ry + rz)
    return [dtype(c) for c in (c0, rz, ry, rx)]


def host_step(u, dtype):
    """The step on the host (numpy, no contraction): the reference."""
    c0, rz, ry, rx = coefficients(dtype)
    c = u[1:-1, 1:-1, 1:-1]
    out = np.zeros_like(u)
    out[1:-1, 1:-1, 1:-1] = (c0 * c + rx * (u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:])
                             + ry * (u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1])
                             + rz * (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=512, help="interior points per axis (default 512)")
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--steps", type=int, default=20, help="launches per timed round")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds (the median is shown)")
    ap.add_argument("--only", default="", help="regex: only the variants whose name matches")
    ap.add_argument("--list", action="store_true", help="list the variants and exit")
    args = ap.parse_args()
    dtype = np.float64 if args.dtype == "float64" else np.float32
    vs = [v for v in variants(args.n) if re.search(args.only, v.name)]
    if args.list:
        for v in vs:
            print(v.name)
        return 0

    import cupy as cp

    t_start = time.time()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    Variant.multiprocessors = int(props["multiProcessorCount"])
    print(f"# {props['name'].decode()}  n={args.n}^3 {args.dtype}  steps={args.steps} "
          f"rounds={args.rounds}  cupy {cp.__version__}  variants={len(vs)}", flush=True)

    def timed(fn):
        fn()
        fn()
        cp.cuda.Device().synchronize()
        per = []
        for _ in range(args.rounds):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            for _ in range(args.steps):
                fn()
            b.record()
            b.synchronize()
            per.append(cp.cuda.get_elapsed_time(a, b) * 1e3 / args.steps)
        return float(np.median(per))

    # The floor: n^3 elements read and written.
    n = args.n
    src = cp.ones((n, n, n), dtype=dtype)
    dst = cp.empty_like(src)
    nbytes = src.nbytes
    stream = cp.cuda.get_current_stream().ptr
    t_memcpy = timed(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                                         cp.cuda.runtime.memcpyDeviceToDevice,
                                                         stream))

    def ew():
        dst[...] = src

    t_ew = timed(ew)
    floor = min(t_memcpy, t_ew)
    print(f"# floor: copy of {nbytes / 2**30:.3f} GiB: memcpy {t_memcpy:.1f} us "
          f"({2 * nbytes / t_memcpy / 1e3:.0f} GB/s), elementwise {t_ew:.1f} us; floor "
          f"{floor:.1f} us", flush=True)
    src = dst = None  # freed (the closures above keep only the names)

    rng = np.random.default_rng(35)
    coef = coefficients(dtype)
    small = []
    for shape in ((30, 36, 40), (23, 29, 37), (2, 3, 5)):
        h = rng.standard_normal(tuple(s + 2 for s in shape)).astype(dtype)
        small.append((shape, cp.asarray(h), host_step(h, dtype)))
    u = cp.random.standard_normal((n + 2,) * 3, dtype=dtype)
    out = cp.zeros_like(u)
    ref_big = None
    base_small = None
    results = []

    def launch(kern, v, o, i, shape):
        nz, ny, nx = shape
        kern(v.grid(nz, ny, nx, dtype), v.block(), (o, i, np.uint32(nz), np.uint32(ny),
                                                     np.uint32(nx), *coef),
             shared_mem=v.shared_bytes(dtype))

    aligne = 128 // np.dtype(dtype).itemsize

    def padded(a):
        """The (nz+2, ny+2, nx+2) array `a` on the PITCHED layout (flat)."""
        nz2, ny2, nx2 = a.shape
        sy = (nx2 + aligne - 1) // aligne * aligne
        flat = cp.zeros(aligne - 1 + nz2 * ny2 * sy, dtype=dtype)
        flat[aligne - 1:].reshape(nz2, ny2, sy)[:, :, :nx2] = a
        return flat

    def unpadded(flat, like):
        nz2, ny2, nx2 = like.shape
        sy = (nx2 + aligne - 1) // aligne * aligne
        return flat[aligne - 1:].reshape(nz2, ny2, sy)[:, :, :nx2]

    def run(kern, v, o, i, shape):
        """One step of v into o from i (both (n+2)^3 arrays), through the padded layout for a
        pitch variant."""
        if v.kind != "pitch":
            launch(kern, v, o, i, shape)
            return
        po = padded(o)
        launch(kern, v, po, padded(i), shape)
        o[...] = unpadded(po, o)

    for v in vs:
        t0 = time.time()
        try:
            kern = cp.RawKernel(v.source(dtype), "stencil", options=("--fmad=false",))
            regs = kern.num_regs  # compiles it
            if v.shared_bytes(dtype) > 48 * 1024:
                kern.max_dynamic_shared_size_bytes = v.shared_bytes(dtype)
            notes = []
            outs = []
            if v.kind == "tb2":  # two steps: checked against two host steps and two baseline launches
                for shape, hin, _ in small:
                    h = cp.asnumpy(hin)
                    h1 = h.copy()
                    h1[1:-1, 1:-1, 1:-1] = host_step(h, dtype)[1:-1, 1:-1, 1:-1]
                    h2 = h1.copy()
                    h2[1:-1, 1:-1, 1:-1] = host_step(h1, dtype)[1:-1, 1:-1, 1:-1]
                    o = hin.copy()
                    run(kern, v, o, hin, shape)
                    if not np.array_equal(cp.asnumpy(o), h2):
                        err = float(np.max(np.abs(cp.asnumpy(o) - h2)))
                        raise RuntimeError(f"two steps differ from the host's on "
                                           f"{shape[2]}x{shape[1]}x{shape[0]}: max |d| = {err:.3e}")
                base = variants(n)[0]
                kb = cp.RawKernel(base.source(dtype), "stencil", options=("--fmad=false",))
                t1, t2 = u.copy(), u.copy()
                launch(kb, base, t1, u, (n, n, n))
                launch(kb, base, t2, t1, (n, n, n))
                o = u.copy()
                launch(kern, v, o, u, (n, n, n))
                if not bool(cp.array_equal(o.view(np.uint8), t2.view(np.uint8))):
                    raise RuntimeError(f"not two baseline steps' bits at {n}^3")
                t1 = t2 = None
                us = timed(lambda: launch(kern, v, o, u, (n, n, n))) / 2
                o = None
                results.append((us, v.name))
                print(f"{v.name:34s} {us:8.1f} us  {floor / us:6.3f} of floor  {regs:3d} regs  "
                      f"(per step: one pass makes two; {time.time() - t0:.1f} s)", flush=True)
                continue
            if v.kind in ("mcopy", "flat"):  # diagnostics: timed only
                us = timed(lambda: launch(kern, v, out, u, (n, n, n)))
                results.append((us, v.name))
                print(f"{v.name:34s} {us:8.1f} us  {floor / us:6.3f} of floor  {regs:3d} regs  "
                      f"(diagnostic, not a step)", flush=True)
                continue
            for shape, hin, href in small:
                o = cp.zeros_like(hin)
                run(kern, v, o, hin, shape)
                got = cp.asnumpy(o)
                outs.append(got)
                err = float(np.max(np.abs(got - href)))
                scale = float(np.max(np.abs(href)))
                if not np.array_equal(got, href):
                    notes.append(f"host{shape[::-1]}:maxerr={err:.2e}")
                    if err > 8 * np.finfo(dtype).eps * scale:
                        raise RuntimeError(f"differs from the host reference on "
                                           f"{shape[2]}x{shape[1]}x{shape[0]}: max |d| = {err:.3e}")
            if base_small is None:
                base_small = outs
            else:
                for (shape, _, _), got, want in zip(small, outs, base_small):
                    if got.tobytes() != want.tobytes():
                        raise RuntimeError(f"not the baseline's bits on "
                                           f"{shape[2]}x{shape[1]}x{shape[0]}")
            out.fill(0)
            run(kern, v, out, u, (n, n, n))
            if ref_big is None:
                ref_big = out.copy()
            elif not bool(cp.array_equal(out.view(np.uint8), ref_big.view(np.uint8))):
                raise RuntimeError(f"not the baseline's bits at {n}^3")
            if v.kind == "pitch":  # timed on the padded arrays themselves
                pu, pout = padded(u), padded(out)
                us = timed(lambda: launch(kern, v, pout, pu, (n, n, n)))
                pu = pout = None
            else:
                us = timed(lambda: launch(kern, v, out, u, (n, n, n)))
            results.append((us, v.name))
            print(f"{v.name:34s} {us:8.1f} us  {floor / us:6.3f} of floor  {regs:3d} regs  "
                  f"({time.time() - t0:.1f} s){'  ' + ' '.join(notes) if notes else ''}",
                  flush=True)
        except Exception as e:  # report and go on
            msg = " ".join(str(e).split())[:300]
            print(f"{v.name:34s} FAILED: {type(e).__name__}: {msg}", flush=True)
            if v is vs[0] and ref_big is None:
                print("# the baseline failed: the bit checks below compare with the first variant "
                      "that runs", flush=True)
        cp.get_default_memory_pool().free_all_blocks()

    print(f"# sorted (floor {floor:.1f} us = {2 * n**3 * np.dtype(dtype).itemsize / floor / 1e3:.0f}"
          f" GB/s), {time.time() - t_start:.0f} s in all")
    for us, name in sorted(results):
        print(f"{name:34s} {us:8.1f} us  {floor / us:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
