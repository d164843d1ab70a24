// SPDX-License-Identifier: BSD-3-Clause
// Arrays of 1, 2 or 3 dimensions distributed over a process grid (GridLayout), with halos on
// every side.
//
// A GridArray holds one block per local member, each a C-ordered skein::Array on that member's
// device of shape layout.block_shape(member, true): its points framed by halo(axis) ghost cells
// on both sides of every axis, then the components axis when there is one. exchange_halos()
// fills the ghost cells as the layout says (grid_layout.hpp: neighbours' edge cells, periodic
// wrap-around, mirrors, constants; open sides left alone; with a star stencil edges and corners
// unspecified), for several arrays at once.
//
// Collective calls (marked so) must be made by every rank of the communicator, in the same order,
// with the same layout, dtype and roots, as for DistArray; the words member and rank are
// dist_array.hpp's.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "skein/array.hpp"
#include "skein/buffer.hpp"
#include "skein/communicator.hpp"
#include "skein/dtype.hpp"
#include "skein/export.hpp"
#include "skein/grid_layout.hpp"
#include "skein/multi_device.hpp"
#include "skein/queue.hpp"

namespace skein {

namespace detail::grid {
class HaloCache;
struct GridArrayAccess;
}  // namespace detail::grid

// One local member's block of a GridArray.
struct LocalGridBlock {
  std::size_t local_device = 0;  // index among this rank's members
  std::size_t member = 0;        // communicator rank
  std::size_t device_idx = 0;    // in the communicator's context
  GridBlock block{};             // global offset and extent per axis
  Array with_halo;               // layout.block_shape(member, true), C order
  Array interior;                // the points without the halo: a strided view of with_halo
};

// A global array split over a process grid. Blocks start as zeros, halos included. A cheap handle:
// copies share the blocks; the array shares the communicator (as DistArray does). Device work is
// enqueued on queue(); host transfers return when they are done. Threads: as DistArray.
class SKEIN_EXPORT GridArray {
 public:
  // Collective: every rank passes the same layout and dtype (checked: a mismatch raises LogicError
  // on every rank). The layout must describe `comm`'s members; `queue` must be over the
  // communicator's context and hold its devices (by default a new queue over the context).
  GridArray(Communicator& comm, GridLayout layout, Dtype dtype);
  GridArray(Communicator& comm, const Queue& queue, GridLayout layout, Dtype dtype);
  // Collective: over blocks the application already has, one Buffer per local member in local
  // order (e.g. skein::cuda::buffer_from_native over its own per-device allocations), each on
  // that member's device and holding its block with the halo (layout.block_shape(member, true),
  // C order: points and ghost cells together, components last). Nothing is copied or zeroed: the
  // blocks keep their contents. A buffer of another context, on the wrong device or too small, or
  // a count other than local members, raises LogicError on every rank. A member without points
  // needs no memory (its buffer may be empty; the array's empty block is its own).
  GridArray(Communicator& comm, const Queue& queue, GridLayout layout, Dtype dtype,
            std::vector<Buffer> blocks);

  Communicator& communicator() const { return *comm_; }
  const Queue& queue() const { return queue_; }
  const GridLayout& layout() const { return layout_; }
  Dtype dtype() const { return dtype_; }
  std::size_t size() const { return layout_.size(); }  // global elements
  std::size_t nbytes() const { return size() * itemsize(dtype_); }
  int rank() const { return rank_; }

  std::size_t local_size() const { return blocks_.size(); }
  const LocalGridBlock& block(std::size_t local_device) const;
  const std::vector<LocalGridBlock>& blocks() const { return blocks_; }
  Array local(std::size_t local_device) const { return block(local_device).interior; }
  Array local_with_halo(std::size_t local_device) const { return block(local_device).with_halo; }
  // The blocks keyed by context device index, as kernel arguments for a launch on queue().
  MultiDevice<Array> local_arrays(bool with_halo = true) const;

