// SPDX-License-Identifier: BSD-3-Clause
// The generated source of ElementwiseKernel (skein/elementwise.hpp): the operation as a function
// of one element, and the kernel that calls it for every element, by one of two paths. Contiguous
// layouts: a grid-stride loop over 16-byte chunks (U chunks of W elements per thread and
// iteration, every load issued before the first element is computed), then the unaligned head and
// the tail element by element. Other layouts: each element's address from its multi-index.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>

#include "codegen/types.hpp"
#include "elementwise_impl.hpp"
#include "skein/ctypes.hpp"
#include "skein/template.hpp"

namespace skein::detail::elementwise {

namespace {

// The operation as a function of one element: inputs by value (raw ones as pointers), outputs
// through pointers to private variables.
std::string op_function(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  const auto& params = impl.params;
  std::vector<std::string> decl{"const VSIZE_T i", "const VSIZE_T n"};
  std::string outs_decl, outs_write;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const Dtype d = r.dtypes[k];
    if (p.raw) {
      decl.push_back(
          fmt::format("GLOBAL_MEM {}{}* {}", p.output ? "" : "const ", ctype(d), p.name));
    } else if (!p.output) {
      decl.push_back(fmt::format("const {} {}", codegen::compute_ctype(d), p.name));
    } else {
      decl.push_back(fmt::format("{}* _skein_out_{}", codegen::compute_ctype(d), p.name));
      outs_decl += fmt::format("    {} {};\n", codegen::compute_ctype(d), p.name);
      outs_write += fmt::format("    *_skein_out_{0} = {0};\n", p.name);
    }
  }
  return fmt::format(
      "WITHIN_KERNEL INLINE void {}_op({})\n{{\n{}{}    /* operation */\n    {};\n{}}}\n",
      impl.options.name, fmt::join(decl, ", "), codegen::placeholder_typedefs(r.bindings),
      outs_decl, impl.operation, outs_write);
}

// Vector views of the non-raw arrays (contiguous path): W elements and 16-byte words in a union.
std::string vector_unions(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  std::string src;
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    if (r.layout_index[k] == npos) continue;
    const std::size_t V = r.W * itemsize(r.dtypes[k]) / 16;
    src += fmt::format("typedef union {{ uint4 v[{}]; {} e[{}]; }} _skein_vec_{}_{};\n", V,
                       ctype(r.dtypes[k]), r.W, impl.options.name, impl.params[k].name);
  }
  return src;
}

// The kernel's signature: per parameter an array (allocation and offset) or a scalar's value, then
// the element count and the layout's values (contiguous: the vector loop's start and chunk count;
// strided: the shape, then every array's strides).
std::string kernel_head(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  const auto& params = impl.params;
  const std::size_t D = r.layout.shape.size();
  std::vector<std::string> kparams;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    if (r.is_array[k]) {
      kparams.push_back(codegen::array_param(p.name));
    } else {
      kparams.push_back(
          fmt::format("const {} _skein_a_{}", codegen::scalar_param_ctype(r.dtypes[k]), p.name));
    }
  }
  kparams.emplace_back("const uint64_t _skein_n");
  if (r.layout.contiguous) {
    kparams.emplace_back("const uint64_t _skein_head");
    kparams.emplace_back("const uint64_t _skein_nchunks");
  } else {
    for (std::size_t d = 0; d < D; ++d)
      kparams.push_back(fmt::format("const uint64_t _skein_d{}", d));
    for (std::size_t j = 0; j < r.layout_count; ++j) {
      for (std::size_t d = 0; d < D; ++d)
        kparams.push_back(fmt::format("const uint64_t _skein_s{}_{}", j, d));
    }
  }
  return fmt::format("KERNEL void {}({})\n{{\n", impl.options.name, fmt::join(kparams, ",\n    "));
}

// Pointers to the arrays (typed, or bytes on the strided path) and the scalars' values.
std::string argument_setup(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  std::string src;
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    const auto& p = impl.params[k];
    const Dtype d = r.dtypes[k];
    if (r.is_array[k]) {
      if (r.layout.contiguous || p.raw) {
        src += "    " + codegen::array_pointer(p.name, ctype(d), !p.output) + "\n";
      } else {
        src += fmt::format("    GLOBAL_MEM {}char* _skein_q_{} = _skein_b_{} + _skein_o_{};\n",
                           p.output ? "" : "const ", p.name, p.name, p.name);
      }
    } else if (d == Dtype::float16 || d == Dtype::bfloat16) {
      src += fmt::format("    {} _skein_h_{};\n    _skein_h_{}.bits = _skein_a_{};\n", ctype(d),
                         p.name, p.name, p.name);
      src += fmt::format("    const float _skein_v_{} = {};\n", p.name,
                         codegen::load_value(d, "_skein_h_" + p.name));
    } else {
      src += fmt::format("    const {} _skein_v_{} = _skein_a_{};\n", ctype(d), p.name, p.name);
    }
  }
  return src;
}

