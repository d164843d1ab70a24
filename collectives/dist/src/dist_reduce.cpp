// SPDX-License-Identifier: BSD-3-Clause
// dist::reduce over several operands (DistArrays or GridArrays' points, and scalars): see
// skein/dist_ops.hpp. The checks and local steps are reduction_operands.hpp's.
#include <optional>

#include "dist_values.hpp"
#include "ordering.hpp"
#include "reduction_operands.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/dist_ops.hpp"

namespace skein::dist {

std::vector<Array> reduce(const ReductionKernel& kernel, std::span<const DistOperand> inputs,
                          ReduceOp across, const DistReductionOptions& options) {
  const char* call = "dist::reduce";
  const reductions::Term term{&kernel, inputs};
  const std::span<const reductions::Term> terms(&term, 1);
  const reductions::Operands ops(terms, call);
  const Queue& queue = ops.queue();
  detail::Ordering order(queue, ops.devices());
  ops.join(order);
  const Dtype dtype = kernel.out_dtype(ops.local(term, 0));
  std::vector<Array> results;
  for (std::size_t i = 0; i < ops.local_size(); ++i) {
    results.push_back(Array::empty(queue, {1}, dtype, ops.device(i), values::temporaries(queue)));
  }
  if (!options.deterministic) {
    reductions::local_values(ops, terms, results);
    ops.communicator().all_reduce(queue, results, results, across);
    order.release();
    return results;
  }
  if (ops.in_ranges()) {
    reductions::canonical_values(ops, terms, results);
  } else {
    const reductions::SlabTerms slabs(terms, ops);
    const reductions::Operands slab_ops(slabs.terms(), call);
    reductions::canonical_values(slab_ops, slabs.terms(), results);
    // The slabs are plain allocations: the work reading them must be done before they go.
    queue.synchronize();
  }
  order.release();
  // As the single-input path: the result is complete when the call returns (and the records,
  // temporaries, are read).
  queue.synchronize();
  return results;
}

}  // namespace skein::dist
