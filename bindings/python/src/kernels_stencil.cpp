// SPDX-License-Identifier: BSD-3-Clause
// skein.StencilKernel (skein/stencil.hpp): an operation on one point of a 1-3-D block that reads
// its neighbours by offset, on one block (here: `kernel(queue, *args, domain=...)`) or on every
// block of a distributed array (skein.dist.stencil, dist_ops.cpp). Like the other generated
// kernels, a call converts its arguments straight into Operands and keeps the GIL (it does not
// wait).
#include <string>
#include <utility>
#include <vector>

#include "kernel_signature.hpp"
#include "operands.hpp"

namespace skein::python {

namespace {

StencilRegion region_of(const std::string& region, const char* call) {
  if (region == "all") return StencilRegion::all;
  if (region == "interior") return StencilRegion::interior;
  if (region == "edges") return StencilRegion::edges;
  raise_argument(call, "region '" + region + "' is not 'all', 'interior' or 'edges'",
                 "Give region='all', 'interior' or 'edges'.");
}

StencilGeometry geometry_of(const py::object& domain, const py::object& offset,
                            const py::object& halo, const char* call) {
  StencilGeometry g;
  g.domain = to_shape(domain, call);
  if (!offset.is_none()) g.offset = to_shape(offset, call);
  if (!halo.is_none()) g.halo = to_shape(halo, call);
  return g;
}

void bind_reduction_spec(py::module_& m) {
  py::class_<StencilReduction>(m, "StencilReduction",
                               "A reduction of what a stencil computed, over its points.")
      .def(py::init([](std::string map, std::string reduce, std::string identity,
                       const py::object& dtype) {
             return StencilReduction{std::move(map), std::move(reduce), std::move(identity),
                                     to_dtype(dtype, "StencilReduction")};
           }),
           py::arg("map"), py::arg("reduce") = "a + b", py::arg("identity") = "0",
           py::arg("dtype") = "float64",
           "map: an expression per point (the operation's names); reduce: combines a and b; "
           "identity: the value of no points.")
      .def_readonly("map", &StencilReduction::map)
      .def_readonly("reduce", &StencilReduction::reduce)
      .def_readonly("identity", &StencilReduction::identity)
      .def_property_readonly("dtype", [](const StencilReduction& r) { return to_numpy(r.dtype); });
}

}  // namespace

void bind_stencil_kernels(py::module_& m) {
  bind_reduction_spec(m);
  py::class_<StencilKernel>(m, "StencilKernel",
                            "A stencil operation over 1-3-D fields: u(-1, 0) reads the neighbour "
                            "one point back along axis 0 (C order).")
      .def(py::init([](std::string_view in_params, std::string_view out_params,
                       std::string operation, std::string name, std::string preamble,
                       const py::object& render_globals, bool fast_math, bool fp_contract,
                       std::optional<StencilReduction> red) {
             StencilOptions o;
             o.name = std::move(name);
             o.preamble = std::move(preamble);
             o.globals = to_render_globals(render_globals);
             o.fast_math = fast_math;
             o.fp_contract = fp_contract;
             o.reduction = std::move(red);
             return StencilKernel(in_params, out_params, std::move(operation), std::move(o));
           }),
           py::arg("in_params"), py::arg("out_params"), py::arg("operation"), py::kw_only(),
           py::arg("name") = "stencil", py::arg("preamble") = "",
           py::arg("render_globals") = py::none(), py::arg("fast_math") = false,
           py::arg("fp_contract") = true, py::arg("reduction") = py::none())
      .def(
          "__call__",
          [](const StencilKernel& k, const Queue& q, const py::args& args, const py::object& domain,
             const py::object& offset, const py::object& halo, const std::string& region) {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "StencilKernel.__call__");
            k(q, operands, geometry_of(domain, offset, halo, "StencilKernel.__call__"),
              region_of(region, "StencilKernel.__call__"));
          },
          py::arg("queue"), py::kw_only(), py::arg("domain"), py::arg("offset") = py::none(),
          py::arg("halo") = py::none(), py::arg("region") = "all",
          "Enqueues the operation over `region` of one block (fields: views of its points, "
          "inputs then outputs) lying at `offset` in a domain of shape `domain`. Does not wait.")
      .def(
          "reduce",
          [](const StencilKernel& k, const Queue& q, const py::args& args, const Array& out,
             std::size_t index, const py::object& domain, const py::object& offset,
             const py::object& halo, const std::string& region, bool accumulate) {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "StencilKernel.reduce");
            k.reduce(q, operands, geometry_of(domain, offset, halo, "StencilKernel.reduce"), out,
                     index, region_of(region, "StencilKernel.reduce"), accumulate);
          },
          py::arg("queue"), py::kw_only(), py::arg("out"), py::arg("index") = 0, py::arg("domain"),
          py::arg("offset") = py::none(), py::arg("halo") = py::none(), py::arg("region") = "all",
          py::arg("accumulate") = false,
          "The operation as __call__, and its reduction over the region's points into "
          "out[index] (combined with the value there when accumulate). Does not wait.")
      .def(
          "source",
          [](const StencilKernel& k, const Queue& q, const py::args& args, const py::object& domain,
             const py::object& offset, const py::object& halo) {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "StencilKernel.source");
            return k.source(q, operands, geometry_of(domain, offset, halo, "StencilKernel.source"));
          },
          py::arg("queue"), py::kw_only(), py::arg("domain"), py::arg("offset") = py::none(),
          py::arg("halo") = py::none(), "The source a call with these arguments compiles.")
      .def_property_readonly("reduction_dtype",
                             [](const StencilKernel& k) -> py::object {
                               const auto d = k.reduction_dtype();
                               return d ? py::object(to_numpy(*d)) : py::object(py::none());
                             })
      .def_property_readonly("name", &StencilKernel::name)
      .def_property_readonly("programs_built", &StencilKernel::programs_built);
}

}  // namespace skein::python