// Input k's element (a compute value), and the statement storing value v into output k.
using ElementValue = std::function<std::string(std::size_t k)>;
using ElementStore = std::function<std::string(std::size_t k, const std::string& v)>;

// One call of the operation on the element at `index`.
std::string op_call(const ElementwiseKernel::Impl& impl, const Resolved& r,
                    const std::string& index, const ElementValue& value, const ElementStore& store,
                    const std::string& indent) {
  const auto& params = impl.params;
  std::string s;
  std::vector<std::string> a{index, "_skein_n"};
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    if (p.raw) {
      a.push_back("_skein_p_" + p.name);
    } else if (!p.output) {
      a.push_back(r.is_array[k] ? value(k) : "_skein_v_" + p.name);
    } else {
      s += fmt::format("{}{} _skein_t_{};\n", indent, codegen::compute_ctype(r.dtypes[k]), p.name);
      a.push_back("&_skein_t_" + p.name);
    }
  }
  s += fmt::format("{}{}_op({});\n", indent, impl.options.name, fmt::join(a, ", "));
  for (std::size_t k = impl.n_in; k < params.size(); ++k) {
    if (params[k].raw) continue;
    s += indent + store(k, codegen::store_value(r.dtypes[k], "_skein_t_" + params[k].name)) + "\n";
  }
  return s;
}

// The vector loop of the contiguous path: U chunks of W elements per thread and iteration, every
// load issued before the first element is computed.
std::string vector_loop(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  const auto& params = impl.params;
  const std::string& kname = impl.options.name;
  const std::size_t W = r.W, U = r.U;
  std::string src = fmt::format(
      "    for (VSIZE_T _skein_c = _skein_tid; _skein_c < _skein_nchunks; _skein_c += _skein_nth * "
      "{}) {{\n",
      U);
  for (std::size_t u = 0; u < U; ++u) {
    src += fmt::format("        const VSIZE_T _skein_c{0} = _skein_c + {0} * _skein_nth;\n", u);
  }
  for (std::size_t k = 0; k < impl.n_in; ++k) {
    if (r.layout_index[k] == npos) continue;
    const std::size_t V = W * itemsize(r.dtypes[k]) / 16;
    const auto& nm = params[k].name;
    src += fmt::format(
        "        GLOBAL_MEM const uint4* _skein_w_{0} = (GLOBAL_MEM const uint4*)(_skein_p_{0} + "
        "_skein_head);\n",
        nm);
    for (std::size_t u = 0; u < U; ++u) {
      src += fmt::format("        _skein_vec_{}_{} _skein_x_{}_{};\n", kname, nm, nm, u);
      src += fmt::format("        if (_skein_c{} < _skein_nchunks) {{\n", u);
      for (std::size_t v = 0; v < V; ++v) {
        src += fmt::format(
            "            _skein_x_{0}_{1}.v[{2}] = _skein_w_{0}[_skein_c{1} * {3} + {2}];\n", nm, u,
            v, V);
      }
      src += "        }\n";
    }
  }
  for (std::size_t k = impl.n_in; k < params.size(); ++k) {
    if (r.layout_index[k] == npos) continue;
    src += fmt::format(
        "        GLOBAL_MEM uint4* _skein_w_{0} = (GLOBAL_MEM uint4*)(_skein_p_{0} + "
        "_skein_head);\n",
        params[k].name);
  }
  for (std::size_t u = 0; u < U; ++u) {
    src += fmt::format("        if (_skein_c{} < _skein_nchunks) {{\n", u);
    for (std::size_t k = impl.n_in; k < params.size(); ++k) {
      if (r.layout_index[k] == npos) continue;
      src += fmt::format("            _skein_vec_{}_{} _skein_y_{};\n", kname, params[k].name,
                         params[k].name);
    }
    for (std::size_t j = 0; j < W; ++j) {
      src += "            {\n";
      src += op_call(
          impl, r, fmt::format("_skein_head + _skein_c{} * {} + {}", u, W, j),
          [&](std::size_t k) {
            return codegen::load_value(r.dtypes[k],
                                       fmt::format("_skein_x_{}_{}.e[{}]", params[k].name, u, j));
          },
          [&](std::size_t k, const std::string& v) {
            return fmt::format("_skein_y_{}.e[{}] = {};", params[k].name, j, v);
          },
          "                ");
      src += "            }\n";
    }
    for (std::size_t k = impl.n_in; k < params.size(); ++k) {
      if (r.layout_index[k] == npos) continue;
      const std::size_t V = W * itemsize(r.dtypes[k]) / 16;
      for (std::size_t v = 0; v < V; ++v) {
        src += fmt::format(
            "            _skein_w_{0}[_skein_c{1} * {3} + {2}] = _skein_y_{0}.v[{2}];\n",
            params[k].name, u, v, V);
      }
    }
    src += "        }\n";
  }
  src += "    }\n";
  return src;
}

