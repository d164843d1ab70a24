// SPDX-License-Identifier: BSD-3-Clause
// Operations on distributed arrays: the framework's single-device kernels on every local block,
// finished across members with the Communicator. See skein/dist_ops.hpp.
#include "skein/dist_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "skein/detail/errors.hpp"
#include "dist_values.hpp"
#include "grid_ops_impl.hpp"
#include "operand_checks.hpp"
#include "ordering.hpp"
#include "reduction_operands.hpp"
#include "skein/memory_pool.hpp"

namespace skein::dist {

namespace {

using checks::check_same_layout;
using checks::check_same_shape;
using detail::join_per_member;
using detail::Ordering;

std::vector<Array> reduce_builtin(const DistArray& x, const ReductionKernel& kernel,
                                  ReduceOp across, const DistReductionOptions& options) {
  return reduce(kernel, x, across, options);
}

}  // namespace

DistOperand::DistOperand(Operand scalar) {
  if (scalar.is_array()) {
    detail::raise_in(
        SKEIN_HERE, "dist::DistOperand",
        "Pass a DistArray, a GridArray or a scalar; single-device arrays cannot take part.",
        "a single-device Array was given as a distributed operand");
  }
  scalar_ = std::move(scalar);
}

void elementwise(const ElementwiseKernel& kernel, std::span<const DistOperand> args) {
  for (const auto& a : args) {
    if (a.grid() != nullptr) return on_grids::elementwise(kernel, args);
  }
  const DistArray* first = nullptr;
  for (const auto& a : args) {
    if (a.array() == nullptr) continue;
    if (first == nullptr) {
      first = a.array();
    } else {
      check_same_shape(*first, *a.array(), "dist::elementwise", "the distributed operands");
    }
  }
  if (first == nullptr) {
    detail::raise_in(SKEIN_HERE, "dist::elementwise", "Pass at least one DistArray.",
                     "kernel {}: no distributed operand", kernel.name());
  }
  const std::vector<std::size_t> devices = values::local_devices(*first);
  checks::check_per_member(args, first->queue(), devices, first->rank(), "dist::elementwise");
  Ordering order(first->queue(), devices);
  for (const auto& a : args) {
    if (a.array() != nullptr) order.join(a.array()->queue());
    if (a.per_member() != nullptr) join_per_member(order, *a.per_member());
  }
  std::vector<Operand> local;
  local.reserve(args.size());
  for (std::size_t i = 0; i < first->local_size(); ++i) {
    local.clear();
    for (const auto& a : args) {
      if (a.array() != nullptr) {
        local.emplace_back(a.array()->local(i));
      } else if (a.per_member() != nullptr) {
        local.emplace_back((*a.per_member())[i]);
      } else {
        local.push_back(*a.scalar());
      }
    }
    kernel(first->queue(), std::span<const Operand>(local));
  }
  order.release();
}

void axpy(const Operand& a, const DistArray& x, const DistArray& y, const DistArray& out) {
  check_same_shape(x, y, "dist::axpy", "x and y");
  check_same_shape(x, out, "dist::axpy", "x and out");
  Ordering order(x.queue(), values::local_devices(x));
  order.join(y.queue());
  order.join(out.queue());
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    skein::axpy(x.queue(), a, x.local(i), y.local(i), out.local(i));
  }
  order.release();
}

void scale(const Operand& a, const DistArray& x, const DistArray& out) {
  check_same_shape(x, out, "dist::scale", "x and out");
  Ordering order(x.queue(), values::local_devices(x));
  order.join(out.queue());
  for (std::size_t i = 0; i < x.local_size(); ++i)
    skein::scale(x.queue(), a, x.local(i), out.local(i));
  order.release();
}

void fill(const DistArray& out, const Operand& value) {
  for (std::size_t i = 0; i < out.local_size(); ++i) skein::fill(out.queue(), out.local(i), value);
}

