// SPDX-License-Identifier: BSD-3-Clause
// skein.dist: operations on distributed arrays (DistArray and GridArray's points): elementwise
// built-ins, reductions to the host of every rank (one collective each, or several in one),
// BLAS, user kernels (ElementwiseKernel, ReductionKernel, StencilKernel, FusedKernel) over every
// local block. Every call that communicates or waits releases the GIL.
#include <list>
#include <memory>
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

// Per-member arrays of one call (Python lists of skein.Array, one per local member, as the
// *_to_devices functions return them), at stable addresses for the DistOperands that point to
// them.
using MemberLists = std::list<std::vector<Array>>;

bool is_member_list(const py::handle& obj) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) return false;
  const auto seq = obj.cast<py::sequence>();
  if (seq.size() == 0) return false;
  for (const auto item : seq) {
    if (!py::isinstance<Array>(item)) return false;
  }
  return true;
}

// A distributed array (its blocks), per-member arrays (kept in `members`) or a scalar. Holds
// pointers into the Python objects, which the caller's argument list keeps alive for the call.
dist::DistOperand to_dist_operand(const py::handle& obj, const char* call, MemberLists& members) {
  if (py::isinstance<DistArray>(obj)) return dist::DistOperand(obj.cast<const DistArray&>());
  if (py::isinstance<GridArray>(obj)) return dist::DistOperand(obj.cast<const GridArray&>());
  if (is_member_list(obj)) {
    std::vector<Array>& arrays = members.emplace_back();
    for (const auto item : obj.cast<py::sequence>()) arrays.push_back(item.cast<Array>());
    return dist::DistOperand(arrays);
  }
  return dist::DistOperand(to_scalar_operand(obj, call));
}

// The operands of one call and the per-member arrays they point to.
struct DistArgs {
  MemberLists members;
  std::vector<dist::DistOperand> ops;
};

std::unique_ptr<DistArgs> to_dist_operands(const py::sequence& args, const char* call) {
  auto out = std::make_unique<DistArgs>();
  out->ops.reserve(args.size());
  for (const auto item : args) out->ops.push_back(to_dist_operand(item, call, out->members));
  return out;
}

py::list to_py_list(std::vector<Array> arrays) {
  py::list out;
  for (Array& a : arrays) out.append(py::cast(std::move(a)));
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
  auto pairs_of = [](const py::sequence& pairs, const char* call, MemberLists& members) {
    std::vector<std::pair<dist::DistOperand, dist::DistOperand>> out;
    for (const auto p : pairs) {
      const auto t = p.cast<py::sequence>();
      if (t.size() != 2) {
        raise_argument(call, "a pair has " + std::to_string(t.size()) + " elements",
                       "Pass a list of (x, y) pairs.");
      }
      out.emplace_back(to_dist_operand(t[0], call, members), to_dist_operand(t[1], call, members));
    }
    return out;
  };
  d.def(
      "begin_dots",
      [pairs_of](const py::sequence& pairs, bool det) {
        MemberLists members;
        const auto p = pairs_of(pairs, "dist.begin_dots", members);
        const py::gil_scoped_release release;
        return dist::begin_dots(p, reduction_options(det));
      },
      py::arg("pairs"), py::kw_only(), py::arg("deterministic") = false, py::keep_alive<0, 1>(),
      "Collective, split phase: x . y of each pair in one exchange; wait() gives them.");
  d.def(
      "dots",
      [pairs_of](const py::sequence& pairs, bool det) {
        MemberLists members;
        const auto p = pairs_of(pairs, "dist.dots", members);
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
        return dist::begin_sums(a->ops, reduction_options(det));
      },
      py::arg("arrays"), py::kw_only(), py::arg("deterministic") = false, py::keep_alive<0, 1>());
  d.def(
      "sums",
      [](const py::sequence& arrays, bool det) {
        const auto a = to_dist_operands(arrays, "dist.sums");
        const py::gil_scoped_release release;
        return dist::sums(a->ops, reduction_options(det));
      },
      py::arg("arrays"), py::kw_only(), py::arg("deterministic") = false,
      "Collective: the sum of each array in one exchange.");
  d.def(
      "dots_to_devices",
      [pairs_of](const py::sequence& pairs, bool det) {
        MemberLists members;
        const auto p = pairs_of(pairs, "dist.dots_to_devices", members);
        std::vector<Array> out;
        {
          const py::gil_scoped_release release;
          out = dist::dots_to_devices(p, reduction_options(det));
        }
        return to_py_list(std::move(out));
      },
      py::arg("pairs"), py::kw_only(), py::arg("deterministic") = false,
      "Collective: x . y of each pair, left on the devices: a list with one skein.Array per local "
      "member (its values, in the pairs' order), which the next calls take as an operand read "
      "through `raw` parameters.");
  d.def(
      "sums_to_devices",
      [](const py::sequence& arrays, bool det) {
        const auto a = to_dist_operands(arrays, "dist.sums_to_devices");
        std::vector<Array> out;
        {
          const py::gil_scoped_release release;
          out = dist::sums_to_devices(a->ops, reduction_options(det));
        }
        return to_py_list(std::move(out));
      },
      py::arg("arrays"), py::kw_only(), py::arg("deterministic") = false,
      "Collective: the sum of each array, left on the devices (as dots_to_devices).");
}

