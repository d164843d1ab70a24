// SPDX-License-Identifier: BSD-3-Clause
// The source of skein-heat's stencil kernels on a process grid (heat_solver3d.cpp compiles it with
// Program::from_template: ${T}, ${DIMS}, ${HALO}, ${STEPS}, ${ZCHUNK}, ${SHARED}, ${COLUMN}, ${LX},
// ${LY}, ${UNROLL_PRAGMA}).
#pragma once

namespace skein::heat {

// One source for both backends. Both kernels compute a point by one expression (HEAT_POINT: the
// 2-D kernel's, with the z terms added last); FP contraction is off (here for OpenCL, --fmad=false
// for NVRTC), so a point's value depends neither on how the grid is split nor on which kernel
// computed it: the overlapped step (interior, then shell) gives the serial step's bits.
//   heat_step_grid   work item (x, y, z) updates the points (z0 + z * ZCHUNK + k, y0 + y, x0 + x),
//                    k < ZCHUNK, of a box of ez x ey x ex points of the block (the whole block,
//                    or its interior box), keeping the planes below and at each point in
//                    registers (3-D); with SHARED (GridKernel::shared, 3-D) a group loads each
//                    plane's tile of LX x LY points with its x/y halo once into local memory and
//                    takes the x/y neighbours and the plane above from there
//   heat_shell_grid  work item k updates the k-th point of the block's shell: the block less its
//                    interior box [z0, z1) x [y0, y1) x [x0, x1), taken as the whole planes below
//                    z0 and from z1, then in the planes between them the whole rows below y0 and
//                    from y1, then in the rows between those the points below x0 and from x1
//                    (up to six slabs in one launch; an empty interior box is given as
//                    z0 = z1 = nz: every plane)
//   heat_step2_grid  (STEPS 2, 3-D, a halo of 2) two steps in one launch over a box of the block: a
//                    group of (LX + 2) x (LY + 2) items marches along z computing the first step
//                    on its LX x LY tile of the box and a ring of one point around it (ghost cells
//                    included, beside an open wall left as they are: 0), keeps each plane of that
//                    in local memory (a ring of four, one barrier per plane), and its inner LX x LY
//                    items compute the second step one plane behind from there. Each step is
//                    HEAT_POINT's expression, so the two give the bits of two launches of
//                    heat_step_grid with an exchange between them (the ring beside a neighbour or
//                    a periodic or reflecting wall is what that exchange would have brought).
// `in` and `out` are the blocks with their halo of HALO cells on every side ((y, x) in 2-D, nz 1).
inline constexpr const char* grid_stencil_source = R"(
#ifdef OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
#define DIMS ${DIMS}
#define HALO ${HALO}
#define STEPS ${STEPS}
#define ZCHUNK ${ZCHUNK}
#define SHARED ${SHARED}
#define COLUMN ${COLUMN}
#define LX ${LX}
#define LY ${LY}
typedef ${T} T;

#if DIMS == 3
#define HEAT_POINT(i) (c0 * in[i] + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy]) \
                       + rz * (in[i - sz] + in[i + sz]))
#else
#define HEAT_POINT(i) (c0 * in[i] + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy]))
#endif

WITHIN_KERNEL INLINE VSIZE_T heat_index(unsigned int z, unsigned int y, unsigned int x, VSIZE_T sy, VSIZE_T sz)
{
#if DIMS == 3
    return ((VSIZE_T)z + HALO) * sz + ((VSIZE_T)y + HALO) * sy + x + HALO;
#else
    return ((VSIZE_T)y + HALO) * sy + x + HALO;
#endif
}

#if DIMS == 3 && SHARED
#define TW (LX + 2)
#define TH (LY + 2)
#define NWARPS ((LX * LY + 31) / 32)
/* Rows r < rows, columns c < cols of a tile from the block's row `row` + r * sy (column 0 at the
   row's index): 32 work items per row, each row from the 128-byte boundary at or below its first
   value (what lies before it read by no item). */
WITHIN_KERNEL INLINE void heat_load_tile(LOCAL_MEM_ARG T (*tile)[TW], GLOBAL_MEM const T* RESTRICT in,
                                         VSIZE_T row, VSIZE_T sy, unsigned int rows,
                                         unsigned int cols, unsigned int warp, unsigned int lane)
{
    for (unsigned int r = warp; r < rows; r += NWARPS) {
        const VSIZE_T first = row + r * sy;
        const unsigned int skip = (unsigned int)(first % (128 / sizeof(T)));
        for (unsigned int k = lane; k < cols + skip; k += 32) {
            if (k >= skip) tile[r][k - skip] = in[first - skip + k];
        }
    }
}
#endif