void copy(const DistArray& src, const DistArray& dst) {
  check_same_shape(src, dst, "dist::copy", "src and dst");
  Ordering order(src.queue(), values::local_devices(src));
  order.join(dst.queue());
  for (std::size_t i = 0; i < src.local_size(); ++i)
    skein::copy(src.queue(), src.local(i), dst.local(i));
  order.release();
}

std::vector<Array> reduce(const ReductionKernel& kernel, const DistArray& x, ReduceOp across,
                          const DistReductionOptions& options) {
  if (!options.deterministic) {
    // One value per device (a block without rows gives the identity), then every member's. The
    // values come from the queue's pool: with a new device allocation per call and device (and
    // its free), a 16 GiB sum on 4 H200s took 53 us (4 ranks) and 165 us (one rank) longer than
    // the same steps into values kept from call to call (skein-bench sum's breakdown).
    return values::reduce_fast(kernel, x, across);
  }
  // A block of rows is one range of global indices.
  return values::reduce_canonical(kernel, x, [&](std::size_t i) {
    return static_cast<std::uint64_t>(x.local_rows(i).begin) * x.layout().row_size();
  });
}

namespace {
// dist::sum, min and max: each device's value, then (deterministic: the canonical tree on the
// devices) the reduction over devices and ranks.
double reduce_to_value(const DistArray& x, const ReductionKernel& kernel, ReduceOp across,
                       const DistReductionOptions& options, const char* call) {
  detail::require_outside_group(x.communicator(), call);
  if (options.deterministic)
    return values::checked_value(x, reduce_builtin(x, kernel, across, options).at(0), call);
  const Operand first(x.local(0));
  return values::combine_values(x, kernel.out_dtype(std::span<const Operand>(&first, 1)), across,
                                call, [&](std::size_t i, const Array& out) {
                                  const Operand in(x.local(i));
                                  kernel(x.queue(), std::span<const Operand>(&in, 1), {.out = out});
                                });
}
}  // namespace

double sum(const DistArray& x, const DistReductionOptions& options) {
  return reduce_to_value(x, sum_kernel(x.dtype()), ReduceOp::sum, options, "dist::sum");
}

double min(const DistArray& x, const DistReductionOptions& options) {
  values::require_nonempty(x, "dist::min");
  return reduce_to_value(x, min_kernel(x.dtype()), ReduceOp::min, options, "dist::min");
}

double max(const DistArray& x, const DistReductionOptions& options) {
  values::require_nonempty(x, "dist::max");
  return reduce_to_value(x, max_kernel(x.dtype()), ReduceOp::max, options, "dist::max");
}

double dot(const DistArray& x, const DistArray& y, const DistReductionOptions& options) {
  check_same_shape(x, y, "dist::dot", "x and y");
  const ReductionKernel& kernel = dot_kernel(x.dtype(), y.dtype());
  Communicator& comm = x.communicator();
  const Queue& queue = x.queue();
  // y is read on x's queue, after the work y's queue holds; the result is waited for before
  // returning, so y's later work cannot overtake the read (no release needed).
  detail::require_outside_group(comm, "dist::dot");
  if (options.deterministic) {
    // The canonical tree over the records of x and y together (the batches' path): no full-size
    // temporary.
    const DistOperand operands[] = {x, y};
    const reductions::Term term{&kernel, operands};
    return reductions::begin_terms(std::span<const reductions::Term>(&term, 1), ReduceOp::sum,
                                   options, "dist::dot")
        .wait()
        .at(0);
  }
  Ordering order(queue, values::local_devices(x));
  order.join(y.queue());
  const Operand first[] = {Operand(x.local(0)), Operand(y.local(0))};
  return values::combine_values(x, kernel.out_dtype(first), ReduceOp::sum, "dist::dot",
                                [&](std::size_t i, const Array& out) {
                                  const Operand in[] = {Operand(x.local(i)), Operand(y.local(i))};
                                  kernel(queue, in, {.out = out});
                                });
}

