// SPDX-License-Identifier: BSD-3-Clause
// Generated kernels: ElementwiseKernel (CuPy's parameter syntax, PyCUDA's and pygpu's idea) and
// ReductionKernel. Their call is the one Python code makes most, so it converts the arguments
// straight into Operands (no NumPy round trip, no dict) and keeps the GIL: a launch does not wait.
#include <string>
#include <vector>

#include "kernel_signature.hpp"
#include "skein/fused.hpp"
#include "operands.hpp"

namespace skein::python {

namespace {

py::object outputs_object(std::vector<Array>&& outs) {
  if (outs.size() == 1) return py::cast(std::move(outs[0]));
  py::tuple t(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i) t[i] = py::cast(std::move(outs[i]));
  return t;
}

// The number of output parameters of a CuPy-style parameter list (its top-level commas).
std::size_t count_params(const std::string& params) {
  if (params.find_first_not_of(" \t\n") == std::string::npos) return 0;
  std::size_t n = 1;
  for (const char c : params) n += c == ',' ? 1 : 0;
  return n;
}

// ElementwiseOptions::groups from its Python name.
LaunchGroups launch_groups_of(const std::string& groups) {
  if (groups == "resident") return LaunchGroups::resident;
  if (groups == "per_chunk") return LaunchGroups::per_chunk;
  raise_argument("ElementwiseKernel", "groups '" + groups + "' is not 'resident' or 'per_chunk'",
                 "Give groups='resident' (as many groups as fit at once) or 'per_chunk'.");
}

void bind_elementwise(py::module_& m) {
  py::class_<PyElementwise>(m, "ElementwiseKernel",
                            "A kernel on arrays element by element (CuPy's ElementwiseKernel): "
                            "ElementwiseKernel('T a, T x, T y', 'T z', 'z = a * x + y').")
      .def(py::init([](const std::string& in_params, const std::string& out_params,
                       std::string operation, std::string name, std::string preamble,
                       const py::object& render_globals, bool fast_math, bool fp_contract,
                       std::size_t spare_compute_units, const std::string& groups) {
             ElementwiseOptions o;
             o.name = std::move(name);
             o.preamble = std::move(preamble);
             o.globals = to_render_globals(render_globals);
             o.fast_math = fast_math;
             o.fp_contract = fp_contract;
             o.spare_compute_units = spare_compute_units;
             o.groups = launch_groups_of(groups);
             return PyElementwise{
                 ElementwiseKernel(in_params, out_params, std::move(operation), std::move(o)),
                 count_params(out_params), count_params(in_params)};
           }),
           py::arg("in_params"), py::arg("out_params"), py::arg("operation"),
           py::arg("name") = "elementwise", py::arg("preamble") = "",
           py::arg("render_globals") = py::none(), py::arg("fast_math") = false,
           py::arg("fp_contract") = true, py::arg("spare_compute_units") = 0,
           py::arg("groups") = "resident")
      .def(
          "__call__",
          [](const PyElementwise& k, const Queue& q, const py::args& args) -> py::object {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "ElementwiseKernel.__call__");
            auto outs = k.kernel(q, std::span<const Operand>(operands));
            // Outputs given: nothing to return (PyCUDA's call); allocated: the new arrays.
            if (operands.size() == k.inputs + k.outputs) return py::none();
            return outputs_object(std::move(outs));
          },
          py::arg("queue"),
          "Runs on the arrays' device, enqueued on `queue`: inputs, then all outputs or none. "
          "Returns the new outputs (one Array, or a tuple) when none was given, else None. Does "
          "not wait.")
      .def(
          "source",
          [](const PyElementwise& k, const Queue& q, const py::args& args) {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "ElementwiseKernel.source");
            return k.kernel.source(q, operands);
          },
          py::arg("queue"), "The source a call with these arguments compiles.")
      .def(
          "_convert_only",
          [](const PyElementwise&, const Queue&, const py::args& args) {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "ElementwiseKernel._convert_only");
            return operands.size();
          },
          py::arg("queue"),
          "The call's argument conversion without the launch (tools/peer-python-calls.py "
          "--breakdown times it: where a call's host time goes).")
      .def_property_readonly("name", [](const PyElementwise& k) { return k.kernel.name(); })
      .def_property_readonly("programs_built",
                             [](const PyElementwise& k) { return k.kernel.programs_built(); });
}