void bind_kernels_over_blocks(py::module_& d) {
  d.def(
      "elementwise",
      [](const PyElementwise& kernel, const py::sequence& args) {
        const auto a = to_dist_operands(args, "dist.elementwise");
        dist::elementwise(kernel.kernel, a->ops);
      },
      py::arg("kernel"), py::arg("args"),
      "Runs an ElementwiseKernel on every local block (arguments in the kernel's order: "
      "distributed arrays of one layout and scalars).");
  d.def(
      "reduce",
      [](const ReductionKernel& kernel, const py::object& inputs, const py::object& across,
         bool det) {
        const py::sequence seq = py::isinstance<py::sequence>(inputs) && !is_member_list(inputs)
                                     ? inputs.cast<py::sequence>()
                                     : py::sequence(py::make_tuple(inputs));
        const auto in = to_dist_operands(seq, "dist.reduce");
        const ReduceOp op = to_reduce_op(across, "dist.reduce");
        const py::gil_scoped_release release;
        return dist::reduce(kernel, in->ops, op, reduction_options(det));
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
          dist::stencil(kernel, a->ops, r);
        } else {
          dist::stencil(queue.cast<const Queue&>(), kernel, a->ops, r);
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
        return dist::stencil_reduce(kernel, a->ops, op, r);
      },
      py::arg("kernel"), py::arg("args"), py::arg("across") = "sum", py::arg("region") = "all",
      "Collective: the stencil, and its reduction over every member combined with `across`, "
      "returned on every rank.");
  py::class_<dist::HaloOverlap>(
      d, "HaloOverlap",
      "The halo exchange of `exchange` (DistArrays or GridArrays) on `halo_queue` while a "
      "stencil_reduce_to_devices computes the interior (it keeps the arrays alive).")
      .def(py::init([](const Queue& halo_queue, const py::sequence& exchange) {
             dist::HaloOverlap o{.halo_queue = halo_queue, .exchange = {}};
             for (const auto item : exchange) {
               if (py::isinstance<DistArray>(item)) {
                 o.exchange.emplace_back(item.cast<const DistArray&>());
               } else if (py::isinstance<GridArray>(item)) {
                 o.exchange.emplace_back(item.cast<const GridArray&>());
               } else {
                 raise_argument("dist.HaloOverlap",
                                py::repr(item).cast<std::string>() + " is not a distributed array",
                                "List the DistArrays or GridArrays whose halos to exchange.");
               }
             }
             return o;
           }),
           py::arg("halo_queue"), py::arg("exchange"), py::keep_alive<1, 3>())
      .def_readonly("halo_queue", &dist::HaloOverlap::halo_queue);
  d.def(
      "stencil_reduce_to_devices",
      [](const StencilKernel& kernel, const py::sequence& args, const py::object& across,
         const py::object& region, const dist::HaloOverlap* overlap) {
        const auto a = to_dist_operands(args, "dist.stencil_reduce_to_devices");
        const ReduceOp op = to_reduce_op(across, "dist.stencil_reduce_to_devices");
        const StencilRegion r = to_region(region, "dist.stencil_reduce_to_devices");
        if (overlap != nullptr && r != StencilRegion::all) {
          raise_argument("dist.stencil_reduce_to_devices",
                         "a region with overlap: the overlap computes the interior, then the edges",
                         "Leave region at 'all' with overlap.");
        }
        std::vector<Array> out;
        {
          const py::gil_scoped_release release;
          out = overlap != nullptr ? dist::stencil_reduce_to_devices(kernel, a->ops, op, *overlap)
                                   : dist::stencil_reduce_to_devices(kernel, a->ops, op, r);
        }
        return to_py_list(std::move(out));
      },
      py::arg("kernel"), py::arg("args"), py::arg("across") = "sum", py::arg("region") = "all",
      py::kw_only(), py::arg("overlap") = nullptr,
      "Collective: stencil_reduce with the value left on the devices (a list of one skein.Array "
      "per local member); overlap: a HaloOverlap (the exchange on its queue while the interior "
      "is computed; region must then be 'all').");
  d.def(
      "update_and_reduce_to_devices",
      [](const FusedKernel& kernel, const py::sequence& operands, const py::object& across,
         bool det) {
        const auto a = to_dist_operands(operands, "dist.update_and_reduce_to_devices");
        const ReduceOp op = to_reduce_op(across, "dist.update_and_reduce_to_devices");
        std::vector<Array> out;
        {
          const py::gil_scoped_release release;
          out = dist::update_and_reduce_to_devices(kernel, a->ops, op, reduction_options(det));
        }
        return to_py_list(std::move(out));
      },
      py::arg("kernel"), py::arg("operands"), py::arg("across") = "sum", py::kw_only(),
      py::arg("deterministic") = false,
      "Collective: update_and_reduce with the value left on the devices (a list of one "
      "skein.Array per local member).");
  // Member values, combined later in one collective (dist_reductions.hpp, "Member values").
  auto arrays_of = [](const py::sequence& seq, const char* call) {
    std::vector<Array> out;
    for (const auto item : seq) {
      if (!py::isinstance<Array>(item)) {
        raise_argument(call, py::repr(item).cast<std::string>() + " is not a skein.Array",
                       "Pass a list of skein.Array, one per local member (as the "
                       "*_to_devices calls return them).");
      }
      out.push_back(item.cast<const Array&>());
    }
    return out;
  };
  d.def(
      "update_and_reduce_members",
      [arrays_of](const FusedKernel& kernel, const py::sequence& operands, const py::sequence& into,
                  std::size_t slot) {
        const auto a = to_dist_operands(operands, "dist.update_and_reduce_members");
        const std::vector<Array> v = arrays_of(into, "dist.update_and_reduce_members");
        const py::gil_scoped_release release;
        dist::update_and_reduce_members(kernel, a->ops, v, slot);
      },
      py::arg("kernel"), py::arg("operands"), py::arg("into"), py::arg("slot"),
      "Not collective: a FusedKernel's update of every block, each local member's own value of "
      "its reduction into element `slot` of into[i] (one skein.Array per local member), to be "
      "combined later by combine_members.");
  d.def(
      "stencil_reduce_members",
      [arrays_of](const StencilKernel& kernel, const py::sequence& args, const py::sequence& into,
                  std::size_t slot, const py::object& region, const dist::HaloOverlap* overlap) {
        const auto a = to_dist_operands(args, "dist.stencil_reduce_members");
        const std::vector<Array> v = arrays_of(into, "dist.stencil_reduce_members");
        const StencilRegion r = to_region(region, "dist.stencil_reduce_members");
        if (overlap != nullptr && r != StencilRegion::all) {
          raise_argument("dist.stencil_reduce_members",
                         "a region with overlap: the overlap computes the interior, then the edges",
                         "Leave region at 'all' with overlap.");
        }
        const py::gil_scoped_release release;
        if (overlap != nullptr) {
          dist::stencil_reduce_members(kernel, a->ops, v, slot, *overlap);
        } else {
          dist::stencil_reduce_members(kernel, a->ops, v, slot, r);
        }
      },
      py::arg("kernel"), py::arg("args"), py::arg("into"), py::arg("slot"),
      py::arg("region") = "all", py::kw_only(), py::arg("overlap") = nullptr,
      "Not collective (but the overlap's exchange is): the stencil over every block, each local "
      "member's own value of its reduction into element `slot` of into[i].");
  d.def(
      "combine_members",
      [arrays_of](const py::object& members_of, const py::sequence& values,
                  const py::object& across, const Queue* on) -> py::object {
        const std::vector<Array> v = arrays_of(values, "dist.combine_members");
        const ReduceOp op = to_reduce_op(across, "dist.combine_members");
        auto combine = [&](const dist::DistOperand& x) -> py::object {
          std::vector<Event> done;
          {
            const py::gil_scoped_release release;
            if (on == nullptr) {
              dist::combine_members(x, v, op);
            } else {
              done = dist::combine_members(x, v, op, *on);
            }
          }
          if (on == nullptr) return py::none();
          return py::cast(std::move(done));
        };
        if (py::isinstance<DistArray>(members_of)) {
          return combine(dist::DistOperand(members_of.cast<const DistArray&>()));
        }
        if (py::isinstance<GridArray>(members_of)) {
          return combine(dist::DistOperand(members_of.cast<const GridArray&>()));
        }
        raise_argument("dist.combine_members",
                       py::repr(members_of).cast<std::string>() + " is not a distributed array",
                       "Pass the DistArray or GridArray whose members the values belong to.");
      },
      py::arg("members_of"), py::arg("values"), py::arg("across") = "sum", py::kw_only(),
      py::arg("on") = nullptr,
      "Collective: every local member's values (one skein.Array per local member, filled by the "
      "*_members calls) combined with `across` over every member of every rank, in place, in one "
      "all_reduce (or, one rank holding every member of peer devices, on the devices). With `on` "
      "(a skein.Queue of the arrays' context holding every local member's device) the combine is "
      "enqueued there after the arrays' queue's work so far, and the call returns one skein.Event "
      "per local member: the arrays' queue must wait for them (queue.wait_for(event, device_idx)) "
      "before anything reads, writes or releases the values.");
  d.def(
      "update_and_reduce",
      [](const FusedKernel& kernel, const py::sequence& operands, const py::object& across,
         bool det) {
        const auto a = to_dist_operands(operands, "dist.update_and_reduce");
        const ReduceOp op = to_reduce_op(across, "dist.update_and_reduce");
        const py::gil_scoped_release release;
        return dist::update_and_reduce(kernel, a->ops, op, reduction_options(det));
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