/* The work item's index along x or y in 32 bits (a block's extents are unsigned int). Along z the
   groups are one item deep, so a march starts at the group's index times ZCHUNK: taken from
   get_global_id(2) (the z item and the group's depth, unknown to the compiler), the march took 44
   registers instead of 32 on sm_90 (nvcc -Xptxas -v), and a group of 512 items then fit twice on
   a multiprocessor instead of four times. */
WITHIN_KERNEL INLINE unsigned int heat_item(unsigned int dim)
{
    return (unsigned int)get_group_id(dim) * (unsigned int)get_local_size(dim) + (unsigned int)get_local_id(dim);
}

KERNEL void heat_step_grid(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                           unsigned int ny, unsigned int nx,
                           unsigned int z0, unsigned int y0, unsigned int x0,
                           unsigned int ez, unsigned int ey, unsigned int ex,
                           T c0, T rz, T ry, T rx)
{
#if DIMS == 3 && SHARED
    /* The group's tile of each plane (with its x/y halo) in local memory, in a ring of three: the
       plane of the point (cur) and the one above (next), loaded while the third is free; the
       planes below and at the point in registers. Every item of the group takes part in the loads
       and barriers; only those on a point of the box store. */
    LOCAL_MEM T ring[3][TH][TW];
    const unsigned int tx = (unsigned int)get_local_id(0), ty = (unsigned int)get_local_id(1);
    const unsigned int lane = (ty * LX + tx) % 32, warp = (ty * LX + tx) / 32;
    const unsigned int gx = (unsigned int)get_group_id(0) * LX, gy = (unsigned int)get_group_id(1) * LY;
    const unsigned int zb = (unsigned int)get_group_id(2) * ZCHUNK;
    const int mine = gx + tx < ex && gy + ty < ey;
    const VSIZE_T sy = (VSIZE_T)nx + 2 * HALO;
    const VSIZE_T sz = ((VSIZE_T)ny + 2 * HALO) * sy;
    const unsigned int rows = (ey - gy < LY ? ey - gy : LY) + 2;
    const unsigned int cols = (ex - gx < LX ? ex - gx : LX) + 2;
    const VSIZE_T corner = ((VSIZE_T)y0 + gy) * sy + x0 + gx;  /* the tile's (0, 0) in a plane */
    VSIZE_T i = heat_index(z0 + zb, y0 + gy + ty, x0 + gx + tx, sy, sz);
    const unsigned int zend = ez - zb < ZCHUNK ? ez : zb + ZCHUNK;
    LOCAL_MEM_ARG T (*cur)[TW] = ring[0];
    LOCAL_MEM_ARG T (*next)[TW] = ring[1];
    LOCAL_MEM_ARG T (*spare)[TW] = ring[2];
    heat_load_tile(cur, in, ((VSIZE_T)z0 + zb + 1) * sz + corner, sy, rows, cols, warp, lane);
    T below = 0, here = 0;
    if (mine) {
        below = in[i - sz];
        here = in[i];
    }
#ifndef OPENCL /* PoCL does not unroll a loop with a barrier (and warns) */
${UNROLL_PRAGMA}
#endif
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        /* next was last read two planes ago, before the previous barrier */
        heat_load_tile(next, in, ((VSIZE_T)z0 + z + 2) * sz + corner, sy, rows, cols, warp, lane);
        LOCAL_BARRIER;
        const T above = next[ty + 1][tx + 1];
        if (mine) {
            out[i] = c0 * here + rx * (cur[ty + 1][tx] + cur[ty + 1][tx + 2])
                     + ry * (cur[ty][tx + 1] + cur[ty + 2][tx + 1]) + rz * (below + above);
        }
        below = here;
        here = above;
        LOCAL_MEM_ARG T (*t)[TW] = cur;
        cur = next;
        next = spare;
        spare = t;
    }
#elif DIMS == 3 && COLUMN > 1
    /* COLUMN consecutive points along y per work item, each marching along z as below; the y
       neighbours inside the column are the registers of its other points. */
    const unsigned int x = heat_item(0);
    const unsigned int yb = heat_item(1) * COLUMN;
    const unsigned int zb = (unsigned int)get_group_id(2) * ZCHUNK;
    if (x >= ex || yb >= ey || zb >= ez) return;
    const unsigned int np = ey - yb < COLUMN ? ey - yb : COLUMN; /* points of this column */
    const VSIZE_T sy = (VSIZE_T)nx + 2 * HALO;
    const VSIZE_T sz = ((VSIZE_T)ny + 2 * HALO) * sy;
    VSIZE_T i = heat_index(z0 + zb, y0 + yb, x0 + x, sy, sz);
    const unsigned int zend = ez - zb < ZCHUNK ? ez : zb + ZCHUNK;
    T below[COLUMN], here[COLUMN], above[COLUMN];
