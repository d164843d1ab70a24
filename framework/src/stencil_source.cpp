// SPDX-License-Identifier: BSD-3-Clause
// The generated source of StencilKernel: one kernel per index width, a thread per point of the
// region in a grid-stride loop. A point's region index picks its box (an if-chain over at most
// kMaxBoxes boxes, no indexed private arrays), then its slots by two divisions; each field's
// element is at its strides from there, and the operation reads neighbours through macros.
#include "stencil_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>

#include "codegen/types.hpp"
#include "skein/ctypes.hpp"
#include "skein/template.hpp"

namespace skein::detail::stencil {

namespace {

std::string kernel_params(const std::vector<codegen::ParamDecl>& params, const Call& c) {
  std::vector<std::string> kp;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    if (c.kinds[k] == ParamKind::scalar) {
      kp.push_back(
          fmt::format("const {} _skein_a_{}", codegen::scalar_param_ctype(c.dtypes[k]), p.name));
      continue;
    }
    kp.push_back(codegen::array_param(p.name));
    if (c.kinds[k] == ParamKind::field) {
      for (int s = 0; s < 4; ++s)
        kp.push_back(fmt::format("const int64_t _skein_s_{}_{}", p.name, s));
    }
  }
  for (int s = 0; s < 3; ++s) kp.push_back(fmt::format("const int64_t _skein_g{}", s));
  for (int s = 0; s < 3; ++s) kp.push_back(fmt::format("const int64_t _skein_N{}", s));
  kp.push_back("const uint64_t _skein_n");
  for (std::size_t b = 0; b < kMaxBoxes; ++b) {
    for (int s = 0; s < 3; ++s) kp.push_back(fmt::format("const int64_t _skein_b{}_s{}", b, s));
    kp.push_back(fmt::format("const uint64_t _skein_b{}_e1", b));
    kp.push_back(fmt::format("const uint64_t _skein_b{}_e2", b));
    kp.push_back(fmt::format("const uint64_t _skein_b{}_f", b));
  }
  return fmt::format("{}", fmt::join(kp, ",\n    "));
}

// Pointers to element 0 of every array, and the scalars' values under their names.
std::string setup(const std::vector<codegen::ParamDecl>& params, const Call& c) {
  std::string s;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const Dtype d = c.dtypes[k];
    switch (c.kinds[k]) {
      case ParamKind::raw:
        s += "    " + codegen::array_pointer(p.name, ctype(d), !p.output) + "\n";
        s += fmt::format("    GLOBAL_MEM {}{}* const {} = _skein_p_{};\n", p.output ? "" : "const ",
                         ctype(d), p.name, p.name);
        break;
      case ParamKind::field:
        s += "    " + codegen::array_pointer(p.name, ctype(d), !p.output) + "\n";
        break;
      case ParamKind::scalar:
        if (d == Dtype::float16 || d == Dtype::bfloat16) {
          s += fmt::format("    {} _skein_h_{};\n    _skein_h_{}.bits = _skein_a_{};\n", ctype(d),
                           p.name, p.name, p.name);
          s += fmt::format("    const float {} = {};\n", p.name,
                           codegen::load_value(d, "_skein_h_" + p.name));
        } else {
          s += fmt::format("    const {} {} = _skein_a_{};\n", ctype(d), p.name, p.name);
        }
        break;
    }
  }
  return s;
}

