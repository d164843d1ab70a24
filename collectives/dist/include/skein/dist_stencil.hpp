// SPDX-License-Identifier: BSD-3-Clause
// Stencil kernels (skein/stencil.hpp) over every local block of distributed arrays: GridArrays
// (blocks of a 1-3-D process grid with halos on every side) or DistArrays (row blocks with halo
// rows), with no launcher of the user's:
//
//   skein::StencilKernel step("T u, T r", "T out",
//                             "out = u + r * (u(-1, 0, 0) + u(1, 0, 0) + u(0, -1, 0) + u(0, 1, 0) "
//                             "+ u(0, 0, -1) + u(0, 0, 1) - 6 * u)", {.name = "heat7"});
//   u.exchange_halos();
//   skein::dist::stencil(step, {u, 0.1, next});
//
// Each member's block is launched with its geometry: the domain is the layout's global shape
// (without components), the offset the block's first point, the halo the layout's width per axis
// (a DistArray: its rows' first index and halo rows along axis 0, none along axis 1). Fields are
// the blocks' points (views into the blocks with their halos, so neighbour reads within the halo
// width see the ghost cells: exchange_halos() first), scalars are broadcast; a raw parameter's
// pointer is at the block's first point when it is given a distributed array, and at element 0
// of per_member[i] when it is given per-member arrays (dist_ops.hpp: `raw double s` -> s[0], the
// same value at every point; give per-member arrays to raw parameters only: a field parameter
// would take the one array as the block's points, and the kernel refuses its shape). Members
// without points launch nothing.
//
// Overlapping the exchange with the update, without a launcher of the user's:
//
//   u.exchange_halos(halo_queue);                                 // the ghost cells move while
//   skein::dist::stencil(step, {u, 0.1, next}, skein::StencilRegion::interior);  // this runs
//   for (std::size_t d : queue.device_idxs()) queue.wait_for(halo_queue.record_marker(d), d);
//   skein::dist::stencil(step, {u, 0.1, next}, skein::StencilRegion::edges);
//
// (`queue` is u's queue, `halo_queue` a second queue over the same devices; the exchange must
// also wait for the work that wrote u: halo_queue.wait_for(queue.record_marker(d), d) first.)
//
// Not collective (no communication); enqueued on `queue` (by default the first distributed
// operand's), after the work the operands' own queues hold (device-side markers, as
// dist::elementwise). Operands agree as for dist::elementwise (GridArrays: the same points layout,
// halos may differ; DistArrays: the same layout and shape; not both kinds), else LogicError.
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "skein/dist_ops.hpp"
#include "skein/dist_reductions.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"
#include "skein/stencil.hpp"

