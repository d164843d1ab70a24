#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Times variants of skein-heat's 3-D 7-point step on one CUDA device (CuPy), against a device copy.

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

HEADER = r"""
typedef TYPE T;
typedef TYPE2 T2;
#if IDX32
typedef unsigned int I;
#else
typedef unsigned long long I;
#endif
#if USE_LDG
#define LD(p) __ldg(p)
#else
#define LD(p) (*(p))
#endif
#if USE_STCS
#define ST(p, v) __stcs((p), (v))
#else
#define ST(p, v) (*(p) = (v))
#endif
#if MINB > 0
#define LB __launch_bounds__(BX * BY * BZ, MINB)
#else
#define LB
#endif
/* A row's pitch and the elements before the first row (MARCH): skein-heat's layout, or with
   PITCHED (the pitch_* variants, not skein-heat's layout) rows rounded up to 128 bytes and the
   allocation led by LEAD elements, so that every row's x = 1 starts at a 128-byte boundary; the
   launcher pads the input and takes the output back to the (n+2)^3 layout for the bit checks. */
#if PITCHED
#define ALIGNE (128 / sizeof(T))
#define LEAD (ALIGNE - 1)
#define ROW(nx) (((I)(nx) + 2 + ALIGNE - 1) / ALIGNE * ALIGNE)
#else
#define LEAD 0
#define ROW(nx) ((I)(nx) + 2)
#endif
/* The step, term for term as skein-heat's heat_step_grid. */
#define STEP(h, w, e, s, n, b, a) \
    (c0 * (h) + rx * ((w) + (e)) + ry * ((s) + (n)) + rz * ((b) + (a)))
#define ARGS T* __restrict__ out, const T* __restrict__ in, unsigned int nz, unsigned int ny, \
             unsigned int nx, T c0, T rz, T ry, T rx
"""

# One work item's march over the planes [zb, zend) of its (x, y) (MARCH's, and PERSIST's per tile):
# needs x, y, zb, sy and sz.
MARCH_COLUMN = r"""
    I i = LEAD + ((I)zb + 1) * sz + ((I)y + 1) * sy + x + 1;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    T below = LD(in + i - sz), here = LD(in + i);
    UNROLL_PRAGMA
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        const T above = LD(in + i + sz);
        ST(out + i, STEP(here, LD(in + i - 1), LD(in + i + 1), LD(in + i - sy), LD(in + i + sy), below, above));
        below = here;
        here = above;
    }
"""

MARCH = r"""
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int x = blockIdx.x * BX + threadIdx.x;
    const unsigned int y = blockIdx.y * BY + threadIdx.y;
    const unsigned int zb = blockIdx.z * ZCHUNK;
    if (x >= nx || y >= ny || zb >= nz) return;
    const I sy = ROW(nx);
    const I sz = ((I)ny + 2) * sy;
""" + MARCH_COLUMN + "}\n"

MARCH2 = r"""
/* MARCH with PF (the plane after `above` loaded one iteration ahead), SH (x neighbours by warp
   shuffles) and ZF (blockIdx.x is the z-chunk); the same STEP, term for term. With SH every lane
   of a warp takes part in the shuffles: items past the row's end load a clamped point and store
   nothing (a warp lies in one row: BX is a multiple of 32, so y is the same across it). */
extern "C" __global__ void LB stencil(ARGS)
{
#if ZF
    const unsigned int bxi = blockIdx.y, byi = blockIdx.z, bzi = blockIdx.x;
#else
    const unsigned int bxi = blockIdx.x, byi = blockIdx.y, bzi = blockIdx.z;
#endif
    const unsigned int x = bxi * BX + threadIdx.x;
    const unsigned int y = byi * BY + threadIdx.y;
    const unsigned int zb = bzi * ZCHUNK;
#if SH
    if (y >= ny || zb >= nz) return;
    const bool on = x < nx;
    const unsigned int xc = on ? x : nx - 1;
    const unsigned int lane = threadIdx.x & 31u;
    const bool load_e = lane == 31u || x + 1 >= nx;
#else
    if (x >= nx || y >= ny || zb >= nz) return;
    const unsigned int xc = x;
#endif
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    I i = ((I)zb + 1) * sz + ((I)y + 1) * sy + xc + 1;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    T below = LD(in + i - sz), here = LD(in + i);
#if PF
    T above = LD(in + i + sz);
#endif
    UNROLL_PRAGMA
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
#if PF
        const T next = z + 1 < zend ? LD(in + i + 2 * sz) : (T)0;
#else
        const T above = LD(in + i + sz);
#endif
#if SH
        T w = __shfl_up_sync(0xffffffffu, here, 1);
        T e = __shfl_down_sync(0xffffffffu, here, 1);
        if (lane == 0u) w = LD(in + i - 1);
        if (load_e) e = LD(in + i + 1);
        if (on) ST(out + i, STEP(here, w, e, LD(in + i - sy), LD(in + i + sy), below, above));
#else
        ST(out + i, STEP(here, LD(in + i - 1), LD(in + i + 1), LD(in + i - sy), LD(in + i + sy), below, above));
#endif
        below = here;
        here = above;
#if PF
        above = next;
#endif
    }
}
"""

