// SPDX-License-Identifier: BSD-3-Clause
// The halo exchange of GridArrays (exchange_halos in grid_array.hpp): the call's checks, then
// this rank's routine for the layout, dtypes and queue (grid_halo_plan.hpp), made on the first
// call and kept by the first array (grid_halo_cache.hpp), replayed: one batched launch per device
// packs every staged message that leaves it, one fills the ghost cells whose points are on the
// same device (and the constants), the staged messages and the faces that move as whole planes
// (straight between the blocks) are device copies between devices of this rank and one group of
// Communicator send/recv between ranks, and one batched launch per device unpacks the staged
// messages that arrived. Under NCCL, the small messages between devices of this rank are sends and
// recvs in that group rather than device copies (kSendRecvInsideRankBelow).
#include <fmt/format.h>

#include <array>
#include <vector>

#include "dist_transport.hpp"
#include "grid_copy.hpp"
#include "grid_halo_cache.hpp"
#include "grid_halo_plan.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/error.hpp"
#include "skein/grid_array.hpp"

namespace skein {

using namespace detail::transport;

namespace {

using detail::grid::HaloRoutine;
using detail::grid::PlannedBatch;
using detail::grid::TransferData;

void check_arrays(const Queue& queue, std::span<const GridArray> arrays) {
  const char* call = "exchange_halos";
  const GridArray& first = arrays[0];
  for (std::size_t i = 1; i < arrays.size(); ++i) {
    if (!(arrays[i].layout() == first.layout()) ||
        arrays[i].communicator() != first.communicator()) {
      detail::raise_in(
          SKEIN_HERE, call,
          "Exchange arrays of one layout and one communicator together (or call once "
          "per layout).",
          "array {} has {}layout {}; array 0 has {}", i,
          arrays[i].communicator() != first.communicator() ? "another communicator and " : "",
          arrays[i].layout().describe(), first.layout().describe());
    }
  }
  if (!(queue.context() == first.queue().context())) {
    detail::raise_in(SKEIN_HERE, call, "Give a queue of the arrays' context.",
                     "the queue is of another context than the arrays (rank {})", first.rank());
  }
  for (const auto& b : first.blocks()) {
    if (!queue.has_device(b.device_idx)) {
      detail::raise_in(SKEIN_HERE, call, "Give a queue with every device of the arrays' queue.",
                       "the queue has no device {}, where local block {} lives (rank {})",
                       b.device_idx, b.local_device, first.rank());
    }
  }
}

// Launches each batch with the call's arrays in its slots.
void launch(std::span<const PlannedBatch> batches, std::span<const GridArray> arrays) {
  for (const PlannedBatch& b : batches) {
    std::vector<Array> slots;
    slots.reserve(detail::grid::kBatchSlots);
    for (const auto& s : b.slots) {
      slots.push_back(s.is_block ? arrays[s.array].blocks()[s.local].with_halo : *s.fixed);
    }
    while (slots.size() < detail::grid::kBatchSlots) slots.push_back(b.batch.table());
    b.batch(slots);
  }
}

// The bytes a copy or transfer moves: the routine's staging view, or a view (on the call's queue)
// of the range of one of the call's blocks.
Array bytes_of(const TransferData& d, const Queue& queue, std::span<const GridArray> arrays) {
  if (d.staging) return *d.staging;
  const Array& block = arrays[d.array].blocks()[d.local].with_halo;
  return Array(queue, block.data(), {d.bytes}, Dtype::uint8, {}, block.offset() + d.offset);
}

void run(const HaloRoutine& routine, const Queue& queue, std::span<const GridArray> arrays) {
  launch(routine.packs, arrays);
  launch(routine.direct, arrays);
  for (const auto& c : routine.device_copies)
    bytes_of(c.to, queue, arrays).set(bytes_of(c.from, queue, arrays));
  if (!routine.transfers.empty()) {
    Communicator& comm = arrays[0].communicator();
    in_group(comm, [&] {
      for (const auto& t : routine.transfers) {
        if (t.send) {
          comm.send(queue, t.local, bytes_of(t.data, queue, arrays), t.peer);
        } else {
          comm.recv(queue, t.local, bytes_of(t.data, queue, arrays), t.peer);
        }
      }
    });
    // A receive the watchdog aborted leaves the buffers unwritten: raise rather than unpack them.
    detail::require_usable(comm, "exchange_halos");
  }
  launch(routine.unpacks, arrays);
}

}  // namespace

void exchange_halos(std::span<const GridArray> arrays) {
  if (arrays.empty()) return;
  exchange_halos(arrays[0].queue(), arrays);
}

void exchange_halos(const Queue& queue, std::span<const GridArray> arrays) {
  if (arrays.empty()) return;
  check_arrays(queue, arrays);
  const GridArray& first = arrays[0];
  std::array<Dtype, 16> few{};
  std::vector<Dtype> many;
  std::span<const Dtype> dtypes;
  if (arrays.size() <= few.size()) {
    for (std::size_t k = 0; k < arrays.size(); ++k) few[k] = arrays[k].dtype();
    dtypes = std::span<const Dtype>(few.data(), arrays.size());
  } else {
    for (const GridArray& a : arrays) many.push_back(a.dtype());
    dtypes = many;
  }
  auto cached = detail::grid::GridArrayAccess::halo_cache(first).find(queue, dtypes, [&] {
    std::vector<std::size_t> devices;
    for (const auto& b : first.blocks()) devices.push_back(b.device_idx);
    // Under NCCL, small messages between this rank's devices go by send/recv on the arrays' own
    // queue (send_recv_inside_rank, dist_transport.hpp). The communicator is the array's for its
    // life, and the routine is cached per queue: no other key is needed for it.
    return detail::grid::make_halo_routine(
        queue, first.layout(), dtypes, first.layout().first_member_of_rank(first.rank()), devices,
        first.communicator().backend(), queue == first.queue());
  });
  const std::lock_guard lock(cached->running);
  run(cached->routine, queue, arrays);
}

}  // namespace skein