namespace skein::dist {

// A kernel with a reduction (StencilOptions::reduction), as the matvec of a CG with the dot
// product of p and w:
//
//   skein::StencilKernel apply("double p", "double w", "w = 4 * p - p(-1, 0) - p(1, 0) - ...",
//                              {.name = "poisson", .reduction = skein::StencilReduction{.map = "p *
//                              w"}});
//   const double pw = skein::dist::stencil_reduce(apply, {p, w}, skein::ReduceOp::sum);
//
// runs the stencil over every local block as dist::stencil does and, in the same pass, reduces
// the map over every member's region; the members' values are combined with `across` in one
// all_reduce (collective: every rank calls it), the value returned on every rank. Fast mode only
// (options.deterministic: LogicError; for a deterministic value, run the kernel without its
// reduction and reduce what it wrote with dist::reduce). begin_stencil_reduce is the split-phase
// form (PendingValues::wait() gives the one value).
[[nodiscard]] SKEIN_EXPORT PendingValues begin_stencil_reduce(
    const StencilKernel& kernel, std::span<const DistOperand> args, ReduceOp across,
    StencilRegion region = StencilRegion::all, const DistReductionOptions& options = {});
[[nodiscard]] inline PendingValues begin_stencil_reduce(const StencilKernel& kernel,
                                                        std::initializer_list<DistOperand> args,
                                                        ReduceOp across,
                                                        StencilRegion region = StencilRegion::all,
                                                        const DistReductionOptions& options = {}) {
  return begin_stencil_reduce(kernel, std::span<const DistOperand>(args.begin(), args.size()),
                              across, region, options);
}
inline double stencil_reduce(const StencilKernel& kernel, std::span<const DistOperand> args,
                             ReduceOp across, StencilRegion region = StencilRegion::all,
                             const DistReductionOptions& options = {}) {
  return begin_stencil_reduce(kernel, args, across, region, options).wait().at(0);
}
inline double stencil_reduce(const StencilKernel& kernel, std::initializer_list<DistOperand> args,
                             ReduceOp across, StencilRegion region = StencilRegion::all,
                             const DistReductionOptions& options = {}) {
  return begin_stencil_reduce(kernel, args, across, region, options).wait().at(0);
}

// The same reduction with its value left on the devices (the matvec of a CG whose next kernel
// reads p.w from device memory): one one-element Array per local member (local block order), of
// the reduction's dtype, on the member's device, from the queue's array pool; equal on every
// member of every rank once the queue gets there. Collective as stencil_reduce; fast mode only
// (LogicError for options.deterministic, as begin_stencil_reduce). What waits where: as
// dist::reduce_to_devices (dist_reductions.hpp): with NCCL nothing waits on the host; with the
// MPI backend the all_reduce waits on the host for the devices' values.
SKEIN_EXPORT std::vector<Array> stencil_reduce_to_devices(const StencilKernel& kernel,
                                                          std::span<const DistOperand> args,
                                                          ReduceOp across,
                                                          StencilRegion region = StencilRegion::all,
                                                          const DistReductionOptions& options = {});
inline std::vector<Array> stencil_reduce_to_devices(const StencilKernel& kernel,
                                                    std::initializer_list<DistOperand> args,
                                                    ReduceOp across,
                                                    StencilRegion region = StencilRegion::all,
                                                    const DistReductionOptions& options = {}) {
  return stencil_reduce_to_devices(kernel, std::span<const DistOperand>(args.begin(), args.size()),
                                   across, region, options);
}

// The halo exchange overlapped with a reduction's interior, without a launcher of the user's: the
// halos of `exchange` (DistArrays or GridArrays, the fields the kernel reads around a point) move
// on `halo_queue`, a second queue over the fields' devices, while the kernel computes the interior
// of every local block on the fields' queue; each device then waits for its own halos (on the
// device: the host does not wait) and computes its edges, their values added to the interior's
// before the one all_reduce. The same value as exchange_halos() followed by the plain form (up to
// the order of the additions).
struct HaloOverlap {
  Queue halo_queue;
  std::vector<DistOperand> exchange;
};
// `exchange` keeps pointers to the arrays (as DistOperand does): they must outlive the HaloOverlap.
// `halo_queue` of another context or lacking a member's device, or an entry of `exchange` that is
// no DistArray or GridArray: LogicError on the rank that passed it, before anything is enqueued
// (pass the same on every rank). Collective: the exchange and the all_reduce, in that order.
SKEIN_EXPORT std::vector<Array> stencil_reduce_to_devices(const StencilKernel& kernel,
                                                          std::span<const DistOperand> args,
                                                          ReduceOp across,
                                                          const HaloOverlap& overlap,
                                                          const DistReductionOptions& options = {});
inline std::vector<Array> stencil_reduce_to_devices(const StencilKernel& kernel,
                                                    std::initializer_list<DistOperand> args,
                                                    ReduceOp across, const HaloOverlap& overlap,
                                                    const DistReductionOptions& options = {}) {
  return stencil_reduce_to_devices(kernel, std::span<const DistOperand>(args.begin(), args.size()),
                                   across, overlap, options);
}

// The kernel's reduction of every local member into element `slot` of into[i], not combined with
// the other members' (no collective): a term of a single collective made later by
// dist::combine_members (dist_reductions.hpp, "Member values": a single-reduction CG's w . r).
// Fast mode only; checks as stencil_reduce_to_devices, and `into` as dist_reductions.hpp says.
// The HaloOverlap form exchanges `overlap.exchange` on its queue while the interior is computed,
// as stencil_reduce_to_devices does (the exchange is collective: every rank calls it).
SKEIN_EXPORT void stencil_reduce_members(const StencilKernel& kernel,
                                         std::span<const DistOperand> args,
                                         std::span<const Array> into, std::size_t slot,
                                         StencilRegion region = StencilRegion::all);
inline void stencil_reduce_members(const StencilKernel& kernel,
                                   std::initializer_list<DistOperand> args,
                                   std::span<const Array> into, std::size_t slot,
                                   StencilRegion region = StencilRegion::all) {
  stencil_reduce_members(kernel, std::span<const DistOperand>(args.begin(), args.size()), into,
                         slot, region);
}
SKEIN_EXPORT void stencil_reduce_members(const StencilKernel& kernel,
                                         std::span<const DistOperand> args,
                                         std::span<const Array> into, std::size_t slot,
                                         const HaloOverlap& overlap);
inline void stencil_reduce_members(const StencilKernel& kernel,
                                   std::initializer_list<DistOperand> args,
                                   std::span<const Array> into, std::size_t slot,
                                   const HaloOverlap& overlap) {
  stencil_reduce_members(kernel, std::span<const DistOperand>(args.begin(), args.size()), into,
                         slot, overlap);
}

SKEIN_EXPORT void stencil(const StencilKernel& kernel, std::span<const DistOperand> args,
                          StencilRegion region = StencilRegion::all);
SKEIN_EXPORT void stencil(const Queue& queue, const StencilKernel& kernel,
                          std::span<const DistOperand> args,
                          StencilRegion region = StencilRegion::all);
inline void stencil(const StencilKernel& kernel, std::initializer_list<DistOperand> args,
                    StencilRegion region = StencilRegion::all) {
  stencil(kernel, std::span<const DistOperand>(args.begin(), args.size()), region);
}
inline void stencil(const Queue& queue, const StencilKernel& kernel,
                    std::initializer_list<DistOperand> args,
                    StencilRegion region = StencilRegion::all) {
  stencil(queue, kernel, std::span<const DistOperand>(args.begin(), args.size()), region);
}

}  // namespace skein::dist
