// SPDX-License-Identifier: BSD-3-Clause
// The members' values combined without a collective where one rank holds every member: each
// device reads the other devices' values through peer access and combines all of them itself
// (the *_to_devices reductions and dist::combine_members, dist_batch.cpp). An all_reduce of 8
// bytes over NCCL between the two GPUs of one rank took 17-19 us on 2 x H200 (docs/performance.md,
// "The NCCL path" and later sections); this is a small copy, a wait for the other devices on the
// device and one small kernel per device.
#pragma once

#include <cstddef>
#include <span>

#include "skein/array.hpp"
#include "skein/communicator.hpp"
#include "skein/dtype.hpp"
#include "skein/queue.hpp"

namespace skein::dist::values {

// Whether combine_on_peers applies: one rank holds every member of `comm` (and there are several),
// every pair of `devices` (the members' devices, in member order) has peer access enabled in the
// queue's context, `across` is sum, prod, min or max, and `dtype` is a real (not complex, not
// 16-bit float) type.
bool peers_can_combine(const Communicator& comm, const Queue& queue,
                       std::span<const std::size_t> devices, Dtype dtype, ReduceOp across);

// outs[i] (on devices[i]) = partials[0] op partials[1] op ... in member order, each element, on
// every device: the same bits on every member. `partials` and `outs` may be the same span (in
// place: the values are copied first then); otherwise no array of one is in the other. Enqueued on
// `queue`; each device waits on the device for the others' values, and later work on a device waits
// for every device that read its values. Needs peers_can_combine().
void combine_on_peers(const Queue& queue, std::span<const std::size_t> devices,
                      std::span<const Array> partials, std::span<const Array> outs,
                      ReduceOp across);

}  // namespace skein::dist::values
