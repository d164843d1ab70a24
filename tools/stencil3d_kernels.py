# SPDX-License-Identifier: BSD-3-Clause
"""The CUDA sources of tools/stencil3d-sweep.py's variants (see its docstring for what each does).

Each variant's source is a block of #defines (the Variant's parameters), HEADER, then one of the
kernel bodies below; every body computes `out` from `in` on the (n+2)^3 halo layout by STEP, term
for term, so that every step variant gives the baseline's bits (tb2: two baseline steps').
"""

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

# The march's work item (x, y) and its chunk's first plane zb, the strides sy and sz (MARCH's and
# MCOPY's head).
MARCH_HEAD = r"""
extern "C" __global__ void LB stencil(ARGS)
{
    const unsigned int x = blockIdx.x * BX + threadIdx.x;
    const unsigned int y = blockIdx.y * BY + threadIdx.y;
    const unsigned int zb = blockIdx.z * ZCHUNK;
    if (x >= nx || y >= ny || zb >= nz) return;
    const I sy = ROW(nx);
    const I sz = ((I)ny + 2) * sy;
"""

MARCH = MARCH_HEAD + MARCH_COLUMN + "}\n"

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
MCOPY = MARCH_HEAD + r"""
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

TB2 = r"""
/* Two steps per pass (temporal blocking, kind tb2): a group of (BX + 2) x (BY + 2) items computes
   the first step on its BX x BY output tile and a ring of one point around it, marching along z
   (the march's registers, x/y neighbours from global memory), puts each plane of it in shared
   memory (a ring of four planes, one barrier per plane), and its BX x BY inner items compute the
   second step one plane behind from there. Ghost points keep their value between the steps (the
   two launches of the one-step kernel leave them alone). The same STEP, term for term, twice. */
#define EX (BX + 2)
#define EY (BY + 2)
extern "C" __global__ void LB stencil(ARGS)
{
    __shared__ T s1[4][EY][EX];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int X = (int)(blockIdx.x * BX) + tx;
    const int Y = (int)(blockIdx.y * BY) + ty;
    const unsigned int zb = blockIdx.z * ZCHUNK;
    const unsigned int zend = nz - zb < ZCHUNK ? nz : zb + ZCHUNK;
    const bool inside = X <= (int)nx + 1 && Y <= (int)ny + 1;
    const bool edge = X == 0 || Y == 0 || X == (int)nx + 1 || Y == (int)ny + 1;
    const bool item = tx >= 1 && tx <= BX && ty >= 1 && ty <= BY && X <= (int)nx && Y <= (int)ny;
    const I sy = (I)nx + 2;
    const I sz = ((I)ny + 2) * sy;
    I i = (I)zb * sz + (I)Y * sy + (I)X;
    T ub = 0, uh = 0, ua = 0;
    if (inside) {
        uh = LD(in + i);
        if (zb > 0) ub = LD(in + i - sz);
    }
    const unsigned int planes = zend - zb + 2;
    UNROLL_PRAGMA
    for (unsigned int k = 0; k < planes; ++k, i += sz) {
        const unsigned int pl = zb + k;
        T v = 0;
        if (inside) {
            ua = pl <= nz ? LD(in + i + sz) : (T)0;
            if (edge || pl == 0 || pl == nz + 1)
                v = uh;
            else
                v = STEP(uh, LD(in + i - 1), LD(in + i + 1), LD(in + i - sy), LD(in + i + sy), ub, ua);
        }
        s1[k & 3][ty][tx] = v;
        __syncthreads();
        if (k >= 2 && item) {
            const T (*m)[EX] = s1[(k - 1) & 3];
            ST(out + i - sz, STEP(m[ty][tx], m[ty][tx - 1], m[ty][tx + 1], m[ty - 1][tx],
                                  m[ty + 1][tx], s1[(k - 2) & 3][ty][tx], s1[k & 3][ty][tx]));
        }
        ub = uh;
        uh = ua;
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