PERSIST = r"""
/* MARCH over tiles by resident groups: group g takes tiles g, g + gridDim.x, ... (x fastest, then
   y, then the z-chunk), each marched as MARCH does; the same STEP, term for term. */
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int tiles_x = (nx + BX - 1) / BX, tiles_y = (ny + BY - 1) / BY;
    const unsigned int tiles = tiles_x * tiles_y * ((nz + ZCHUNK - 1) / ZCHUNK);
    const I sy = ROW(nx);
    const I sz = ((I)ny + 2) * sy;
    for (unsigned int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const unsigned int x = (t % tiles_x) * BX + threadIdx.x;
        const unsigned int y = (t / tiles_x % tiles_y) * BY + threadIdx.y;
        const unsigned int zb = t / (tiles_x * tiles_y) * ZCHUNK;
        if (x >= nx || y >= ny) continue;
""" + MARCH_COLUMN + "    }\n}\n"

SMEMA = r"""
/* 2.5-D blocking by cp.async: see the module's docstring. Stage k % STAGES holds the halo-
   coordinate plane zb + k of the tile's (BX + 2) x (BY * P + 2) window; the same STEP, term for
   term, on the same values. */
__device__ __forceinline__ void cp_async(T* s, const T* g)
{
    const unsigned int a = (unsigned int)__cvta_generic_to_shared(s);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(a), "l"(g), "n"(sizeof(T)));
}
#define TY (BY * P)
#define SW (BX + 2)
#define SROWS (TY + 2)
#define PLANE (SW * SROWS)
extern "C" __global__ void LB stencil(ARGS)
{
    extern __shared__ unsigned char smraw[];
    T* const sm = reinterpret_cast<T*>(smraw);
    const unsigned int x0 = blockIdx.x * BX, y0 = blockIdx.y * TY, zb = blockIdx.z * ZCHUNK;
    if (zb >= nz) return;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    const unsigned int nplanes = zend - zb + 2;
    const unsigned int tid = threadIdx.y * BX + threadIdx.x;
    const unsigned int cols = nx + 2 - x0 < SW ? nx + 2 - x0 : SW;
    const unsigned int rows = ny + 2 - y0 < SROWS ? ny + 2 - y0 : SROWS;
    const T* const base = in + (I)y0 * sy + x0;
#define LOAD(k)                                                                            \
    do {                                                                                   \
        if ((k) < nplanes) {                                                               \
            T* const s_ = sm + ((k) % STAGES) * PLANE;                                     \
            const T* const g_ = base + (I)(zb + (k)) * sz;                                 \
            for (unsigned int j = tid; j < PLANE; j += BX * BY) {                          \
                const unsigned int r = j / SW, c = j - r * SW;                             \
                const bool corner = (r == 0 || r == SROWS - 1) && (c == 0 || c == SW - 1); \
                if (r < rows && c < cols && !corner) cp_async(s_ + j, g_ + r * sy + c);    \
            }                                                                              \
        }                                                                                  \
        asm volatile("cp.async.commit_group;\n" ::);                                      \
    } while (0)
    for (unsigned int k = 0; k < STAGES - 1; ++k) LOAD(k);
    const unsigned int x = x0 + threadIdx.x;
    UNROLL_PRAGMA
    for (unsigned int k = 0; k + 2 < nplanes; ++k) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 4));
        __syncthreads();
        LOAD(k + STAGES - 1);
        const T* const s0 = sm + (k % STAGES) * PLANE;
        const T* const s1 = sm + ((k + 1) % STAGES) * PLANE;
        const T* const s2 = sm + ((k + 2) % STAGES) * PLANE;
        if (x < nx) {
#pragma unroll
            for (unsigned int p = 0; p < P; ++p) {
                const unsigned int ty = threadIdx.y + p * BY;
                if (y0 + ty < ny) {
                    const unsigned int j = (ty + 1) * SW + threadIdx.x + 1;
                    ST(out + (I)(zb + k + 1) * sz + (I)(y0 + ty + 1) * sy + x + 1,
                       STEP(s1[j], s1[j - 1], s1[j + 1], s1[j - SW], s1[j + SW], s0[j], s2[j]));
                }
            }
        }
    }
#undef LOAD
}
"""