// The contiguous path's unaligned head and tail, element by element.
std::string head_and_tail_loop(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  const auto& params = impl.params;
  std::string src =
      fmt::format("    const VSIZE_T _skein_tail = _skein_head + _skein_nchunks * {};\n", r.W);
  src += "    const VSIZE_T _skein_ns = _skein_head + (_skein_n - _skein_tail);\n";
  src +=
      "    for (VSIZE_T _skein_t = _skein_tid; _skein_t < _skein_ns; _skein_t += _skein_nth) {\n";
  src +=
      "        const VSIZE_T _skein_i = _skein_t < _skein_head ? _skein_t : _skein_tail + "
      "(_skein_t - _skein_head);\n";
  src += op_call(
      impl, r, "_skein_i",
      [&](std::size_t k) {
        return codegen::load_value(r.dtypes[k],
                                   fmt::format("_skein_p_{}[_skein_i]", params[k].name));
      },
      [&](std::size_t k, const std::string& v) {
        return fmt::format("_skein_p_{}[_skein_i] = {};", params[k].name, v);
      },
      "        ");
  src += "    }\n";
  return src;
}

// The general layout: each element's address from its multi-index.
std::string strided_loop(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  const auto& params = impl.params;
  const std::size_t D = r.layout.shape.size();
  std::string src =
      "    for (VSIZE_T _skein_t = _skein_tid; _skein_t < _skein_n; _skein_t += _skein_nth) {\n";
  src += "        VSIZE_T _skein_r = _skein_t;\n";
  for (std::size_t j = 0; j < r.layout_count; ++j)
    src += fmt::format("        uint64_t _skein_off{} = 0;\n", j);
  for (std::size_t d = D; d-- > 0;) {
    if (d > 0) {
      src += fmt::format(
          "        {{\n            const VSIZE_T _skein_x = _skein_r % _skein_d{0};\n"
          "            _skein_r /= _skein_d{0};\n",
          d);
      for (std::size_t j = 0; j < r.layout_count; ++j) {
        src += fmt::format("            _skein_off{0} += _skein_x * _skein_s{0}_{1};\n", j, d);
      }
      src += "        }\n";
    } else {
      for (std::size_t j = 0; j < r.layout_count; ++j) {
        src += fmt::format("        _skein_off{0} += _skein_r * _skein_s{0}_0;\n", j);
      }
    }
  }
  src += op_call(
      impl, r, "_skein_t",
      [&](std::size_t k) {
        return codegen::load_value(
            r.dtypes[k], fmt::format("*(GLOBAL_MEM const {}*)(_skein_q_{} + _skein_off{})",
                                     ctype(r.dtypes[k]), params[k].name, r.layout_index[k]));
      },
      [&](std::size_t k, const std::string& v) {
        return fmt::format("*(GLOBAL_MEM {}*)(_skein_q_{} + _skein_off{}) = {};",
                           ctype(r.dtypes[k]), params[k].name, r.layout_index[k], v);
      },
      "        ");
  src += "    }\n";
  return src;
}

}  // namespace

std::string generate(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  std::string src;
  src += "/* Generated by skein::ElementwiseKernel */\n";
  if (!impl.options.fp_contract) src += "#ifdef OPENCL\n#pragma OPENCL FP_CONTRACT OFF\n#endif\n";
  if (!impl.options.preamble.empty()) src += impl.options.preamble + "\n";
  src += op_function(impl, r);
  if (r.layout.contiguous) src += vector_unions(impl, r);
  src += kernel_head(impl, r);
  src += argument_setup(impl, r);
  src += "    const VSIZE_T _skein_tid = get_global_id(0);\n";
  src += "    const VSIZE_T _skein_nth = get_global_size(0);\n";
  if (r.layout.contiguous) {
    const bool any_vector = std::any_of(r.layout_index.begin(), r.layout_index.end(),
                                        [](std::size_t j) { return j != npos; });
    if (any_vector) src += vector_loop(impl, r);
    src += head_and_tail_loop(impl, r);
  } else {
    src += strided_loop(impl, r);
  }
  src += "}\n";
  return render(src, impl.options.globals, impl.options.name);
}

}  // namespace skein::detail::elementwise
