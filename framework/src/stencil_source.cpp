// SPDX-License-Identifier: BSD-3-Clause
// The generated source of StencilKernel: one kernel per index width, a thread per point of the
// region in a grid-stride loop. A point's region index picks its box (an if-chain over at most
// kMaxBoxes boxes, no indexed private arrays), then its slots by two divisions; each field's
// element is at its strides from there, and the operation reads neighbours through macros.
#include "stencil_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "skein/ctypes.hpp"
#include "skein/template.hpp"

namespace skein::detail::stencil {

namespace {

std::string kernel_params(const std::vector<ParamDecl>& params, const Call& c) {
  std::vector<std::string> kp;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    if (c.kinds[k] == ParamKind::scalar) {
      kp.push_back(fmt::format("const {} _skein_a_{}", scalar_param_ctype(c.dtypes[k]), p.name));
      continue;
    }
    kp.push_back(array_param(p.name));
    if (c.kinds[k] == ParamKind::field) {
      for (int s = 0; s < 4; ++s) kp.push_back(fmt::format("const int64_t _skein_s_{}_{}", p.name, s));
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
std::string setup(const std::vector<ParamDecl>& params, const Call& c) {
  std::string s;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const Dtype d = c.dtypes[k];
    switch (c.kinds[k]) {
      case ParamKind::raw:
        s += "    " + array_pointer(p.name, ctype(d), !p.output) + "\n";
        s += fmt::format("    GLOBAL_MEM {}{}* const {} = _skein_p_{};\n", p.output ? "" : "const ", ctype(d),
                         p.name, p.name);
        break;
      case ParamKind::field:
        s += "    " + array_pointer(p.name, ctype(d), !p.output) + "\n";
        break;
      case ParamKind::scalar:
        if (d == Dtype::float16 || d == Dtype::bfloat16) {
          s += fmt::format("    {} _skein_h_{};\n    _skein_h_{}.bits = _skein_a_{};\n", ctype(d), p.name, p.name,
                           p.name);
          s += fmt::format("    const float {} = {};\n", p.name, load_value(d, "_skein_h_" + p.name));
        } else {
          s += fmt::format("    const {} {} = _skein_a_{};\n", ctype(d), p.name, p.name);
        }
        break;
    }
  }
  return s;
}

// The loop body's head: the point's box and slots, its global index, each field's element.
std::string locate(const std::vector<ParamDecl>& params, const Call& c, const char* idx) {
  std::string s;
  s += fmt::format("        {0} _skein_q = _skein_t;\n        int64_t _skein_l0, _skein_l1, _skein_l2;\n"
                   "        {0} _skein_e1, _skein_e2;\n",
                   idx);
  for (std::size_t b = 0; b < kMaxBoxes; ++b) {
    std::string cond = b + 1 < kMaxBoxes ? fmt::format("if (_skein_q < ({})_skein_b{}_f) ", idx, b + 1) : "";
    s += fmt::format(
        "        {0}{{ _skein_q -= ({2})_skein_b{1}_f; _skein_l0 = _skein_b{1}_s0; _skein_l1 = _skein_b{1}_s1; "
        "_skein_l2 = _skein_b{1}_s2; _skein_e1 = ({2})_skein_b{1}_e1; _skein_e2 = ({2})_skein_b{1}_e2; }}\n",
        b == 0 ? cond : (cond.empty() ? "else " : "else " + cond), b, idx);
  }
  s += fmt::format(
      "        {{\n            const {0} _skein_r = _skein_q / _skein_e2;\n"
      "            _skein_l2 += (int64_t)(_skein_q - _skein_r * _skein_e2);\n"
      "            _skein_l1 += (int64_t)(_skein_r % _skein_e1);\n"
      "            _skein_l0 += (int64_t)(_skein_r / _skein_e1);\n        }}\n",
      idx);
  std::vector<std::string> g, n;
  for (std::size_t a = 0; a < c.D; ++a) {
    const std::size_t slot = 3 - c.D + a;
    g.push_back(fmt::format("_skein_g{0} + _skein_l{0}", slot));
    n.push_back(fmt::format("_skein_N{}", slot));
  }
  s += fmt::format("        const int64_t gidx[{}] = {{{}}};\n", c.D, fmt::join(g, ", "));
  s += fmt::format("        const int64_t gshape[{}] = {{{}}};\n", c.D, fmt::join(n, ", "));
  s += "        (void)gidx; (void)gshape;\n";
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (c.kinds[k] != ParamKind::field) continue;
    const auto& p = params[k];
    s += fmt::format(
        "        GLOBAL_MEM {0}{1}* const _skein_c_{2} = _skein_p_{2} + (_skein_l0 * _skein_s_{2}_0 + "
        "_skein_l1 * _skein_s_{2}_1 + _skein_l2 * _skein_s_{2}_2);\n",
        p.output ? "" : "const ", ctype(c.dtypes[k]), p.name);
  }
  return s;
}

// The operation with an input field's neighbours as macros, and its outputs as private variables
// stored at the point after it.
std::string operation_block(const std::vector<ParamDecl>& params, const std::string& operation, const Call& c) {
  std::string defs, undefs, decls, stores;
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (c.kinds[k] != ParamKind::field) continue;
    const auto& p = params[k];
    const Dtype d = c.dtypes[k];
    if (!p.output) {
      std::vector<std::string> args, terms;
      for (std::size_t a = 0; a < c.D; ++a) {
        args.push_back(fmt::format("_o{}", a));
        terms.push_back(fmt::format("(int64_t)(_o{}) * _skein_s_{}_{}", a, p.name, 3 - c.D + a));
      }
      if (c.components[k] > 0) {
        args.push_back("_oc");
        terms.push_back(fmt::format("(int64_t)(_oc) * _skein_s_{}_3", p.name));
      }
      defs += fmt::format("#define {}({}) ({})\n", p.name, fmt::join(args, ", "),
                          load_value(d, fmt::format("_skein_c_{}[{}]", p.name, fmt::join(terms, " + "))));
      undefs += fmt::format("#undef {}\n", p.name);
      if (c.components[k] == 0) {
        // The plain name is the value at the point (a variable: the macro needs parentheses).
        decls += fmt::format("            const {} {} = {};\n", compute_ctype(d), p.name,
                             load_value(d, fmt::format("_skein_c_{}[0]", p.name)));
      }
    } else if (c.components[k] > 0) {
      decls += fmt::format("            {} {}[{}];\n", compute_ctype(d), p.name, c.components[k]);
      stores += fmt::format(
          "            for (int _skein_k = 0; _skein_k < {}; ++_skein_k) _skein_c_{}[_skein_k * _skein_s_{}_3] = {};\n",
          c.components[k], p.name, p.name, store_value(d, fmt::format("{}[_skein_k]", p.name)));
    } else {
      decls += fmt::format("            {} {};\n", compute_ctype(d), p.name);
      stores += fmt::format("            _skein_c_{}[0] = {};\n", p.name, store_value(d, p.name));
    }
  }
  std::string s = "        {\n";
  s += placeholder_typedefs(c.bindings);
  s += decls;
  s += defs;
  s += "            /* operation */\n            {\n" + operation + ";\n            }\n";
  s += undefs;
  s += stores;
  s += "        }\n";
  return s;
}

}  // namespace