# Diagnostics (kind "diag", no bit checks; not steps): the march's access pattern without the x/y
# neighbours (each interior point copied from the array: `here` stored, the plane above loaded as
# the march loads it), and a flat copy of the whole (n+2)^3 array by a grid-stride loop.
MCOPY = r"""
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int x = blockIdx.x * BX + threadIdx.x;
    const unsigned int y = blockIdx.y * BY + threadIdx.y;
    const unsigned int zb = blockIdx.z * ZCHUNK;
    if (x >= nx || y >= ny || zb >= nz) return;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    I i = ((I)zb + 1) * sz + ((I)y + 1) * sy + x + 1;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    T here = LD(in + i);
    UNROLL_PRAGMA
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        const T above = LD(in + i + sz);
        ST(out + i, here);
        here = above;
    }
}
"""

FLAT = r"""
extern "C" __global__ void LB stencil(ARGS)
{
    const I total = ((I)nz + 2) * ((I)ny + 2) * ((I)nx + 2);
    for (I i = (I)blockIdx.x * (BX * BY) + threadIdx.y * BX + threadIdx.x; i < total;
         i += (I)gridDim.x * (BX * BY))
        ST(out + i, LD(in + i));
}
"""

YMARCH = r"""
/* The march along y instead of z: a work item per (x, z) marching over ZCHUNK rows (ZCHUNK is the
   y-chunk here, BY the planes of a group), the rows below and at the point in registers, x and z
   neighbours and the row above from global memory, so a group streams through contiguous memory
   (row y + 1 follows row y); ZF: the groups' planes vary faster than their y-chunks. The same STEP,
   term for term (the y neighbours are the march's registers). */
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int x = blockIdx.x * BX + threadIdx.x;
#if ZF
    const unsigned int z = blockIdx.y * BY + threadIdx.y, yb = blockIdx.z * ZCHUNK;
#else
    const unsigned int yb = blockIdx.y * ZCHUNK, z = blockIdx.z * BY + threadIdx.y;
#endif
    if (x >= nx || z >= nz || yb >= ny) return;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    I i = ((I)z + 1) * sz + ((I)yb + 1) * sy + x + 1;
    const unsigned int yend = ny - yb < ZCHUNK ? ny : yb + ZCHUNK;
    T below = LD(in + i - sy), here = LD(in + i);
    UNROLL_PRAGMA
    for (unsigned int y = yb; y < yend; ++y, i += sy) {
        const T above = LD(in + i + sy);
        ST(out + i, STEP(here, LD(in + i - 1), LD(in + i + 1), below, above, LD(in + i - sz), LD(in + i + sz)));
        below = here;
        here = above;
    }
}
"""

XSTRIDE = r"""
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int xb = blockIdx.x * (BX * P) + threadIdx.x;
    const unsigned int y = blockIdx.y * BY + threadIdx.y;
    const unsigned int zb = blockIdx.z * ZCHUNK;
    if (xb >= nx || y >= ny || zb >= nz) return;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    I i = ((I)zb + 1) * sz + ((I)y + 1) * sy + xb + 1;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    T below[P], here[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
        below[p] = here[p] = 0;
        if (xb + p * BX < nx) { below[p] = LD(in + i + p * BX - sz); here[p] = LD(in + i + p * BX); }
    }
    UNROLL_PRAGMA
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
#pragma unroll
        for (int p = 0; p < P; ++p) {
            if (xb + p * BX < nx) {
                const I j = i + p * BX;
                const T above = LD(in + j + sz);
                ST(out + j, STEP(here[p], LD(in + j - 1), LD(in + j + 1), LD(in + j - sy), LD(in + j + sy), below[p], above));
                below[p] = here[p];
                here[p] = above;
            }
        }
    }
}
"""