// The loop body's head: the point's box and slots, its global index, each field's element. Only
// the slots the domain uses are computed (a 2-D box needs one division, a 1-D none), and element
// offsets are _skein_off_t: int in the 32-bit kernel (the launch checks that every field's
// allocation has fewer than 2^31 elements), int64_t in the other.
std::string locate(const std::vector<codegen::ParamDecl>& params, const Call& c, const char* idx) {
  const bool narrow = std::string_view(idx) == "uint32_t";
  std::string s = fmt::format("        typedef {} _skein_off_t;\n", narrow ? "int" : "int64_t");
  s += fmt::format(
      "        {0} _skein_q = _skein_t;\n        _skein_off_t _skein_l0, _skein_l1, _skein_l2;\n"
      "        {0} _skein_e1, _skein_e2;\n",
      idx);
  for (std::size_t b = 0; b < kMaxBoxes; ++b) {
    std::string cond =
        b + 1 < kMaxBoxes ? fmt::format("if (_skein_q < ({})_skein_b{}_f) ", idx, b + 1) : "";
    s += fmt::format(
        "        {0}{{ _skein_q -= ({2})_skein_b{1}_f; _skein_l0 = (_skein_off_t)_skein_b{1}_s0; "
        "_skein_l1 = (_skein_off_t)_skein_b{1}_s1; _skein_l2 = (_skein_off_t)_skein_b{1}_s2; "
        "_skein_e1 = ({2})_skein_b{1}_e1; _skein_e2 = ({2})_skein_b{1}_e2; }}\n",
        b == 0 ? cond : (cond.empty() ? "else " : "else " + cond), b, idx);
  }
  s += "        (void)_skein_e1;\n";
  if (c.D == 1) {
    s += "        _skein_l2 += (_skein_off_t)_skein_q;\n";
  } else if (c.D == 2) {
    s += fmt::format(
        "        {{\n            const {0} _skein_r = _skein_q / _skein_e2;\n"
        "            _skein_l2 += (_skein_off_t)(_skein_q - _skein_r * _skein_e2);\n"
        "            _skein_l1 += (_skein_off_t)_skein_r;\n        }}\n",
        idx);
  } else {
    s += fmt::format(
        "        {{\n            const {0} _skein_r = _skein_q / _skein_e2;\n"
        "            _skein_l2 += (_skein_off_t)(_skein_q - _skein_r * _skein_e2);\n"
        "            _skein_l1 += (_skein_off_t)(_skein_r % _skein_e1);\n"
        "            _skein_l0 += (_skein_off_t)(_skein_r / _skein_e1);\n        }}\n",
        idx);
  }
  std::vector<std::string> g, n;
  for (std::size_t a = 0; a < c.D; ++a) {
    const std::size_t slot = 3 - c.D + a;
    g.push_back(fmt::format("_skein_g{0} + (int64_t)_skein_l{0}", slot));
    n.push_back(fmt::format("_skein_N{}", slot));
  }
  s += fmt::format("        const int64_t gidx[{}] = {{{}}};\n", c.D, fmt::join(g, ", "));
  s += fmt::format("        const int64_t gshape[{}] = {{{}}};\n", c.D, fmt::join(n, ", "));
  s += "        (void)gidx; (void)gshape;\n";
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (c.kinds[k] != ParamKind::field) continue;
    const auto& p = params[k];
    std::vector<std::string> terms;
    for (std::size_t slot = 3 - c.D; slot < 3; ++slot) {
      terms.push_back(fmt::format("_skein_l{0} * (_skein_off_t)_skein_s_{1}_{0}", slot, p.name));
    }
    s += fmt::format("        GLOBAL_MEM {0}{1}* const _skein_c_{2} = _skein_p_{2} + ({3});\n",
                     p.output ? "" : "const ", ctype(c.dtypes[k]), p.name, fmt::join(terms, " + "));
  }
  return s;
}

