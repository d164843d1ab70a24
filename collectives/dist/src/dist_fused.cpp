// SPDX-License-Identifier: BSD-3-Clause
// dist::begin_update_and_reduce (skein/dist_fused.hpp): the FusedKernel's reduction as the one
// term of a batch (reduction_operands.hpp), each updated array passed twice as the kernel wants.
#include <vector>

#include "reduction_operands.hpp"
#include "skein/detail/errors.hpp"
#include "skein/dist_fused.hpp"

namespace skein::dist {

namespace {

// The checks that do not depend on the rank (so that a bad call raises on every rank).
void check_updated(const FusedKernel& kernel, std::span<const DistOperand> operands,
                   const char* call) {
  const std::size_t ni = kernel.input_count(), nu = kernel.update_count();
  if (operands.size() != ni + nu) {
    detail::raise_in(
        SKEIN_HERE, call, "Pass the inputs' operands, then the updated arrays.",
        "kernel '{}' takes {} input(s) and {} updated array(s); {} operands were given",
        kernel.name(), ni, nu, operands.size());
  }
  for (std::size_t j = ni; j < ni + nu; ++j) {
    const DistOperand& a = operands[j];
    if (a.array() == nullptr && a.grid() == nullptr) {
      detail::raise_in(SKEIN_HERE, call,
                       "Pass a DistArray or a GridArray for each updated parameter.",
                       "kernel '{}': updated operand {} is {}", kernel.name(), j - ni,
                       a.per_member() != nullptr ? "per-member arrays" : "a scalar");
    }
    const Dtype d = a.array() != nullptr ? a.array()->dtype() : a.grid()->dtype();
    if (d == Dtype::float16 || d == Dtype::bfloat16) {
      detail::raise_in(SKEIN_HERE, call, "Update arrays of a type computed as stored.",
                       "kernel '{}': updated operand {} is {}", kernel.name(), j - ni, name(d));
    }
    if (a.grid() != nullptr) {
      const GridLayout& layout = a.grid()->layout();
      for (std::size_t axis = 0; axis < layout.ndim(); ++axis) {
        if (layout.halo(axis) != 0) {
          detail::raise_in(SKEIN_HERE, call,
                           "Update GridArrays without halos (their blocks are then contiguous).",
                           "kernel '{}': updated operand {} has a halo of {} along axis {}",
                           kernel.name(), j - ni, layout.halo(axis), axis);
        }
      }
    }
  }
}

// The FusedKernel's reduction as the one term of a batch, checked, handed to `run` (begin_terms or
// terms_to_devices).
template <class Run>
auto with_fused_term(const FusedKernel& kernel, std::span<const DistOperand> operands,
                     const DistReductionOptions& options, const char* call, Run&& run) {
  check_updated(kernel, operands, call);
  std::vector<DistOperand> expanded(operands.begin(), operands.end());
  for (std::size_t j = kernel.input_count(); j < operands.size(); ++j)
    expanded.push_back(operands[j]);
  const reductions::Term term{&kernel.reduction(), expanded};
  const std::span<const reductions::Term> terms(&term, 1);
  if (options.deterministic) {
    const reductions::Operands ops(terms, call);
    if (!ops.in_ranges()) {
      detail::raise_in(SKEIN_HERE, call,
                       "Use DistArrays or grids split along axis 0 for a deterministic update, or "
                       "the fast mode.",
                       "kernel '{}': the grid's blocks are not ranges of global indices",
                       kernel.name());
    }
  }
  return run(terms);
}

}  // namespace

PendingValues begin_update_and_reduce(const FusedKernel& kernel,
                                      std::span<const DistOperand> operands, ReduceOp across,
                                      const DistReductionOptions& options) {
  const char* call = "dist::begin_update_and_reduce";
  return with_fused_term(kernel, operands, options, call,
                         [&](std::span<const reductions::Term> terms) {
                           return reductions::begin_terms(terms, across, options, call);
                         });
}

std::vector<Array> update_and_reduce_to_devices(const FusedKernel& kernel,
                                                std::span<const DistOperand> operands,
                                                ReduceOp across,
                                                const DistReductionOptions& options) {
  const char* call = "dist::update_and_reduce_to_devices";
  return with_fused_term(kernel, operands, options, call,
                         [&](std::span<const reductions::Term> terms) {
                           return reductions::terms_to_devices(terms, across, options, call);
                         });
}

void update_and_reduce_members(const FusedKernel& kernel, std::span<const DistOperand> operands,
                               std::span<const Array> into, std::size_t slot) {
  const char* call = "dist::update_and_reduce_members";
  with_fused_term(kernel, operands, DistReductionOptions{}, call,
                  [&](std::span<const reductions::Term> terms) {
                    reductions::terms_into(terms, into, slot, call);
                    return 0;
                  });
}

}  // namespace skein::dist
