// SPDX-License-Identifier: BSD-3-Clause
// The plan of a halo exchange (exchange_halos in grid_array.hpp), made once per layout, set of
// dtypes and queue and then replayed by every call (grid_halo_cache.hpp keeps it).
//
// The regions come from the layout alone, so every rank computes the same ones: each ghost
// region of each member with points (a face, and with a box stencil an edge or a corner: one
// direction -1, 0 or +1 per axis) is either left alone (beyond an open side), filled with a
// constant, or copied from one box of one member's points, mirrored along the axes where a
// reflecting wall maps it back into the domain. The layout's checks make each source box lie
// inside the source's points.
//
// This rank's part of an exchange is a HaloRoutine: regions whose source and destination are on
// one device are copied straight from the points into the ghost cells (and constants filled) by
// one batched launch per device. A face along axis 0 between members on different devices, where
// whole planes may move (whole_planes() below), moves unpacked: its h ghost planes of the
// destination's block with halo, whole, are one contiguous range, and so are the h planes of the
// source's block with halo that hold its points (the same plane size: neighbours along axis 0
// share their extents along the other axes); each array's range goes in one transfer of its own,
// straight from the source block into the destination block (a device copy inside the rank, a
// Communicator send/recv between ranks). The other regions between members on different devices
// travel in one message per pair of members, holding every array's regions (array-major, each
// segment aligned to 16 bytes): packed at the source by one batched launch per device into that
// device's one outgoing staging buffer (each message at its own offset), moved by a device copy
// (both on this rank) or by grouped Communicator send/recv into the destination device's one
// incoming buffer, unpacked there by one batched launch per device. Its staging buffers, tables
// and launches are made once.
//
// Between two devices of this rank, under the NCCL backend, a message (a staged message, or one
// array's whole planes) of fewer than kSendRecvInsideRankBelow bytes goes as a send and its
// matching recv in the exchange's one group instead of a device copy (see that constant in
// dist_transport.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "grid_copy.hpp"
#include "skein/array.hpp"
#include "skein/communicator.hpp"
#include "skein/dtype.hpp"
#include "skein/grid_layout.hpp"
#include "skein/queue.hpp"

namespace skein::detail::grid {

using Int4 = std::array<std::int64_t, 4>;

// One ghost region of a destination block, in the copy's four axes (grid_copy.hpp).
struct HaloRegion {
  std::size_t dst = 0;  // member
  Int4 extent{1, 1, 1, 1};
  Int4 dst_start{0, 0, 0, 0};  // in the destination's block with halo
  // A copy: the source member, the start of the first cell in its block with halo, and the step
  // along each axis (-1 where mirrored).
  std::size_t src = 0;
  Int4 src_start{0, 0, 0, 0};
  Int4 src_step{1, 1, 1, 1};
  std::optional<double> constant;   // set: filled with this instead
  std::array<int, 3> dir{0, 0, 0};  // the region's direction (-1, 0, +1) along each layout axis
};

// Every region of the layout's members with points that an exchange writes, in one order on
// every rank: by destination member, then direction.
std::vector<HaloRegion> plan_regions(const GridLayout& layout);

// Whether a region may move as whole planes of the blocks with halo: a copy (not a constant, not
// mirrored) between two different members, across a face along axis 0, in a layout where the
// other cells of those ghost planes (beside edges and corners) may be written too: a star stencil
// (which leaves them unspecified), or no halo along the other axes (no such cells).
bool whole_planes(const GridLayout& layout, const HaloRegion& region);

// The contiguous element ranges (components included) of such a region: the destination's ghost
// planes and the source's planes that fill them, in their blocks with halo.
struct PlaneRange {
  std::size_t dst_offset = 0, src_offset = 0, count = 0;  // elements
};
PlaneRange plane_range(const GridLayout& layout, const HaloRegion& region);

// Where one slot of a batched launch finds its array at each call.
struct SlotSource {
  bool is_block = true;
  std::size_t array = 0;       // a block: of the call's array `array`,
  std::size_t local = 0;       // this rank's member `local`
  std::optional<Array> fixed;  // else this array of the routine's own (staging, constants)
};

// One batched launch on one device and its slots.
struct PlannedBatch {
  BoxBatch batch;
  std::vector<SlotSource> slots;  // at most kBatchSlots
};

// The bytes one device copy or transfer moves: a staging view of the routine's own, or a range of
// one of the call's blocks (made into a view at each call, on the call's queue).
struct TransferData {
  std::optional<Array> staging;
  std::size_t array = 0;   // else: the call's array `array`,
  std::size_t local = 0;   // this rank's member `local`,
  std::size_t offset = 0;  // from this byte of its block with halo,
  std::size_t bytes = 0;   // this many
};

// This rank's part of one exchange, replayed by every call (see above).
struct HaloRoutine {
  struct DeviceCopy {
    TransferData from, to;  // on two devices of this rank
  };
  struct Transfer {
    std::size_t local = 0;  // this rank's member
    TransferData data;
    int peer = 0;  // the other member
    bool send = false;
  };
  std::vector<PlannedBatch> packs;   // into the messages' staging, per source device
  std::vector<PlannedBatch> direct;  // ghost cells from points on the same device, and constants
  std::vector<DeviceCopy> device_copies;  // staged messages, then whole planes
  // One group of send/recv: staged messages, then whole planes. A message between two members
  // of this rank (both sides here) is its send followed at once by its recv.
  std::vector<Transfer> transfers;
  std::vector<PlannedBatch> unpacks;  // from the messages' staging, per destination device
  std::size_t messages = 0;           // staged: pairs of members this rank sends or receives for
  std::size_t plane_faces = 0;        // faces this rank sends or receives as whole planes
};

// This rank's routine for arrays of `dtypes` on `layout`: its members are first_member.. on
// `devices` (one context device per local member), its launches and buffers on `queue`.
// `backend` is the communicator's: under NCCL, messages between two devices of this rank below
// kSendRecvInsideRankBelow bytes (dist_transport.hpp) are transfers (a send and its recv, next to
// each other) rather than device copies, when `on_arrays_queue` (the exchange runs on the arrays'
// own queue, not overlapped with their kernels on another).
HaloRoutine make_halo_routine(const Queue& queue, const GridLayout& layout,
                              std::span<const Dtype> dtypes, std::size_t first_member,
                              std::span<const std::size_t> devices, CollectiveBackend backend,
                              bool on_arrays_queue);

}  // namespace skein::detail::grid