#pragma unroll
    for (unsigned int p = 0; p < COLUMN; ++p) {
        below[p] = here[p] = 0;
        if (p < np) {
            below[p] = in[i + p * sy - sz];
            here[p] = in[i + p * sy];
        }
    }
${UNROLL_PRAGMA}
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        const T south = in[i - sy], north = in[i + np * sy];
#pragma unroll
        for (unsigned int p = 0; p < COLUMN; ++p) above[p] = p < np ? in[i + p * sy + sz] : (T)0;
#pragma unroll
        for (unsigned int p = 0; p < COLUMN; ++p) {
            if (p < np) {
                const VSIZE_T j = i + p * sy;
                const T s = p == 0 ? south : here[p == 0 ? 0 : p - 1];
                const T n = p + 1 < np ? here[p + 1 < COLUMN ? p + 1 : p] : north;
                out[j] = c0 * here[p] + rx * (in[j - 1] + in[j + 1]) + ry * (s + n) + rz * (below[p] + above[p]);
            }
        }
#pragma unroll
        for (unsigned int p = 0; p < COLUMN; ++p) {
            below[p] = here[p];
            here[p] = above[p];
        }
    }
#else
    const unsigned int x = heat_item(0);
    const unsigned int y = heat_item(1);
    const unsigned int zb = (unsigned int)get_group_id(2) * ZCHUNK;
    if (x >= ex || y >= ey || zb >= ez) return;
    const VSIZE_T sy = (VSIZE_T)nx + 2 * HALO;
    const VSIZE_T sz = ((VSIZE_T)ny + 2 * HALO) * sy;
    VSIZE_T i = heat_index(z0 + zb, y0 + y, x0 + x, sy, sz);
#if DIMS == 3
    /* March along z: the planes below and at the point stay in registers, one new plane is read
       per point (HEAT_POINT's expression, term for term). */
    const unsigned int zend = ez - zb < ZCHUNK ? ez : zb + ZCHUNK;
    T below = in[i - sz], here = in[i];
${UNROLL_PRAGMA}
    for (unsigned int z = zb; z < zend; ++z, i += sz) {
        const T above = in[i + sz];
        out[i] = c0 * here + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy]) + rz * (below + above);
        below = here;
        here = above;
    }
#else
    out[i] = HEAT_POINT(i);
#endif
#endif
}

#if DIMS == 3 && STEPS == 2
/* `open`: bit 0 (1) the block's side below x is an open wall, 1 (2) above x, then y (4, 8) and
   z (16, 32); `nz` the block's planes. The items of a group past the box's ring load nothing and
   store nothing, but take part in the barriers. */
#ifdef CUDA
/* At most 32 registers, so that 2048 items fit on a multiprocessor (4 groups of 32 x 16): at
   nvcc 13.0's own choice of 40 (sm_90) 3 groups fit, and the kernel ran at 0.665 of the copy floor
   per step on an H200, where tools/stencil3d-sweep.py's tb2 at 31 registers ran at 1.075; bounded,
   0.88; with the item's state in `role` (fewer live values), 0.96 unrolled 2 and 1.10 unrolled 4
   (docs/performance.md, stop 56). nvcc spills nothing under the bound. */
