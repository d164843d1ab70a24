// SPDX-License-Identifier: BSD-3-Clause
// The generated source of ElementwiseKernel (skein/elementwise.hpp): the skeleton
// framework/src/kernels/elementwise.tmpl (which says how the kernel works), rendered with the
// values this file computes from a resolved call. The decisions are made here and in
// elementwise_kernel.cpp (the path, W and U, which arrays take the vector loop); the skeleton only
// writes them out.
#include <algorithm>
#include <cstdint>

#include "codegen/skeletons.hpp"
#include "codegen/types.hpp"
#include "elementwise_impl.hpp"
#include "skein/ctypes.hpp"
#include "skein/records.hpp"
#include "skein/template.hpp"

namespace skein::detail::elementwise {

namespace {

// The skeleton's per-parameter lists (see the globals in elementwise.tmpl).
void add_parameters(const ElementwiseKernel::Impl& impl, const Resolved& r, RenderGlobals& g) {
  RenderList names, raw, output, is_array, half, const_in, ctypes, compute_ctypes, scalar_ctypes,
      array_params, array_pointers, layout_index, words;
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    const auto& p = impl.params[k];
    const Dtype d = r.dtypes[k];
    names.emplace_back(p.name);
    raw.emplace_back(p.raw ? 1 : 0);
    output.emplace_back(p.output ? 1 : 0);
    is_array.emplace_back(r.is_array[k] ? 1 : 0);
    half.emplace_back(!r.is_array[k] && (d == Dtype::float16 || d == Dtype::bfloat16) ? 1 : 0);
    const_in.emplace_back(p.output ? "" : "const ");
    ctypes.emplace_back(ctype(d));
    compute_ctypes.emplace_back(codegen::compute_ctype(d));
    scalar_ctypes.emplace_back(r.is_array[k] ? "" : codegen::scalar_param_ctype(d));
    array_params.emplace_back(r.is_array[k] ? codegen::array_param(p.name) : "");
    array_pointers.emplace_back(r.is_array[k] ? codegen::array_pointer(p.name, ctype(d), !p.output)
                                              : "");
    const bool in_layout = r.layout_index[k] != npos;
    layout_index.emplace_back(in_layout ? static_cast<std::int64_t>(r.layout_index[k]) : -1);
    // A chunk of W elements is whole 16-byte words: W is chosen so for every array of the layout.
    words.emplace_back(in_layout ? r.W * itemsize(d) / 16 : 0);
  }
  g.insert({{"names", names},
            {"raw", raw},
            {"output", output},
            {"is_array", is_array},
            {"half", half},
            {"const_in", const_in},
            {"ctypes", ctypes},
            {"compute_ctypes", compute_ctypes},
            {"scalar_ctypes", scalar_ctypes},
            {"array_params", array_params},
            {"array_pointers", array_pointers},
            {"layout_index", layout_index},
            {"words", words},
            {"load", codegen::value_loader(r.dtypes)},
            {"store", codegen::value_storer(r.dtypes)}});
}

}  // namespace

std::string generate(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  const bool any_vector = std::any_of(r.layout_index.begin(), r.layout_index.end(),
                                      [](std::size_t j) { return j != npos; });
  // The user's text (preamble, operation) is inserted as it is by the skeleton's pass; the
  // user's globals are rendered into the result afterwards, in a pass of its own, as they always
  // were (so a '%' or '${...}' in the operation means what it meant before skeletons).
  // The C types of the record dtypes the call uses (skein/records.hpp) come first.
  std::vector<Dtype> used = r.dtypes;
  for (const auto& [n, d] : r.bindings) used.push_back(d);
  RenderGlobals g{{"kname", impl.options.name},
                  {"fp_contract", impl.options.fp_contract ? 1 : 0},
                  {"preamble", record_definitions(used) + impl.options.preamble},
                  {"operation", impl.operation},
                  {"typedef_lines", codegen::typedef_lines(r.bindings)},
                  {"n_in", impl.n_in},
                  {"contiguous", r.layout.contiguous ? 1 : 0},
                  {"any_vector", any_vector ? 1 : 0},
                  {"W", r.W},
                  {"U", r.U},
                  {"D", r.layout.shape.size()},
                  {"nlayouts", r.layout_count},
                  {"join_commas", codegen::line_joiner(", ", "join_commas")},
                  {"join_params", codegen::line_joiner(",\n    ", "join_params")}};
  add_parameters(impl, r, g);
  return render(codegen::render_skeleton("elementwise.tmpl", g), impl.options.globals,
                impl.options.name);
}

}  // namespace skein::detail::elementwise
