// SPDX-License-Identifier: BSD-3-Clause
// The generated source of StencilKernel: the skeleton framework/src/kernels/stencil.tmpl (which
// says how the kernels work), rendered with the values this file computes from a resolved call.
// The decisions (the parameters' kinds, D, the reducing kernels' group) are made in stencil.cpp;
// the skeleton only writes them out.
#include "stencil_source.hpp"

#include <fmt/format.h>

#include <optional>

#include "codegen/skeletons.hpp"
#include "codegen/types.hpp"
#include "skein/ctypes.hpp"
#include "skein/template.hpp"

namespace skein::detail::stencil {

namespace {

// The names of ParamKind, as the skeleton tests them.
const char* kind_name(ParamKind kind) {
  switch (kind) {
    case ParamKind::field: return "field";
    case ParamKind::raw: return "raw";
    case ParamKind::scalar: return "scalar";
  }
  return "";
}

// The skeleton's per-parameter lists (see the globals in stencil.tmpl).
void add_parameters(const std::vector<codegen::ParamDecl>& params, const Call& c,
                    RenderGlobals& g) {
  RenderList names, kinds, output, half, const_in, ctypes, compute_ctypes, scalar_ctypes,
      components, array_params, array_pointers;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const Dtype d = c.dtypes[k];
    const bool scalar = c.kinds[k] == ParamKind::scalar;
    names.emplace_back(p.name);
    kinds.emplace_back(kind_name(c.kinds[k]));
    output.emplace_back(p.output ? 1 : 0);
    half.emplace_back(scalar && (d == Dtype::float16 || d == Dtype::bfloat16) ? 1 : 0);
    const_in.emplace_back(p.output ? "" : "const ");
    ctypes.emplace_back(ctype(d));
    compute_ctypes.emplace_back(codegen::compute_ctype(d));
    scalar_ctypes.emplace_back(scalar ? codegen::scalar_param_ctype(d) : "");
    components.emplace_back(c.components[k]);
    array_params.emplace_back(scalar ? "" : codegen::array_param(p.name));
    array_pointers.emplace_back(scalar ? "" : codegen::array_pointer(p.name, ctype(d), !p.output));
  }
  g.insert({{"names", names},
            {"kinds", kinds},
            {"output", output},
            {"half", half},
            {"const_in", const_in},
            {"ctypes", ctypes},
            {"compute_ctypes", compute_ctypes},
            {"scalar_ctypes", scalar_ctypes},
            {"components", components},
            {"array_params", array_params},
            {"array_pointers", array_pointers},
            {"load", codegen::value_loader(c.dtypes)},
            {"store", codegen::value_storer(c.dtypes)}});
}

// The reduction's values: its type, the user's expressions (inserted as they are) and the arrays
// of the partial values and of the result.
void add_reduction(const std::optional<StencilReduction>& red, RenderGlobals& g) {
  g.insert({{"reduction", red ? 1 : 0},
            {"red_ctype", red ? ctype(red->dtype) : ""},
            {"red_reduce", red ? red->reduce : ""},
            {"red_identity", red ? red->identity : ""},
            {"red_map", red ? red->map : ""},
            {"part_param", codegen::array_param("_part")},
            {"out_param", codegen::array_param("_out")}});
}

}  // namespace

std::string signature(const std::vector<codegen::ParamDecl>& params, const Call& c) {
  std::string s = fmt::format("stencil D{} L{}", c.D, c.group);
  for (std::size_t k = 0; k < params.size(); ++k) {
    s += fmt::format(" {}:{}:{}", static_cast<int>(c.kinds[k]), name(c.dtypes[k]),
                     params[k].output ? c.components[k] : (c.components[k] > 0 ? 1 : 0));
  }
  return s;
}

std::string generate(const std::vector<codegen::ParamDecl>& params, const std::string& operation,
                     const StencilOptions& options, const Call& c) {
  // The box chain's first test is against box 1's first point.
  static_assert(kMaxBoxes >= 2);
  // The user's text (preamble, operation, the reduction's expressions) is inserted as it is by
  // the skeleton's pass; the user's globals are rendered into the result afterwards, in a pass of
  // its own, as they always were.
  RenderGlobals g{{"kname", options.name},
                  {"fp_contract", options.fp_contract ? 1 : 0},
                  {"preamble", options.preamble},
                  {"operation", operation},
                  {"typedef_lines", codegen::typedef_lines(c.bindings)},
                  {"D", c.D},
                  {"nboxes", kMaxBoxes},
                  {"group", c.group},
                  {"join_commas", codegen::line_joiner(", ", "join_commas")},
                  {"join_params", codegen::line_joiner(",\n    ", "join_params")},
                  {"join_sum", codegen::line_joiner(" + ", "join_sum")}};
  add_parameters(params, c, g);
  add_reduction(options.reduction, g);
  return render(codegen::render_skeleton("stencil.tmpl", g), options.globals, options.name);
}

}  // namespace skein::detail::stencil