#define HEAT_STEP2_BOUNDS __launch_bounds__((LX + 2) * (LY + 2), 2048 / ((LX + 2) * (LY + 2)))
#else
#define HEAT_STEP2_BOUNDS
#endif
KERNEL HEAT_STEP2_BOUNDS void heat_step2_grid(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                            unsigned int ny, unsigned int nx,
                            unsigned int z0, unsigned int y0, unsigned int x0,
                            unsigned int ez, unsigned int ey, unsigned int ex,
                            unsigned int nz, unsigned int open,
                            T c0, T rz, T ry, T rx)
{
    LOCAL_MEM T ring[4][LY + 2][LX + 2];
    const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
    const int x = (int)(x0 + (unsigned int)get_group_id(0) * LX) + tx - 1;  /* -1 .. nx */
    const int y = (int)(y0 + (unsigned int)get_group_id(1) * LY) + ty - 1;
    const unsigned int zb = (unsigned int)get_group_id(2) * ZCHUNK;
    const unsigned int zend = ez - zb < ZCHUNK ? ez : zb + ZCHUNK;
    const unsigned int planes = zend - zb + 2;  /* of the first step: the chunk and its ring */
    /* The item's role, in as few registers as can be (each one more cost a group per
       multiprocessor): bit 0 its column is beyond an open wall (the first step keeps its value),
       bit 1 the first step computes it, bit 2 it stores the second step. */
    unsigned int role = 0;
    if (x <= (int)(x0 + ex) && y <= (int)(y0 + ey)) {
        const int wall = (x < 0 && (open & 1u)) || (x >= (int)nx && (open & 2u)) ||
                         (y < 0 && (open & 4u)) || (y >= (int)ny && (open & 8u));
        role = wall ? 1u : 2u;
        if (tx >= 1 && tx <= LX && ty >= 1 && ty <= LY && x < (int)(x0 + ex) && y < (int)(y0 + ey))
            role |= 4u;
    }
    /* The chunk's planes beyond an open wall along z: its first (k = 0) or last (planes - 1). */
    const unsigned int kz0 = z0 + zb == 0 && (open & 16u) ? 0u : planes;
    const unsigned int kz1 = z0 + zend == nz && (open & 32u) ? planes - 1 : planes;
    const VSIZE_T sy = (VSIZE_T)nx + 2 * HALO;
    const VSIZE_T sz = ((VSIZE_T)ny + 2 * HALO) * sy;
    /* the ring's plane below the chunk first: z0 + zb - 1 */
    VSIZE_T i = ((VSIZE_T)(z0 + zb) + HALO - 1) * sz + (VSIZE_T)(y + HALO) * sy + (VSIZE_T)(x + HALO);
    T below = 0, here = 0, above = 0;
    if (role & 3u) {
        below = in[i - sz];
        here = in[i];
    }
#ifndef OPENCL /* PoCL does not unroll a loop with a barrier (and warns) */
${UNROLL_PRAGMA}
#endif
    for (unsigned int k = 0; k < planes; ++k, i += sz) {
        T w = 0;
        if (role & 3u) {
            above = in[i + sz];
            w = (role & 1u) || k == kz0 || k == kz1
                    ? here
                    : c0 * here + rx * (in[i - 1] + in[i + 1]) + ry * (in[i - sy] + in[i + sy]) + rz * (below + above);
        }
        ring[k & 3u][ty][tx] = w;
        LOCAL_BARRIER;
        if (k >= 2 && (role & 4u)) {
            const unsigned int m = (k - 1) & 3u;
            out[i - sz] = c0 * ring[m][ty][tx] + rx * (ring[m][ty][tx - 1] + ring[m][ty][tx + 1])
                          + ry * (ring[m][ty - 1][tx] + ring[m][ty + 1][tx])
                          + rz * (ring[(k - 2) & 3u][ty][tx] + ring[k & 3u][ty][tx]);
        }
        below = here;
        here = above;
    }
}
#endif

KERNEL void heat_shell_grid(GLOBAL_MEM T* RESTRICT out, GLOBAL_MEM const T* RESTRICT in,
                            unsigned int nz, unsigned int ny, unsigned int nx,
                            unsigned int z0, unsigned int z1, unsigned int y0, unsigned int y1,
                            unsigned int x0, unsigned int x1,
                            T c0, T rz, T ry, T rx)
{
    VSIZE_T k = (VSIZE_T)get_global_id(0);
    const VSIZE_T plane = (VSIZE_T)ny * nx;
    const VSIZE_T in_z = (VSIZE_T)(z0 + (nz - z1)) * plane;
    unsigned int z, y, x;
    if (k < in_z) {
        const VSIZE_T p = k / plane, r = k % plane;
        z = (unsigned int)(p < z0 ? p : z1 + (p - z0));
        y = (unsigned int)(r / nx);
        x = (unsigned int)(r % nx);
    } else {
        k -= in_z;
        const VSIZE_T rows = (VSIZE_T)y0 + (ny - y1);  /* shell rows per plane between z0 and z1 */
        const VSIZE_T in_y = (VSIZE_T)(z1 - z0) * rows * nx;
        if (k < in_y) {
            const VSIZE_T row = k / nx, yy = row % rows;
            x = (unsigned int)(k % nx);
            z = z0 + (unsigned int)(row / rows);
            y = (unsigned int)(yy < y0 ? yy : y1 + (yy - y0));
        } else {
            k -= in_y;
            const VSIZE_T points = (VSIZE_T)x0 + (nx - x1);  /* shell points per row between y0 and y1 */
            if (k >= (VSIZE_T)(z1 - z0) * (y1 - y0) * points) return;
            const VSIZE_T row = k / points, xx = k % points;
            z = z0 + (unsigned int)(row / (y1 - y0));
            y = y0 + (unsigned int)(row % (y1 - y0));
            x = (unsigned int)(xx < x0 ? xx : x1 + (xx - x0));
        }
    }
    const VSIZE_T sy = (VSIZE_T)nx + 2 * HALO;
    const VSIZE_T sz = ((VSIZE_T)ny + 2 * HALO) * sy;
    const VSIZE_T i = heat_index(z, y, x, sy, sz);
    out[i] = HEAT_POINT(i);
}
)";

}  // namespace skein::heat