  // Collective: the root rank's host array (the whole global array, C order, layout().
  // global_shape()) to every block's points (halos are not written). Other ranks' `host` is not
  // read (pass an empty span).
  void scatter(std::span<const std::byte> host, int root_rank) const;
  template <class T>
  void scatter(std::span<const T> host, int root_rank) const {
    check_host_type(dtype_of<T>, "GridArray::scatter");
    scatter(std::as_bytes(host), root_rank);
  }
  template <class T>
  void scatter(const std::vector<T>& host, int root_rank) const {
    scatter(std::span<const T>(host), root_rank);
  }
  // Collective: the whole global array on the root rank's host (empty on the others).
  std::vector<std::byte> gather_bytes(int root_rank) const;
  template <class T>
  std::vector<T> gather(int root_rank) const {
    check_host_type(dtype_of<T>, "GridArray::gather");
    const auto bytes = gather_bytes(root_rank);
    std::vector<T> out(bytes.size() / sizeof(T));
    // Empty on the other ranks: no copy (memcpy must not see their null pointers).
    if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  // Collective: fills this array's halos (see skein::exchange_halos below).
  void exchange_halos() const;
  void exchange_halos(const Queue& queue) const;

  // Not collective: zeros in every local block, halos included.
  void fill_zero() const;

 private:
  GridArray(Communicator& comm, const Queue& queue, GridLayout layout, Dtype dtype,
            std::vector<Buffer> foreign, bool use_foreign);
  void check_host_type(Dtype host, const char* call) const;
  void check_root_rank(int root_rank, const char* call) const;
  friend struct detail::grid::GridArrayAccess;

  std::shared_ptr<Communicator> comm_;
  Queue queue_;
  GridLayout layout_;
  Dtype dtype_ = Dtype::uint8;
  int rank_ = 0;
  std::vector<LocalGridBlock> blocks_;
  // What exchange_halos keeps between calls (its plans, launches and staging), shared by copies.
  std::shared_ptr<detail::grid::HaloCache> halo_cache_;
};

// Collective: fills the halos of `arrays` (one layout and one communicator; dtypes may differ) as
// their layout says: neighbours on this rank by device copies, on other ranks by grouped
// Communicator send/recv (all of one call's in one group). A face along axis 0 (the first,
// slowest axis) between members on different devices, with a star stencil or no halo along the
// other axes, moves unpacked: its ghost planes, whole (the block with halo's full extent along
// the other axes, so the neighbour's own ghost cells beside its face come too, into this block's
// edge and corner cells, which a star stencil leaves unspecified), are one contiguous range of
// each block; each array's goes in one copy or send/recv of its own, straight from the
// neighbour's block into this one. The other ghost cells between devices travel in one message per
// pair of members holding every array's regions, packed and unpacked by kernels (one batched
// launch per device for each); those whose points are on the same device are copied straight
// into place. Under the NCCL backend, a message (a pair's packed message, or one array's whole
// planes) between two devices of one rank of fewer than 256 KiB goes as an NCCL send and recv in
// the call's group instead of a device copy (on 2 x H200 small faces took 24-26 us as peer copies
// against 15-17 us for NCCL's send/recv; faces of 1 MiB and more meet their floor as peer copies,
// so larger messages keep them) when the exchange runs on the arrays' own queue (given another
// queue, to overlap their kernels, it keeps the copies, which leave the SMs to the kernels); the
// MPI backend copies them all. Enqueued on `queue` (a queue of
// the arrays' context
// with their devices; by default the first array's queue); nothing orders it with the arrays' own
// queues (as DistArray::exchange_halos(queue)). Nothing to do without a halo or without arrays.
// The first call for a queue and a list of dtypes plans the exchange, and the first array keeps
// the plan (its tables, launches and staging buffers, on the device) for later calls with arrays
// of that layout and those dtypes on that queue, which then plan and allocate nothing (the faces
// that move as whole planes need no staging).
SKEIN_EXPORT void exchange_halos(std::span<const GridArray> arrays);
SKEIN_EXPORT void exchange_halos(const Queue& queue, std::span<const GridArray> arrays);

// Collective: `to`'s points become `from`'s (the same global array under another layout: another
// process grid, slabs to pencils, members with no points in one of them). Both arrays are over one
// communicator, with one global shape, number of components and dtype (else LogicError). Each pair
// of a source and a destination member whose blocks overlap moves the overlap in one message: in
// place when both are on one device, a device copy between devices of a rank, Communicator
// send/recv (every pair in one group) between ranks. `to`'s halos are not written. Enqueued on
// `queue` (by default `to.queue()`, after the work enqueued so far on `from.queue()`).
SKEIN_EXPORT void redistribute(const GridArray& from, const GridArray& to);
SKEIN_EXPORT void redistribute(const Queue& queue, const GridArray& from, const GridArray& to);

}  // namespace skein