double nrm2(const DistArray& x, const DistReductionOptions& options) {
  return std::sqrt(dot(x, x, options));
}

void sum_rows(const DistArray& x, const DistArray& out) {
  if (x.shape().size() != 2 || out.shape().size() != 1 || out.shape()[0] != x.shape()[0]) {
    detail::raise_in(SKEIN_HERE, "dist::sum_rows", "Pass a 2-D array and a 1-D out of its rows.",
                     "rank {}: shapes {} and {}", x.rank(), to_string(x.shape()),
                     to_string(out.shape()));
  }
  check_same_layout(x, out, "dist::sum_rows", "x and out");
  Ordering order(x.queue(), values::local_devices(x));
  order.join(out.queue());
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    ReductionArgs args;
    args.axis = 1;
    args.out = out.local(i);
    skein::sum(x.queue(), x.local(i), args);
  }
  order.release();
}

void sum_columns(const DistArray& x, const ReplicatedArray& out) {
  if (x.shape().size() != 2 || out.shape() != Shape{x.shape()[1]}) {
    detail::raise_in(SKEIN_HERE, "dist::sum_columns",
                     "Pass a 2-D array and a replicated 1-D out of its columns.",
                     "rank {}: shapes {} and {}", x.rank(), to_string(x.shape()),
                     to_string(out.shape()));
  }
  Ordering order(x.queue(), values::local_devices(x));
  order.join(out.queue());
  std::vector<Array> partial, result;
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    ReductionArgs args;
    args.axis = 0;
    partial.push_back(skein::sum(x.queue(), x.local(i), args));
    result.push_back(out.local(i));
  }
  x.communicator().all_reduce(x.queue(), partial, result, ReduceOp::sum);
  order.release();
  // The partial sums are temporaries: the all_reduce reading them must be done.
  x.queue().synchronize();
}

double blas_dot(const DistArray& x, const DistArray& y) {
  check_same_shape(x, y, "dist::blas_dot", "x and y");
  // y is read on x's queue, after the work y's queue holds; the result is waited for before
  // returning, so y's later work cannot overtake the read (no release needed).
  Ordering order(x.queue(), values::local_devices(x));
  order.join(y.queue());
  std::vector<Array> results = values::scalars(x, x.dtype());
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    blas::dot(x.queue(), x.local(i).reshape({x.local(i).size()}),
              y.local(i).reshape({y.local(i).size()}), results[i]);
  }
  x.communicator().all_reduce(x.queue(), results, results, ReduceOp::sum);
  return values::checked_value(x, results.at(0), "dist::blas_dot");
}

double blas_nrm2(const DistArray& x) { return std::sqrt(blas_dot(x, x)); }

void gemv(double alpha, const DistArray& a, const ReplicatedArray& x, double beta,
          const DistArray& y) {
  if (a.shape().size() != 2 || y.shape().size() != 1 || a.shape()[0] != y.shape()[0] ||
      x.shape() != Shape{a.shape()[1]}) {
    detail::raise_in(SKEIN_HERE, "dist::gemv", "A is m x n, x has n elements, y has m.",
                     "rank {}: A {}, x {}, y {}", a.rank(), to_string(a.shape()),
                     to_string(x.shape()), to_string(y.shape()));
  }
  check_same_layout(a, y, "dist::gemv", "A and y");
  Ordering order(a.queue(), values::local_devices(a));
  order.join(x.queue());
  order.join(y.queue());
  for (std::size_t i = 0; i < a.local_size(); ++i) {
    blas::gemv(a.queue(), alpha, a.local(i), x.local(i), beta, y.local(i));
  }
  order.release();
}

void gemv(double alpha, const DistArray& a, const DistArray& x, double beta, const DistArray& y) {
  gemv(alpha, a, replicate(x), beta, y);
  // The replicated x is a temporary: the products reading it must be done.
  a.queue().synchronize();
}

