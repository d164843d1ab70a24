// SPDX-License-Identifier: BSD-3-Clause
// What the generated programs of a ReductionKernel share: their beginning (types, the preamble,
// and the map, reduce, identity, post-map and finish functions: reduction_common.tmpl), the values
// every program's skeleton takes for its inputs, and the render of a program's skeleton with the
// shared pieces of code (the defs of reduction_defs.tmpl: the inputs' setup, a call of the map
// function, the strided path's offsets, the reduction within a group).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>

#include "codegen/skeletons.hpp"
#include "codegen/types.hpp"
#include "reduction_impl.hpp"
#include "skein/ctypes.hpp"
#include "skein/records.hpp"

namespace skein::detail::red {

// What every program of a reduction starts with: types, the preamble, and the map, reduce,
// identity and post-map functions (reduction_common.tmpl).
std::string common_source(const ReductionKernel::Impl& impl, const Resolved& r,
                          bool deterministic) {
  std::vector<std::string> bind_names, bind_ctypes;
  for (const auto& [n, d] : r.bindings) {
    bind_names.push_back(n);
    bind_ctypes.push_back(codegen::compute_ctype(d));
  }
  // The C types of the record dtypes the call uses (skein/records.hpp) come first.
  std::vector<Dtype> used = r.dtypes;
  for (const auto& [n, d] : r.bindings) used.push_back(d);
  used.push_back(r.out_dtype);
  if (!r.struct_reduce) used.push_back(r.reduce_dtype);
  std::string map_decl;
  for (std::size_t j = 0; j < impl.params.size(); ++j) {
    const auto& p = impl.params[j];
    if (p.raw) {
      map_decl += fmt::format(", GLOBAL_MEM const {}* {}", ctype(r.dtypes[j]), p.name);
    } else {
      map_decl += fmt::format(", const {} {}", codegen::compute_ctype(r.dtypes[j]), p.name);
    }
  }
  // The user's text (preamble, expressions) goes in as string values: the engine inserts them as
  // they are, so that only the later render with the user's globals interprets them.
  return codegen::render_skeleton(
      "reduction_common.tmpl",
      {{"k", impl.name()},
       {"deterministic", deterministic ? 1 : 0},
       {"bind_names", bind_names},
       {"bind_ctypes", bind_ctypes},
       {"reduce_typedef", r.struct_reduce
                              ? ctype_struct(*impl.options.reduce_struct, "reduce_t")
                              : fmt::format("typedef {} reduce_t;", ctype(r.reduce_dtype))},
       {"records", record_definitions(used)},
       {"preamble", impl.options.preamble},
       {"map_decl", map_decl},
       {"map_expr", impl.map_expr},
       {"reduce_expr", impl.reduce_expr},
       {"identity", impl.identity},
       {"post", impl.options.post_map.empty() ? impl.out.name + " = a" : impl.options.post_map},
       {"out_name", impl.out.name},
       {"out_cctype", codegen::compute_ctype(r.out_dtype)},
       {"out_ctype", ctype(r.out_dtype)},
       {"out_store", codegen::store_value(r.out_dtype, "_skein_y")}});
}

namespace {

// What `wrap(x)` puts before and after x (for codegen::load_value, whose result wraps the stored
// element in a conversion or not).
std::pair<std::string, std::string> wrapping(const std::function<std::string(std::string)>& wrap) {
  static const std::string mark = "\x01";
  const std::string text = wrap(mark);
  const std::size_t at = text.find(mark);
  return {text.substr(0, at), text.substr(at + mark.size())};
}

// The inputs' kernel parameters.
std::vector<std::string> input_params(const ReductionKernel::Impl& impl, const Resolved& r) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    if (r.is_array[k]) {
      out.push_back(codegen::array_param(impl.params[k].name));
    } else {
      out.push_back(fmt::format("const {} _skein_a_{}", codegen::scalar_param_ctype(r.dtypes[k]),
                                impl.params[k].name));
    }
  }
  return out;
}

}  // namespace

