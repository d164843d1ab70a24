// SPDX-License-Identifier: BSD-3-Clause
// skein.dist: operations on distributed arrays (DistArray and GridArray's points): elementwise
// built-ins, reductions to the host of every rank (one collective each, or several in one),
// BLAS, user kernels (ElementwiseKernel, ReductionKernel, StencilKernel, FusedKernel) over every
// local block. Every call that communicates or waits releases the GIL.
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "dist_common.hpp"
#include "skein/dist_fused.hpp"
#include "skein/dist_ops.hpp"
#include "skein/dist_reductions.hpp"
#include "skein/dist_stencil.hpp"
#include "skein/grid_array.hpp"

namespace skein::python {

namespace {

// A distributed array (its blocks) or a scalar. Holds pointers into the Python objects, which the
// caller's argument list keeps alive for the call.
dist::DistOperand to_dist_operand(const py::handle& obj, const char* call) {
  if (py::isinstance<DistArray>(obj)) return dist::DistOperand(obj.cast<const DistArray&>());
  if (py::isinstance<GridArray>(obj)) return dist::DistOperand(obj.cast<const GridArray&>());
  return dist::DistOperand(to_scalar_operand(obj, call));
}

std::vector<dist::DistOperand> to_dist_operands(const py::sequence& args, const char* call) {
  std::vector<dist::DistOperand> out;
  out.reserve(args.size());
  for (const auto item : args) out.push_back(to_dist_operand(item, call));
  return out;
}

StencilRegion to_region(const py::handle& obj, const char* call) {
  if (py::isinstance<py::str>(obj)) {
    const auto s = obj.cast<std::string>();
    if (s == "all") return StencilRegion::all;
    if (s == "interior") return StencilRegion::interior;
    if (s == "edges") return StencilRegion::edges;
  } else if (py::detail::get_type_info(typeid(StencilRegion)) != nullptr &&
             py::isinstance<StencilRegion>(obj)) {
    return obj.cast<StencilRegion>();
  }
  raise_argument(call, "region " + py::repr(obj).cast<std::string>() + " is not a region",
                 "Give 'all', 'interior' (points whose neighbours are all inside the block) or "
                 "'edges' (the others).");
}

dist::DistReductionOptions reduction_options(bool deterministic) {
  return dist::DistReductionOptions{.deterministic = deterministic};
}

// sum, min, max, dot and nrm2 over a DistArray or a GridArray's points.
template <class A>
void bind_reductions_of(py::module_& d) {
  d.def(
      "sum",
      [](const A& x, bool det) {
        const py::gil_scoped_release release;
        return dist::sum(x, reduction_options(det));
      },
      py::arg("x"), py::kw_only(), py::arg("deterministic") = false,
      "Collective: the sum of every element, as a float on every rank. deterministic: the same "
      "bits for any number of ranks and devices (slower).");
  d.def(
      "min",
      [](const A& x, bool det) {
        const py::gil_scoped_release release;
        return dist::min(x, reduction_options(det));
      },
      py::arg("x"), py::kw_only(), py::arg("deterministic") = false);
  d.def(
      "max",
      [](const A& x, bool det) {
        const py::gil_scoped_release release;
        return dist::max(x, reduction_options(det));
      },
      py::arg("x"), py::kw_only(), py::arg("deterministic") = false);
  d.def(
      "dot",
      [](const A& x, const A& y, bool det) {
        const py::gil_scoped_release release;
        return dist::dot(x, y, reduction_options(det));
      },
      py::arg("x"), py::arg("y"), py::kw_only(), py::arg("deterministic") = false,
      "Collective: sum of x * y (no conjugation) on every rank.");
  d.def(
      "nrm2",
      [](const A& x, bool det) {
        const py::gil_scoped_release release;
        return dist::nrm2(x, reduction_options(det));
      },
      py::arg("x"), py::kw_only(), py::arg("deterministic") = false);
}

// axpy, scale, fill, copy over one kind of distributed array (no communication).
template <class A>
void bind_elementwise_of(py::module_& d) {
  d.def(
      "axpy",
      [](const py::object& a, const A& x, const A& y, const A& out) {
        dist::axpy(to_scalar_operand(a, "dist.axpy"), x, y, out);
      },
      py::arg("a"), py::arg("x"), py::arg("y"), py::arg("out"), "out = a * x + y, block by block.");
  d.def(
      "scale",
      [](const py::object& a, const A& x, const A& out) {
        dist::scale(to_scalar_operand(a, "dist.scale"), x, out);
      },
      py::arg("a"), py::arg("x"), py::arg("out"), "out = a * x.");
  d.def(
      "fill",
      [](const A& out, const py::object& value) {
        dist::fill(out, to_scalar_operand(value, "dist.fill"));
      },
      py::arg("out"), py::arg("value"));
  d.def(
      "copy", [](const A& src, const A& dst) { dist::copy(src, dst); }, py::arg("src"),
      py::arg("dst"));
}

void bind_dist_blas(py::module_& d) {
  d.def(
      "sum_rows", [](const DistArray& x, const DistArray& out) { dist::sum_rows(x, out); },
      py::arg("x"), py::arg("out"), "out[i] = sum of row i (out: 1-D, the same row layout).");
  d.def(
      "sum_columns",
      [](const DistArray& x, const ReplicatedArray& out) {
        const py::gil_scoped_release release;
        dist::sum_columns(x, out);
      },
      py::arg("x"), py::arg("out"), "Collective: column sums into every device's `out`.");
  d.def(
      "blas_dot",
      [](const DistArray& x, const DistArray& y) {
        const py::gil_scoped_release release;
        return dist::blas_dot(x, y);
      },
      py::arg("x"), py::arg("y"));
  d.def(
      "blas_nrm2",
      [](const DistArray& x) {
        const py::gil_scoped_release release;
        return dist::blas_nrm2(x);
      },
      py::arg("x"));
  d.def(
      "replicate",
      [](const DistArray& x) {
        const py::gil_scoped_release release;
        return dist::replicate(x);
      },
      py::arg("x"), py::keep_alive<0, 1>(),
      "Collective: the whole array on every device (a ReplicatedArray).");
  // x / B: replicated, or distributed (all_gathered first).
  d.def(
      "gemv",
      [](double alpha, const DistArray& a, const py::object& x, double beta, const DistArray& y) {
        if (py::isinstance<ReplicatedArray>(x)) {
          const auto& r = x.cast<const ReplicatedArray&>();
          const py::gil_scoped_release release;
          dist::gemv(alpha, a, r, beta, y);
        } else {
          const auto& v = x.cast<const DistArray&>();
          const py::gil_scoped_release release;
          dist::gemv(alpha, a, v, beta, y);
        }
      },
      py::arg("alpha"), py::arg("a"), py::arg("x"), py::arg("beta"), py::arg("y"),
      "y = alpha * A @ x + beta * y; A and y split by rows, x replicated or distributed.");
  d.def(
      "gemm",
      [](double alpha, const DistArray& a, const py::object& b, double beta, const DistArray& c) {
        if (py::isinstance<ReplicatedArray>(b)) {
          const auto& r = b.cast<const ReplicatedArray&>();
          const py::gil_scoped_release release;
          dist::gemm(alpha, a, r, beta, c);
        } else {
          const auto& v = b.cast<const DistArray&>();
          const py::gil_scoped_release release;
          dist::gemm(alpha, a, v, beta, c);
        }
      },
      py::arg("alpha"), py::arg("a"), py::arg("b"), py::arg("beta"), py::arg("c"),
      "C = alpha * A @ B + beta * C; A and C split by rows, B replicated or distributed.");
}

void bind_batches(py::module_& d) {
  py::class_<dist::PendingValues>(d, "PendingValues",
                                  "Values being reduced (begin_dots, begin_sums, ...).")
      .def(
          "wait",
          [](dist::PendingValues& p) {
            const py::gil_scoped_release release;
            return p.wait();
          },
          "The values (a list of floats, the same on every rank); once.")
      .def_property_readonly("waited", &dist::PendingValues::waited);
  auto pairs_of = [](const py::sequence& pairs, const char* call) {
    std::vector<std::pair<dist::DistOperand, dist::DistOperand>> out;
    for (const auto p : pairs) {
      const auto t = p.cast<py::sequence>();
      if (t.size() != 2) {
        raise_argument(call, "a pair has " + std::to_string(t.size()) + " elements",
                       "Pass a list of (x, y) pairs.");
      }
      out.emplace_back(to_dist_operand(t[0], call), to_dist_operand(t[1], call));
    }
    return out;
  };
  d.def(
      "begin_dots",
      [pairs_of](const py::sequence& pairs, bool det) {
        const auto p = pairs_of(pairs, "dist.begin_dots");
        const py::gil_scoped_release release;
        return dist::begin_dots(p, reduction_options(det));
      },
      py::arg("pairs"), py::kw_only(), py::arg("deterministic") = false, py::keep_alive<0, 1>(),
      "Collective, split phase: x . y of each pair in one exchange; wait() gives them.");
  d.def(
      "dots",
      [pairs_of](const py::sequence& pairs, bool det) {
        const auto p = pairs_of(pairs, "dist.dots");
        const py::gil_scoped_release release;
        return dist::dots(p, reduction_options(det));
      },
      py::arg("pairs"), py::kw_only(), py::arg("deterministic") = false,
      "Collective: x . y of each (x, y) pair in one exchange, as a list on every rank.");
  d.def(
      "begin_sums",
      [](const py::sequence& arrays, bool det) {
        const auto a = to_dist_operands(arrays, "dist.begin_sums");
        const py::gil_scoped_release release;
        return dist::begin_sums(a, reduction_options(det));
      },
      py::arg("arrays"), py::kw_only(), py::arg("deterministic") = false, py::keep_alive<0, 1>());
  d.def(
      "sums",
      [](const py::sequence& arrays, bool det) {
        const auto a = to_dist_operands(arrays, "dist.sums");
        const py::gil_scoped_release release;
        return dist::sums(a, reduction_options(det));
      },
      py::arg("arrays"), py::kw_only(), py::arg("deterministic") = false,
      "Collective: the sum of each array in one exchange.");
}

void bind_kernels_over_blocks(py::module_& d) {
  d.def(
      "elementwise",
      [](const ElementwiseKernel& kernel, const py::sequence& args) {
        dist::elementwise(kernel, to_dist_operands(args, "dist.elementwise"));
      },
      py::arg("kernel"), py::arg("args"),
      "Runs an ElementwiseKernel on every local block (arguments in the kernel's order: "
      "distributed arrays of one layout and scalars).");
  d.def(
      "reduce",
      [](const ReductionKernel& kernel, const py::object& inputs, const py::object& across,
         bool det) {
        const auto in = py::isinstance<py::sequence>(inputs)
                            ? to_dist_operands(inputs, "dist.reduce")
                            : std::vector{to_dist_operand(inputs, "dist.reduce")};
        const ReduceOp op = to_reduce_op(across, "dist.reduce");
        const py::gil_scoped_release release;
        return dist::reduce(kernel, in, op, reduction_options(det));
      },
      py::arg("kernel"), py::arg("inputs"), py::arg("across") = "sum", py::kw_only(),
      py::arg("deterministic") = false,
      "Collective: a ReductionKernel over the whole array(s); one 1-element skein.Array per "
      "local device, equal on every member.");
  d.def(
      "stencil",
      [](const StencilKernel& kernel, const py::sequence& args, const py::object& region,
         const py::object& queue) {
        const auto a = to_dist_operands(args, "dist.stencil");
        const StencilRegion r = to_region(region, "dist.stencil");
        if (queue.is_none()) {
          dist::stencil(kernel, a, r);
        } else {
          dist::stencil(queue.cast<const Queue&>(), kernel, a, r);
        }
      },
      py::arg("kernel"), py::arg("args"), py::arg("region") = "all", py::arg("queue") = py::none(),
      "Runs a StencilKernel on every local block with its geometry (not collective: exchange "
      "the halos first).");
  d.def(
      "stencil_reduce",
      [](const StencilKernel& kernel, const py::sequence& args, const py::object& across,
         const py::object& region) {
        const auto a = to_dist_operands(args, "dist.stencil_reduce");
        const ReduceOp op = to_reduce_op(across, "dist.stencil_reduce");
        const StencilRegion r = to_region(region, "dist.stencil_reduce");
        const py::gil_scoped_release release;
        return dist::stencil_reduce(kernel, a, op, r);
      },
      py::arg("kernel"), py::arg("args"), py::arg("across") = "sum", py::arg("region") = "all",
      "Collective: the stencil, and its reduction over every member combined with `across`, "
      "returned on every rank.");
  d.def(
      "update_and_reduce",
      [](const FusedKernel& kernel, const py::sequence& operands, const py::object& across,
         bool det) {
        const auto a = to_dist_operands(operands, "dist.update_and_reduce");
        const ReduceOp op = to_reduce_op(across, "dist.update_and_reduce");
        const py::gil_scoped_release release;
        return dist::update_and_reduce(kernel, a, op, reduction_options(det));
      },
      py::arg("kernel"), py::arg("operands"), py::arg("across") = "sum", py::kw_only(),
      py::arg("deterministic") = false,
      "Collective: a FusedKernel's update of every block and its reduction, on every rank.");
}

}  // namespace

void bind_dist_ops(py::module_& m) {
  py::module_ d = m.def_submodule(
      "dist",
      "Operations on distributed arrays (DistArray, GridArray's points): every call "
      "that reduces to the host is collective (all ranks, in the same order).");
  bind_reductions_of<DistArray>(d);
  bind_reductions_of<GridArray>(d);
  bind_elementwise_of<DistArray>(d);
  bind_elementwise_of<GridArray>(d);
  bind_dist_blas(d);
  bind_batches(d);
  bind_kernels_over_blocks(d);
}

}  // namespace skein::python