std::string signature(const std::vector<ParamDecl>& params, const Call& c) {
  std::string s = fmt::format("stencil D{}", c.D);
  for (std::size_t k = 0; k < params.size(); ++k) {
    s += fmt::format(" {}:{}:{}", static_cast<int>(c.kinds[k]), name(c.dtypes[k]),
                     params[k].output ? c.components[k] : (c.components[k] > 0 ? 1 : 0));
  }
  return s;
}

std::string generate(const std::vector<ParamDecl>& params, const std::string& operation,
                     const StencilOptions& options, const Call& c) {
  std::string src = "/* Generated by skein::StencilKernel */\n";
  if (!options.preamble.empty()) src += options.preamble + "\n";
  const std::string kparams = kernel_params(params, c);
  const std::string body_setup = setup(params, c);
  const std::string op = operation_block(params, operation, c);
  for (const auto& [kname, idx] : {std::pair{options.name, "uint32_t"}, std::pair{options.name + "_i64", "uint64_t"}}) {
    src += fmt::format("KERNEL void {}(\n    {})\n{{\n", kname, kparams);
    src += body_setup;
    src += fmt::format(
        "    for ({0} _skein_t = ({0})get_global_id(0); _skein_t < ({0})_skein_n; _skein_t += ({0})get_global_size(0)) {{\n",
        idx);
    src += locate(params, c, idx);
    src += op;
    src += "    }\n}\n\n";
  }
  return render(src, options.globals, options.name);
}

}  // namespace skein::detail::stencil
