// SPDX-License-Identifier: BSD-3-Clause
// Whether the distributed operands of one operation agree: see operand_checks.hpp.
#include "operand_checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "skein/detail/errors.hpp"

namespace skein::dist::checks {

namespace {
const char* const kHint = "Make the distributed operands with the same BlockLayout.";

const char* const kGridHint =
    "Make the grid operands with one layout of points (shape, components, grid and sizes; halos "
    "may "
    "differ).";

}  // namespace

void check_same_layout(const DistArray& a, const DistArray& b, const char* call, const char* what) {
  if (a.communicator() != b.communicator()) {
    detail::raise_in(SKEIN_HERE, call, "Use arrays of one Communicator.",
                     "rank {}: {} belong to different communicators", a.rank(), what);
  }
  if (a.layout().rows() != b.layout().rows() || a.layout().members() != b.layout().members()) {
    detail::raise_in(SKEIN_HERE, call, kHint, "rank {}: {} have different layouts ({} vs {})",
                     a.rank(), what, a.layout().describe(), b.layout().describe());
  }
  for (std::size_t m = 0; m < a.layout().members(); ++m) {
    if (!(a.layout().member_rows(m) == b.layout().member_rows(m))) {
      detail::raise_in(
          SKEIN_HERE, call, kHint,
          "rank {}: {} split their rows differently (member {}: rows [{}, {}) vs [{}, {}))",
          a.rank(), what, m, a.layout().member_rows(m).begin, a.layout().member_rows(m).end,
          b.layout().member_rows(m).begin, b.layout().member_rows(m).end);
    }
  }
}

// Elementwise operands and dot's: the same global shape too (a layout only fixes the rows).
void check_same_shape(const DistArray& a, const DistArray& b, const char* call, const char* what) {
  check_same_layout(a, b, call, what);
  if (a.shape() != b.shape()) {
    detail::raise_in(SKEIN_HERE, call, "Give the operands one shape.",
                     "rank {}: {} have shapes {} and {}", a.rank(), what, to_string(a.shape()),
                     to_string(b.shape()));
  }
}

// The operands' points must lie on the same members: one communicator, global shape, components,
// grid and split along every axis. Layouts are the same on every rank (checked when the arrays
// were made), so every rank raises.
void check_same_points(const GridArray& a, const GridArray& b, const char* call, const char* what) {
  if (a.communicator() != b.communicator()) {
    detail::raise_in(SKEIN_HERE, call, "Use grid arrays of one Communicator.",
                     "rank {}: {} belong to different communicators", a.rank(), what);
  }
  const GridLayout& la = a.layout();
  const GridLayout& lb = b.layout();
  bool same = la.shape() == lb.shape() && la.components() == lb.components() &&
              la.grid() == lb.grid() && la.members_per_rank() == lb.members_per_rank();
  for (std::size_t axis = 0; same && axis < la.ndim(); ++axis)
    same = la.sizes(axis) == lb.sizes(axis);
  if (!same) {
    detail::raise_in(SKEIN_HERE, call, kGridHint, "rank {}: {} have different layouts ({} vs {})",
                     a.rank(), what, la.describe(), lb.describe());
  }
}

void check_per_member(std::span<const DistOperand> args, const Queue& queue,
                      std::span<const std::size_t> devices, int rank, const char* call) {
  for (std::size_t k = 0; k < args.size(); ++k) {
    const std::vector<Array>* arrays = args[k].per_member();
    if (arrays == nullptr) continue;
    if (arrays->size() != devices.size()) {
      detail::raise_in(
          SKEIN_HERE, call,
          "Pass one array per local member of the distributed operands, in local block order (as "
          "the *_to_devices reductions return them).",
          "rank {}: operand {} has {} per-member array(s) for {} local member(s) (on devices {})",
          rank, k, arrays->size(), devices.size(), fmt::join(devices, ", "));
    }
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const Array& a = (*arrays)[i];
      if (a.queue().context() != queue.context()) {
        detail::raise_in(SKEIN_HERE, call,
                         "Make the per-member arrays in the distributed operands' context.",
                         "rank {}: operand {}, block {} (device {}): the array is of another "
                         "context",
                         rank, k, i, devices[i]);
      }
      if (a.device_idx() != devices[i]) {
        detail::raise_in(SKEIN_HERE, call,
                         "Put per-member array i on the device of local block i (the order in "
                         "which the *_to_devices reductions return them).",
                         "rank {}: operand {}, block {}: the array is on device {}, the block on "
                         "device {}",
                         rank, k, i, a.device_idx(), devices[i]);
      }
    }
  }
}

}  // namespace skein::dist::checks