// The operation with an input field's neighbours as macros, and its outputs as private variables
// stored at the point after it.
std::string operation_block(const std::vector<codegen::ParamDecl>& params,
                            const std::string& operation, const Call& c,
                            const std::string& accumulate) {
  std::string defs, undefs, decls, stores;
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (c.kinds[k] != ParamKind::field) continue;
    const auto& p = params[k];
    const Dtype d = c.dtypes[k];
    if (!p.output) {
      std::vector<std::string> args, terms;
      for (std::size_t a = 0; a < c.D; ++a) {
        args.push_back(fmt::format("_o{}", a));
        terms.push_back(fmt::format("(_skein_off_t)(_o{}) * (_skein_off_t)_skein_s_{}_{}", a,
                                    p.name, 3 - c.D + a));
      }
      if (c.components[k] > 0) {
        args.push_back("_oc");
        terms.push_back(fmt::format("(_skein_off_t)(_oc) * (_skein_off_t)_skein_s_{}_3", p.name));
      }
      defs += fmt::format(
          "#define {}({}) ({})\n", p.name, fmt::join(args, ", "),
          codegen::load_value(d, fmt::format("_skein_c_{}[{}]", p.name, fmt::join(terms, " + "))));
      undefs += fmt::format("#undef {}\n", p.name);
      if (c.components[k] == 0) {
        // The plain name is the value at the point (a variable: the macro needs parentheses).
        decls += fmt::format("            const {} {} = {};\n", codegen::compute_ctype(d), p.name,
                             codegen::load_value(d, fmt::format("_skein_c_{}[0]", p.name)));
      }
    } else if (c.components[k] > 0) {
      decls += fmt::format("            {} {}[{}];\n", codegen::compute_ctype(d), p.name,
                           c.components[k]);
      stores += fmt::format(
          "            for (int _skein_k = 0; _skein_k < {}; ++_skein_k) "
          "_skein_c_{}[(_skein_off_t)_skein_k * (_skein_off_t)_skein_s_{}_3] = {};\n",
          c.components[k], p.name, p.name,
          codegen::store_value(d, fmt::format("{}[_skein_k]", p.name)));
    } else {
      decls += fmt::format("            {} {};\n", codegen::compute_ctype(d), p.name);
      stores += fmt::format("            _skein_c_{}[0] = {};\n", p.name,
                            codegen::store_value(d, p.name));
    }
  }
  std::string s = "        {\n";
  s += codegen::placeholder_typedefs(c.bindings);
  s += decls;
  s += defs;
  s += "            /* operation */\n            {\n" + operation + ";\n            }\n";
  s += accumulate;
  s += undefs;
  s += stores;
  s += "        }\n";
  return s;
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

// The group's values in _skein_sd[0 .. group) reduced into _skein_sd[0] (a halving tree).
std::string group_tree(const std::string& reduce_fn, std::size_t group) {
  return fmt::format(
      "    _skein_sd[_skein_lid] = _skein_acc;\n    LOCAL_BARRIER;\n"
      "    for (unsigned int _skein_s = {}u / 2u; _skein_s > 0u; _skein_s >>= 1) {{\n"
      "        if (_skein_lid < _skein_s) _skein_sd[_skein_lid] = {}(_skein_sd[_skein_lid], "
      "_skein_sd[_skein_lid + _skein_s]);\n"
      "        LOCAL_BARRIER;\n    }}\n",
      group, reduce_fn);
}