void bind_reduction(py::module_& m) {
  py::class_<ReductionKernel>(m, "ReductionKernel",
                              "A reduction (pygpu's and CuPy's ReductionKernel): "
                              "ReductionKernel('T x', 'T y', 'x * x', 'a + b', '0').")
      .def(py::init([](const std::string& in_params, const std::string& out_param,
                       std::string map_expr, std::string reduce_expr, std::string identity,
                       std::string post_map, const py::object& reduce_type, std::string preamble,
                       const py::object& render_globals, std::string name) {
             ReductionOptions o;
             o.post_map = std::move(post_map);
             if (!reduce_type.is_none()) {
               o.reduce_type = to_dtype(reduce_type, "ReductionKernel");
             }
             o.preamble = std::move(preamble);
             o.globals = to_render_globals(render_globals);
             o.name = std::move(name);
             return ReductionKernel(in_params, out_param, std::move(map_expr),
                                    std::move(reduce_expr), std::move(identity), std::move(o));
           }),
           py::arg("in_params"), py::arg("out_param"), py::arg("map_expr"), py::arg("reduce_expr"),
           py::arg("identity"), py::arg("post_map") = "", py::arg("reduce_type") = py::none(),
           py::arg("preamble") = "", py::arg("render_globals") = py::none(),
           py::arg("name") = "reduction")
      .def(
          "__call__",
          [](const ReductionKernel& k, const Queue& q, const py::args& args, const py::object& axis,
             const py::object& out, bool deterministic) {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "ReductionKernel.__call__");
            ReductionArgs ra;
            ra.out = to_out(out, "ReductionKernel.__call__");
            ra.deterministic = deterministic;
            if (!axis.is_none()) {
              std::size_t ndim = 0;
              for (const auto& o : operands)
                ndim = o.is_array() ? std::max(ndim, o.array().ndim()) : ndim;
              const auto norm = [ndim](py::ssize_t a) {
                const auto n = static_cast<py::ssize_t>(ndim);
                if (a < -n || a >= n) {
                  raise_argument("ReductionKernel.__call__",
                                 "axis " + std::to_string(a) + " is out of bounds for " +
                                     std::to_string(ndim) + " dimension(s)",
                                 "Give an axis in [-ndim, ndim).");
                }
                return static_cast<std::size_t>(a < 0 ? a + n : a);
              };
              if (py::isinstance<py::int_>(axis)) {
                ra.axis = norm(axis.cast<py::ssize_t>());
              } else {
                for (const auto a : axis) ra.axes.push_back(norm(a.cast<py::ssize_t>()));
              }
            }
            return k(q, std::span<const Operand>(operands), ra);
          },
          py::arg("queue"), py::kw_only(), py::arg("axis") = py::none(),
          py::arg("out") = py::none(), py::arg("deterministic") = false,
          "Reduces the inputs (arrays or scalars) on their device: one element, or per axis. "
          "Returns the output (`out` or a new array). Does not wait.")
      .def(
          "source",
          [](const ReductionKernel& k, const Queue& q, const py::args& args) {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "ReductionKernel.source");
            return k.source(q, operands);
          },
          py::arg("queue"))
      .def_property_readonly("name", &ReductionKernel::name)
      .def_property_readonly("programs_built", &ReductionKernel::programs_built);
}

void bind_fused(py::module_& m) {
  py::class_<FusedKernel>(m, "FusedKernel",
                          "An elementwise update that also reduces what it computed, in one pass: "
                          "FusedKernel('T p, T w, T alpha', 'T x, T r', 'x += alpha * p; r -= "
                          "alpha * w', 'T rr', 'r * r', 'a + b', '0'). Inputs may be raw.")
      .def(py::init([](const std::string& in_params, const std::string& update_params,
                       const std::string& operation, const std::string& out_param,
                       const std::string& map_expr, std::string reduce_expr, std::string identity,
                       std::string post_map, const py::object& reduce_type, std::string preamble,
                       const py::object& render_globals, std::string name) {
             FusedOptions o;
             o.post_map = std::move(post_map);
             if (!reduce_type.is_none()) o.reduce_type = to_dtype(reduce_type, "FusedKernel");
             o.preamble = std::move(preamble);
             o.globals = to_render_globals(render_globals);
             o.name = std::move(name);
             return FusedKernel(in_params, update_params, operation, out_param, map_expr,
                                std::move(reduce_expr), std::move(identity), std::move(o));
           }),
           py::arg("in_params"), py::arg("update_params"), py::arg("operation"),
           py::arg("out_param"), py::arg("map_expr"), py::arg("reduce_expr"), py::arg("identity"),
           py::arg("post_map") = "", py::arg("reduce_type") = py::none(), py::arg("preamble") = "",
           py::arg("render_globals") = py::none(), py::arg("name") = "fused")
      .def(
          "__call__",
          [](const FusedKernel& k, const Queue& q, const py::args& args, const py::object& out,
             bool deterministic) {
            std::vector<Operand> operands;
            to_operands(args, 0, operands, "FusedKernel.__call__");
            FusedArgs fa;
            fa.out = to_out(out, "FusedKernel.__call__");
            fa.deterministic = deterministic;
            return k(q, std::span<const Operand>(operands), fa);
          },
          py::arg("queue"), py::kw_only(), py::arg("out") = py::none(),
          py::arg("deterministic") = false,
          "Updates the updated arrays in place (inputs first, then the updated arrays) and "
          "returns the reduced value as a one-element array (`out` or a new one). Does not wait.")
      .def_property_readonly("name", &FusedKernel::name)
      .def_property_readonly("input_count", &FusedKernel::input_count)
      .def_property_readonly("update_count", &FusedKernel::update_count);
}

}  // namespace

void bind_generated_kernels(py::module_& m) {
  bind_elementwise(m);
  bind_reduction(m);
  bind_fused(m);
}

}  // namespace skein::python