YCOL = r"""
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int x = blockIdx.x * BX + threadIdx.x;
    const unsigned int yb = (blockIdx.y * BY + threadIdx.y) * P;
    const unsigned int zb = blockIdx.z * ZCHUNK;
    if (x >= nx || yb >= ny || zb >= nz) return;
    const unsigned int np = ny - yb < P ? ny - yb : P;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    I i = ((I)zb + 1) * sz + ((I)yb + 1) * sy + x + 1;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    T below[P], here[P];
#pragma unroll
    for (unsigned int p = 0; p < P; ++p) {
        below[p] = here[p] = 0;
        if (p < np) { below[p] = LD(in + i + p * sy - sz); here[p] = LD(in + i + p * sy); }
    }
    UNROLL_PRAGMA
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        const T south = LD(in + i - sy);
        const T north = LD(in + i + np * sy);
        T above[P];
#pragma unroll
        for (unsigned int p = 0; p < P; ++p) above[p] = p < np ? LD(in + i + p * sy + sz) : (T)0;
#pragma unroll
        for (unsigned int p = 0; p < P; ++p) {
            if (p < np) {
                const I j = i + p * sy;
                const T s = p == 0 ? south : here[p == 0 ? 0 : p - 1];
                const T n = p + 1 < np ? here[p + 1 < P ? p + 1 : p] : north;
                ST(out + j, STEP(here[p], LD(in + j - 1), LD(in + j + 1), s, n, below[p], above[p]));
            }
        }
#pragma unroll
        for (unsigned int p = 0; p < P; ++p) { below[p] = here[p]; here[p] = above[p]; }
    }
}
"""

XVEC2 = r"""
/* Two consecutive points (x0, x0 + 1) per item. Where the rows have an even length (nx even; the
   array's start is 256-byte aligned), index i - 1 of point x0 (x0 even) is even on every row, so a
   row's 4 values x0 - 1 .. x0 + 2 are two aligned 2-vectors. */
#define LD2(p) (*(const T2*)(p))
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int x0 = (blockIdx.x * BX + threadIdx.x) * 2;
    const unsigned int y = blockIdx.y * BY + threadIdx.y;
    const unsigned int zb = blockIdx.z * ZCHUNK;
    if (x0 >= nx || y >= ny || zb >= nz) return;
    const bool two = x0 + 1 < nx;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    I i = ((I)zb + 1) * sz + ((I)y + 1) * sy + x0 + 1;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    T b0 = LD(in + i - sz), b1 = LD(in + i + 1 - sz);
    T w, h0, h1, e;
    if ((sy & 1) == 0) {
        const T2 l = LD2(in + i - 1), r = LD2(in + i + 1);
        w = l.x; h0 = l.y; h1 = r.x; e = r.y;
        UNROLL_PRAGMA
        for (unsigned int z = zb; z < zend; ++z, i += sz) {
            const T2 al = LD2(in + i + sz - 1), ar = LD2(in + i + sz + 1);
            const T2 sl = LD2(in + i - sy - 1), sr = LD2(in + i - sy + 1);
            const T2 nl = LD2(in + i + sy - 1), nr = LD2(in + i + sy + 1);
            ST(out + i, STEP(h0, w, h1, sl.y, nl.y, b0, al.y));
            if (two) ST(out + i + 1, STEP(h1, h0, e, sr.x, nr.x, b1, ar.x));
            b0 = h0; b1 = h1;
            w = al.x; h0 = al.y; h1 = ar.x; e = ar.y;
        }
    } else {
        w = LD(in + i - 1); h0 = LD(in + i); h1 = LD(in + i + 1); e = LD(in + i + 2);
        UNROLL_PRAGMA
        for (unsigned int z = zb; z < zend; ++z, i += sz) {
            const T aw = LD(in + i + sz - 1), a0 = LD(in + i + sz), a1 = LD(in + i + sz + 1),
                    ae = LD(in + i + sz + 2);
            ST(out + i, STEP(h0, w, h1, LD(in + i - sy), LD(in + i + sy), b0, a0));
            if (two) ST(out + i + 1, STEP(h1, h0, e, LD(in + i + 1 - sy), LD(in + i + 1 + sy), b1, a1));
            b0 = h0; b1 = h1;
            w = aw; h0 = a0; h1 = a1; e = ae;
        }
    }
}
"""