void gemm(double alpha, const DistArray& a, const ReplicatedArray& b, double beta,
          const DistArray& c, const blas::GemmOptions& options) {
  if (options.trans_a) {
    detail::raise_in(SKEIN_HERE, "dist::gemm", "Transpose A before distributing it.",
                     "rank {}: trans_a is not supported for A split by rows", a.rank());
  }
  if (a.shape().size() != 2 || b.shape().size() != 2 || c.shape().size() != 2 ||
      a.shape()[0] != c.shape()[0]) {
    detail::raise_in(SKEIN_HERE, "dist::gemm", "A is m x k, B is k x n, C is m x n.",
                     "rank {}: A {}, B {}, C {}", a.rank(), to_string(a.shape()),
                     to_string(b.shape()), to_string(c.shape()));
  }
  check_same_layout(a, c, "dist::gemm", "A and C");
  Ordering order(a.queue(), values::local_devices(a));
  order.join(b.queue());
  order.join(c.queue());
  for (std::size_t i = 0; i < a.local_size(); ++i) {
    if (a.local(i).size() == 0) continue;  // a member without rows has nothing to compute
    blas::gemm(a.queue(), alpha, a.local(i), b.local(i), beta, c.local(i), options);
  }
  order.release();
}

void gemm(double alpha, const DistArray& a, const DistArray& b, double beta, const DistArray& c,
          const blas::GemmOptions& options) {
  gemm(alpha, a, replicate(b), beta, c, options);
  // The replicated B is a temporary: the products reading it must be done.
  a.queue().synchronize();
}

ReplicatedArray replicate(const DistArray& x) {
  Communicator& comm = x.communicator();
  const Queue& queue = x.queue();
  const BlockLayout& layout = x.layout();
  ReplicatedArray out(comm, queue, x.shape(), x.dtype());
  const std::size_t row_elems = layout.row_size();
  std::size_t tallest = 0;
  bool even = true;
  for (std::size_t m = 0; m < layout.members(); ++m) {
    tallest = std::max(tallest, layout.member_rows(m).size());
  }
  for (std::size_t m = 0; m < layout.members(); ++m)
    even = even && layout.member_rows(m).size() == tallest;
  if (even) {
    // Every block has the same rows: gather straight into the replicated arrays (blocks are
    // laid out in member order, which is row order).
    std::vector<Array> send, recv;
    for (std::size_t i = 0; i < x.local_size(); ++i) {
      send.push_back(x.local(i).reshape({x.local(i).size()}));
      recv.push_back(out.local(i).reshape({out.size()}));
    }
    comm.all_gather(queue, send, recv);
    return out;
  }
  // Uneven blocks: each is padded to the tallest, gathered, and unpacked row range by row range.
  const std::size_t block = tallest * row_elems;
  std::vector<Array> send, recv;
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    const std::size_t dev = x.block(i).device_idx;
    Array s = Array::zeros(queue, {block}, x.dtype(), dev, values::temporaries(queue));
    const Array local = x.local(i).reshape({x.local(i).size()});
    if (local.size() > 0) s.view(0, {local.size()}).set(local);
    send.push_back(s);
    recv.push_back(Array::empty(queue, {block * layout.members()}, x.dtype(), dev,
                                values::temporaries(queue)));
  }
  comm.all_gather(queue, send, recv);
  for (std::size_t i = 0; i < x.local_size(); ++i) {
    const Array flat = out.local(i).reshape({out.size()});
    for (std::size_t m = 0; m < layout.members(); ++m) {
      const RowRange rows = layout.member_rows(m);
      if (rows.empty()) continue;
      flat.view(rows.begin * row_elems, {rows.size() * row_elems})
          .set(recv[i].view(m * block, {rows.size() * row_elems}));
    }
  }
  // The temporaries go out of scope here: the copies reading them must be done first.
  queue.synchronize();
  return out;
}

}  // namespace skein::dist
