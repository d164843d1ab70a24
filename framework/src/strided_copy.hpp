// SPDX-License-Identifier: BSD-3-Clause
// The hooks through which Array (array.cpp) copies elements between layouts that no rectangular
// copy covers, and zeroes a view that no memset covers: that takes a kernel, and kernels are the
// layer above Array. The hooks are declared here, beneath Array, and defined by that layer
// (elementwise_builtins.cpp, with skein::copy's and skein::fill's kernels), so that Array includes
// no kernel layer's header and the kernel layers, which use Array, do not come back into it.
#pragma once

namespace skein {
class Array;
class Queue;
}  // namespace skein

namespace skein::detail {

// dst = src, element by element, enqueued on `queue` without waiting: any strides, one shape and
// dtype, both arrays on one device of the queue.
void strided_copy(const Queue& queue, const Array& src, const Array& dst);
// Every element of `dst` set to zero, enqueued on `queue` without waiting: any strides.
void strided_fill_zero(const Queue& queue, const Array& dst);

}  // namespace skein::detail