POINT = r"""
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int y = blockIdx.y * BY + threadIdx.y;
    const unsigned int z = blockIdx.z * BZ + threadIdx.z;
    if (y >= ny || z >= nz) return;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    const I row = ((I)z + 1) * sz + ((I)y + 1) * sy;  /* the row's x = -1 */
#if ALIGN
    /* Items start at the 128-byte boundary at or below the row's x = -1 (array column 0). */
    const int c = (int)(blockIdx.x * BX + threadIdx.x) - (int)(row % (128 / sizeof(T)));
    if (c < 1 || c > (int)nx) return;
    const I i = row + (unsigned int)c;
#else
    const unsigned int x = blockIdx.x * BX + threadIdx.x;
    if (x >= nx) return;
    const I i = row + x + 1;
#endif
    ST(out + i, STEP(LD(in + i), LD(in + i - 1), LD(in + i + 1), LD(in + i - sy), LD(in + i + sy),
                     LD(in + i - sz), LD(in + i + sz)));
}
"""

SMEM = r"""
#define TW (BX + 2)
#define TH (BY + 2)
#define NT (BX * BY)
#define NWARPS ((NT + 31) / 32)
#define AL (128 / sizeof(T))
/* Tile row r, column c (0 .. TW - 1) of array plane pz: the array's row gy0 + r, column gx0 + c;
   a whole warp per row, from the row's 128-byte boundary below gx0 where ALIGN. */
__device__ __forceinline__ void load_plane(T (*buf)[TW], const T* __restrict__ in, I pz, I sy, I sz,
                                           unsigned int gy0, unsigned int gx0, unsigned int ny,
                                           unsigned int nx, unsigned int warp, unsigned int lane)
{
    for (unsigned int r = warp; r < TH; r += NWARPS) {
        const unsigned int gy = gy0 + r;
        if (gy > ny + 1) break;
        const I rs = pz * sz + (I)gy * sy + gx0;
#if ALIGN
        const unsigned int s = (unsigned int)(rs % AL);
#else
        const unsigned int s = 0;
#endif
        const I base = rs - s;
        for (unsigned int k = lane; k < TW + s; k += 32) {
            const int c = (int)k - (int)s;
            if (c >= 0 && gx0 + (unsigned int)c <= nx + 1) buf[r][c] = LD(in + base + k);
        }
    }
}

extern "C" __global__ void LB stencil(ARGS)
{
#ifdef EMU
    T (*tile)[TH][TW] = (T (*)[TH][TW])emu_shared();
#else
    __shared__ T tile[3][TH][TW];
#endif
    const unsigned int tx = threadIdx.x, ty = threadIdx.y;
    const unsigned int tid = ty * BX + tx, lane = tid & 31, warp = tid >> 5;
    const unsigned int gx0 = blockIdx.x * BX, gy0 = blockIdx.y * BY;
    const unsigned int x = gx0 + tx, y = gy0 + ty;
    const unsigned int zb = blockIdx.z * ZCHUNK;
    const bool mine = x < nx && y < ny;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    I i = ((I)zb + 1) * sz + ((I)y + 1) * sy + x + 1;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    T (*cur)[TW] = tile[0];
    T (*nxt)[TW] = tile[1];
    T (*spare)[TW] = tile[2];
    load_plane(cur, in, (I)zb + 1, sy, sz, gy0, gx0, ny, nx, warp, lane);
    T below = 0, here = 0;
    if (mine) { below = LD(in + i - sz); here = LD(in + i); }
    UNROLL_PRAGMA
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        /* Ring of three: nxt was last read two planes ago, before the previous barrier. */
        load_plane(nxt, in, (I)z + 2, sy, sz, gy0, gx0, ny, nx, warp, lane);
#if ABOVE_SMEM
        __syncthreads();
        const T above = nxt[ty + 1][tx + 1];
#else
        T above = 0;
        if (mine) above = LD(in + i + sz);
        __syncthreads();
#endif
        if (mine)
            ST(out + i, STEP(here, cur[ty + 1][tx], cur[ty + 1][tx + 2], cur[ty][tx + 1], cur[ty + 2][tx + 1], below, above));
        below = here;
        here = above;
        T (*t)[TW] = cur;
        cur = nxt;
        nxt = spare;
        spare = t;
    }
}
"""


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