RenderGlobals input_globals(const ReductionKernel::Impl& impl, const Resolved& r) {
  std::vector<std::string> names, roles, ctypes, pointers, load_pre, load_post;
  std::vector<int> halfs;
  std::vector<std::int64_t> lidx;
  for (std::size_t j = 0; j < impl.params.size(); ++j) {
    const auto& p = impl.params[j];
    const Dtype d = r.dtypes[j];
    names.push_back(p.name);
    roles.emplace_back(p.raw ? "raw" : r.is_array[j] ? "array" : "scalar");
    ctypes.push_back(ctype(d));
    halfs.push_back(!r.is_array[j] && (d == Dtype::float16 || d == Dtype::bfloat16) ? 1 : 0);
    pointers.push_back(r.is_array[j] ? codegen::array_pointer(p.name, ctype(d), true) : "");
    lidx.push_back(r.layout_index[j] == npos ? -1 : static_cast<std::int64_t>(r.layout_index[j]));
    auto [pre, post] = wrapping([d](const std::string& x) { return codegen::load_value(d, x); });
    load_pre.push_back(std::move(pre));
    load_post.push_back(std::move(post));
  }
  std::vector<std::string> indent;
  for (std::size_t d = 0; d < 6; ++d) indent.emplace_back(4 * d, ' ');
  std::string in_sig;
  for (const auto& p : input_params(impl, r)) in_sig += p + ",\n    ";
  return {{"k", impl.name()},
          {"names", names},
          {"roles", roles},
          {"ctypes", ctypes},
          {"halfs", halfs},
          {"pointers", pointers},
          {"lidx", lidx},
          {"load_pre", load_pre},
          {"load_post", load_post},
          {"indent", indent},
          {"in_sig", in_sig},
          {"nlayouts", static_cast<std::int64_t>(r.layout_count)},
          {"ndim", static_cast<std::int64_t>(r.layout.shape.size())}};
}

// The engine has no include: the defs go after the program's text (a def may be called before it
// is defined), so that errors in the program's own lines keep their line numbers.
std::string render_reduction(std::string_view name, const RenderGlobals& given) {
  RenderGlobals globals = given;
  globals.emplace("join_lines", codegen::line_joiner("", "join_lines"));
  const std::string_view main = codegen::skeleton(name);
  const std::string_view defs = codegen::skeleton("reduction_defs.tmpl");
  const auto lines = static_cast<std::size_t>(std::count(main.begin(), main.end(), '\n'));
  // Errors in the defs count their lines on from the program's: the name says where they start.
  return render(
      std::string(main) + std::string(defs), globals,
      fmt::format("skein/kernels/{} (reduction_defs.tmpl from line {})", name, lines + 1));
}

std::vector<std::int64_t> vector_words(const ReductionKernel::Impl& impl, const Resolved& r,
                                       std::size_t W) {
  std::vector<std::int64_t> out;
  for (std::size_t j = 0; j < impl.params.size(); ++j) {
    const bool vector = r.layout.contiguous && r.layout_index[j] != npos;
    out.push_back(vector ? static_cast<std::int64_t>(W * itemsize(r.dtypes[j]) / 16) : 0);
  }
  return out;
}

// Layout parameters of the general (strided) path.
std::vector<std::string> strided_params(const Resolved& r) {
  std::vector<std::string> out;
  const std::size_t D = r.layout.shape.size();
  for (std::size_t d = 0; d < D; ++d) out.push_back(fmt::format("const uint64_t _skein_d{}", d));
  for (std::size_t j = 0; j < r.layout_count; ++j) {
    for (std::size_t d = 0; d < D; ++d)
      out.push_back(fmt::format("const uint64_t _skein_s{}_{}", j, d));
  }
  return out;
}

}  // namespace skein::detail::red