// The reduction's type and functions, and the kernel that reduces the groups' partial values.
std::string reduction_support(const StencilReduction& red, const std::string& name,
                              std::size_t group) {
  std::string s = fmt::format("typedef {} _skein_red_t;\n", ctype(red.dtype));
  s += fmt::format(
      "WITHIN_KERNEL INLINE _skein_red_t {}_reduce(const _skein_red_t a, const _skein_red_t "
      "b)\n{{\n"
      "    return (_skein_red_t)({});\n}}\n",
      name, red.reduce);
  s += fmt::format(
      "WITHIN_KERNEL INLINE _skein_red_t {}_identity(void)\n{{\n    return "
      "(_skein_red_t)({});\n}}\n\n",
      name, red.identity);
  s += fmt::format(
      "KERNEL void {0}_fin({1}, const uint64_t _skein_count, {2}, const int "
      "_skein_accumulate)\n{{\n"
      "    LOCAL_MEM _skein_red_t _skein_sd[{3}];\n"
      "    const unsigned int _skein_lid = (unsigned int)get_local_id(0);\n"
      "    GLOBAL_MEM const _skein_red_t* const _skein_in = (GLOBAL_MEM const "
      "_skein_red_t*)(_skein_b__part + _skein_o__part);\n"
      "    _skein_red_t _skein_acc = {0}_identity();\n"
      "    for (uint64_t _skein_t = _skein_lid; _skein_t < _skein_count; _skein_t += {3}u) "
      "_skein_acc = {0}_reduce(_skein_acc, _skein_in[_skein_t]);\n",
      name, codegen::array_param("_part"), codegen::array_param("_out"), group);
  s += group_tree(name + "_reduce", group);
  s += "    if (_skein_lid == 0) {\n"
       "        GLOBAL_MEM _skein_red_t* const _skein_y = (GLOBAL_MEM _skein_red_t*)(_skein_b__out "
       "+ _skein_o__out);\n";
  s += fmt::format(
      "        _skein_y[0] = _skein_accumulate ? {}_reduce(_skein_y[0], _skein_sd[0]) : "
      "_skein_sd[0];\n",
      name);
  s += "    }\n}\n\n";
  return s;
}

std::string generate(const std::vector<codegen::ParamDecl>& params, const std::string& operation,
                     const StencilOptions& options, const Call& c) {
  std::string src = "/* Generated by skein::StencilKernel */\n";
  if (!options.fp_contract) src += "#ifdef OPENCL\n#pragma OPENCL FP_CONTRACT OFF\n#endif\n";
  if (!options.preamble.empty()) src += options.preamble + "\n";
  const std::string& name = options.name;
  const std::optional<StencilReduction>& red = options.reduction;
  if (red) src += reduction_support(*red, name, c.group);
  const std::string kparams = kernel_params(params, c);
  const std::string body_setup = setup(params, c);
  const std::string op = operation_block(params, operation, c, "");
  const std::string op_red =
      red ? operation_block(
                params, operation, c,
                fmt::format("            _skein_acc = {}_reduce(_skein_acc, (_skein_red_t)({}));\n",
                            name, red->map))
          : "";
  struct Variant {
    std::string name;
    const char* idx;
    bool reduce;
  };
  std::vector<Variant> variants{{name, "uint32_t", false}, {name + "_i64", "uint64_t", false}};
  if (red) {
    variants.push_back({name + "_r", "uint32_t", true});
    variants.push_back({name + "_r_i64", "uint64_t", true});
  }
  for (const Variant& v : variants) {
    src += fmt::format("KERNEL void {}(\n    {}{})\n{{\n", v.name, kparams,
                       v.reduce ? ",\n    " + codegen::array_param("_part") : "");
    src += body_setup;
    if (v.reduce) {
      src += fmt::format("    LOCAL_MEM _skein_red_t _skein_sd[{}];\n", c.group);
      src += "    const unsigned int _skein_lid = (unsigned int)get_local_id(0);\n";
      src += fmt::format("    _skein_red_t _skein_acc = {}_identity();\n", name);
    }
    src += fmt::format(
        "    for ({0} _skein_t = ({0})get_global_id(0); _skein_t < ({0})_skein_n; _skein_t += "
        "({0})get_global_size(0)) {{\n",
        v.idx);
    src += locate(params, c, v.idx);
    src += v.reduce ? op_red : op;
    src += "    }\n";
    if (v.reduce) {
      src += group_tree(name + "_reduce", c.group);
      src +=
          "    if (_skein_lid == 0) ((GLOBAL_MEM _skein_red_t*)(_skein_b__part + "
          "_skein_o__part))[get_group_id(0)] = "
          "_skein_sd[0];\n";
    }
    src += "}\n\n";
  }
  return render(src, options.globals, options.name);
}

}  // namespace skein::detail::stencil
