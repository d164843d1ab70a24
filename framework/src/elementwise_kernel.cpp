// SPDX-License-Identifier: BSD-3-Clause
#include "skein/elementwise.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"
#include "arithmetic.hpp"
#include "codegen/launch.hpp"
#include "codegen/params.hpp"
#include "codegen/programs.hpp"
#include "codegen/types.hpp"
#include "kernel_operands.hpp"
#include "promotion.hpp"
#include "strided_copy.hpp"
#include "skein/ctypes.hpp"
#include "skein/functions.hpp"

namespace skein {

// --- the kernel --------------------------------------------------------------------------------

namespace detail::elementwise {

// A plan made by the full path, kept for later calls of the same key: what make_plan computed
// that does not depend on the buffers or the scalars' values.
struct FastPlan {
  codegen::CallKey key;
  const void* context = nullptr;  // the context's Impl; alive while `program` is
  std::weak_ptr<const codegen::CompiledProgram> program;  // weak: the program cache decides its life
  const Kernel* kernel = nullptr;                // in *program
  std::size_t device = 0, groups = 0, local = 0;
  std::vector<Dtype> dtypes;         // per parameter
  std::vector<std::uint64_t> tail;   // the values after the parameters (size, layout)
};

}  // namespace detail::elementwise

struct ElementwiseKernel::Impl {
  std::vector<detail::codegen::ParamDecl> params;  // inputs, then outputs
  std::size_t n_in = 0;
  std::string operation;
  ElementwiseOptions options;
  std::uint64_t owner = detail::codegen::new_cache_owner();
  mutable std::atomic<std::size_t> built{0};  // programs generated (cache misses)
  std::vector<std::string> what;  // per parameter, for conversion errors: "argument 'a' of kernel 'k'"

  // The plans of the last few call shapes (most recent first), so that a repeated call skips
  // resolving, the program cache's lookup and the kernel's preparation.
  static constexpr std::size_t kFastPlans = 8;
  mutable std::mutex fast_mutex;
  mutable std::vector<std::shared_ptr<const detail::elementwise::FastPlan>> fast_plans;

  ~Impl() { detail::codegen::drop_cache_owner(owner); }
  std::size_t n_out() const { return params.size() - n_in; }
};

namespace {

constexpr std::string_view kReserved[] = {"i", "n"};

std::string describe_params(const std::vector<detail::codegen::ParamDecl>& params, std::size_t from,
                            std::size_t to) {
  std::vector<std::string> parts;
  for (std::size_t k = from; k < to; ++k) {
    parts.push_back(fmt::format("{}{} {}", params[k].raw ? "raw " : "", params[k].type, params[k].name));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Everything a call needs that depends on its arguments.
struct Resolved {
  std::size_t device = 0;
  std::vector<Operand> args;  // inputs and outputs (allocated ones included)
  std::vector<Array> outputs;
  std::vector<Dtype> dtypes;    // per parameter
  std::vector<bool> is_array;   // per parameter
  detail::codegen::Bindings bindings;
  detail::codegen::Layout layout;
  std::vector<std::size_t> layout_index;  // per parameter: its index among the non-raw arrays, or npos
  std::size_t layout_count = 0;           // non-raw arrays
  std::uint64_t n = 0;
  std::size_t W = 1, U = 1;  // contiguous path: elements per 16-byte chunk, chunks per thread
  std::string signature;
};

constexpr std::size_t npos = static_cast<std::size_t>(-1);

void check_array_alignment(const Array& a, const std::string& call, const std::string& kernel,
                           const std::string& param) {
  const std::size_t isz = a.itemsize();
  bool ok = detail::codegen::address_in_allocation(a) % isz == 0;
  for (std::size_t d = 0; ok && d < a.ndim(); ++d) ok = a.shape()[d] <= 1 || a.strides()[d] % isz == 0;
  if (!ok) {
    detail::raise_in(SKEIN_HERE, call,
                     "Use views whose offset and strides are multiples of the itemsize.",
                     "kernel '{}': argument '{}' ({} array, byte offset {}, strides {}) has "
                     "elements that are not aligned to their size",
                     kernel, param, name(a.dtype()), detail::codegen::address_in_allocation(a),
                     to_string(a.strides()));
  }
}

Resolved resolve(const ElementwiseKernel::Impl& impl, const Queue& queue,
                 std::span<const Operand> args, std::optional<std::size_t> expect_device,
                 bool allocate) {
  const std::string& kname = impl.options.name;
  const std::string call = "ElementwiseKernel";
  const auto& params = impl.params;
  if (args.size() != impl.n_in && args.size() != params.size()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass the inputs, then either every output or none (they are then "
                     "allocated).",
                     "kernel '{}' takes {} input(s) ({}) and {} output(s) ({}); {} argument(s) "
                     "were given",
                     kname, impl.n_in, describe_params(params, 0, impl.n_in), impl.n_out(),
                     describe_params(params, impl.n_in, params.size()), args.size());
  }
  for (std::size_t k = 0; k < args.size(); ++k) {
    const auto& p = params[k];
    if (args[k].is_scalar() && (p.output || p.raw)) {
      detail::raise_in(SKEIN_HERE, call, "Pass an Array for it.",
                       "kernel '{}': argument {} ('{}') is the scalar {}, but {} parameter takes "
                       "an array",
                       kname, k, p.name, args[k].to_string(), p.output ? "an output" : "a raw");
    }
    if (args[k].is_array()) {
      const Array& a = args[k].array();
      check_array_alignment(a, call, kname, p.name);
      if (p.raw && !a.is_contiguous()) {
        detail::raise_in(SKEIN_HERE, call, "Pass a contiguous array (copy the view first).",
                         "kernel '{}': raw argument {} ('{}') is a strided view", kname, k, p.name);
      }
    }
  }
  Resolved r;
  r.bindings = detail::codegen::bind_types(params, args, call, kname);
  for (const auto& p : params) r.dtypes.push_back(detail::codegen::param_dtype(p, r.bindings, call, kname));
  const auto device = detail::codegen::common_device(queue, args, params, expect_device, call, kname);
  if (!device && !expect_device) {
    detail::raise_in(SKEIN_HERE, call, "Pass at least one array (the outputs, for example).",
                     "kernel '{}': no argument is an array, so there is no device to run on",
                     kname);
  }
  r.device = device ? *device : *expect_device;

  // The shape: inputs and given outputs broadcast together; outputs must have it.
  std::vector<bool> take(args.size());
  for (std::size_t k = 0; k < args.size(); ++k) take[k] = !params[k].raw && args[k].is_array();
  bool any = std::find(take.begin(), take.end(), true) != take.end();
  if (!any) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass a non-raw array (the outputs, for example): its shape sets the number "
                     "of elements.",
                     "kernel '{}': no non-raw array among the arguments, so the number of "
                     "elements is unknown",
                     kname);
  }
  const Shape shape = detail::codegen::broadcast_shapes(args, take, params, call, kname);
  for (std::size_t k = impl.n_in; k < args.size(); ++k) {
    if (params[k].raw) continue;
    if (args[k].array().shape() != shape) {
      detail::raise_in(SKEIN_HERE, call,
                       "Give outputs the shape the inputs broadcast to.",
                       "kernel '{}': output '{}' has shape {}; the inputs broadcast to {}", kname,
                       params[k].name, to_string(args[k].array().shape()), to_string(shape));
    }
  }
  r.args.assign(args.begin(), args.end());
  if (args.size() == impl.n_in) {
    for (std::size_t k = impl.n_in; k < params.size(); ++k) {
      if (params[k].raw) {
        detail::raise_in(SKEIN_HERE, call, "Pass the outputs.",
                         "kernel '{}': raw output '{}' cannot be allocated (its size is unknown)",
                         kname, params[k].name);
      }
      // source() needs no memory: the layout of a new contiguous array is known.
      if (allocate) r.args.emplace_back(Array::empty(queue, shape, r.dtypes[k], r.device));
    }
  }
  if (allocate || args.size() == params.size()) {
    for (std::size_t k = impl.n_in; k < params.size(); ++k) r.outputs.push_back(r.args[k].array());
  }

  r.n = shape_size(shape);
  r.layout_index.assign(params.size(), npos);
  std::vector<detail::codegen::ArrayShape> shapes;
  std::size_t min_isz = 16, sum_isz = 0;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const bool is_array = k >= args.size() || args[k].is_array();
    r.is_array.push_back(is_array);
    if (params[k].raw || !is_array) continue;
    r.layout_index[k] = shapes.size();
    const std::size_t isz = itemsize(r.dtypes[k]);
    if (k < r.args.size()) {
      shapes.push_back(detail::codegen::shape_of(r.args[k].array()));
    } else {
      shapes.push_back({shape, contiguous_strides(shape, isz), isz});
    }
    min_isz = std::min(min_isz, isz);
    sum_isz += isz;
  }
  r.layout_count = shapes.size();
  r.layout = detail::codegen::make_layout(shape, shapes);

  r.W = 16 / min_isz;
  r.U = std::clamp<std::size_t>(
      detail::floor_pow2(std::max<std::size_t>(1, 256 / std::max<std::size_t>(1, r.W * sum_isz))), 1,
      4);

  std::string sig = r.layout.contiguous ? "ew1|c" : fmt::format("ew1|s{}", r.layout.shape.size());
  for (std::size_t k = 0; k < params.size(); ++k) {
    sig += fmt::format("|{}{}", params[k].raw ? 'R' : r.is_array[k] ? 'A' : 'S',
                       name(r.dtypes[k]));
  }
  r.signature = std::move(sig);
  return r;
}

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
      decl.push_back(fmt::format("GLOBAL_MEM {}{}* {}", p.output ? "" : "const ", ctype(d), p.name));
    } else if (!p.output) {
      decl.push_back(fmt::format("const {} {}", detail::codegen::compute_ctype(d), p.name));
    } else {
      decl.push_back(fmt::format("{}* _skein_out_{}", detail::codegen::compute_ctype(d), p.name));
      outs_decl += fmt::format("    {} {};\n", detail::codegen::compute_ctype(d), p.name);
      outs_write += fmt::format("    *_skein_out_{0} = {0};\n", p.name);
    }
  }
  return fmt::format(
      "WITHIN_KERNEL INLINE void {}_op({})\n{{\n{}{}    /* operation */\n    {};\n{}}}\n",
      impl.options.name, fmt::join(decl, ", "), detail::codegen::placeholder_typedefs(r.bindings), outs_decl,
      impl.operation, outs_write);
}

std::string generate(const ElementwiseKernel::Impl& impl, const Resolved& r) {
  const auto& params = impl.params;
  const std::string& kname = impl.options.name;
  std::string src;
  src += "/* Generated by skein::ElementwiseKernel */\n";
  if (!impl.options.fp_contract) src += "#ifdef OPENCL\n#pragma OPENCL FP_CONTRACT OFF\n#endif\n";
  if (!impl.options.preamble.empty()) src += impl.options.preamble + "\n";
  src += op_function(impl, r);

  const bool contiguous = r.layout.contiguous;
  const std::size_t D = r.layout.shape.size();
  const std::size_t W = r.W, U = r.U;

  // Vector views of the arrays (contiguous path).
  if (contiguous) {
    for (std::size_t k = 0; k < params.size(); ++k) {
      if (r.layout_index[k] == npos) continue;
      const std::size_t V = W * itemsize(r.dtypes[k]) / 16;
      src += fmt::format("typedef union {{ uint4 v[{}]; {} e[{}]; }} _skein_vec_{}_{};\n", V,
                         ctype(r.dtypes[k]), W, kname, params[k].name);
    }
  }

  // Parameters.
  std::vector<std::string> kparams;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    if (r.is_array[k]) {
      kparams.push_back(detail::codegen::array_param(p.name));
    } else {
      kparams.push_back(fmt::format("const {} _skein_a_{}", detail::codegen::scalar_param_ctype(r.dtypes[k]), p.name));
    }
  }
  kparams.push_back("const uint64_t _skein_n");
  if (contiguous) {
    kparams.push_back("const uint64_t _skein_head");
    kparams.push_back("const uint64_t _skein_nchunks");
  } else {
    for (std::size_t d = 0; d < D; ++d) kparams.push_back(fmt::format("const uint64_t _skein_d{}", d));
    for (std::size_t j = 0; j < r.layout_count; ++j) {
      for (std::size_t d = 0; d < D; ++d) kparams.push_back(fmt::format("const uint64_t _skein_s{}_{}", j, d));
    }
  }
  src += fmt::format("KERNEL void {}({})\n{{\n", kname, fmt::join(kparams, ",\n    "));

  // Pointers and scalar values.
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const Dtype d = r.dtypes[k];
    if (r.is_array[k]) {
      if (contiguous || p.raw) {
        src += "    " + detail::codegen::array_pointer(p.name, ctype(d), !p.output) + "\n";
      } else {
        src += fmt::format("    GLOBAL_MEM {}char* _skein_q_{} = _skein_b_{} + _skein_o_{};\n",
                           p.output ? "" : "const ", p.name, p.name, p.name);
      }
    } else if (d == Dtype::float16 || d == Dtype::bfloat16) {
      src += fmt::format("    {} _skein_h_{};\n    _skein_h_{}.bits = _skein_a_{};\n", ctype(d),
                         p.name, p.name, p.name);
      src += fmt::format("    const float _skein_v_{} = {};\n", p.name,
                         detail::codegen::load_value(d, "_skein_h_" + p.name));
    } else {
      src += fmt::format("    const {} _skein_v_{} = _skein_a_{};\n", ctype(d), p.name, p.name);
    }
  }
  src += "    const VSIZE_T _skein_tid = get_global_id(0);\n";
  src += "    const VSIZE_T _skein_nth = get_global_size(0);\n";

  // One call of the operation; `value(k)` gives input k's element, `store(k, v)` the statement
  // storing output k.
  auto call_op = [&](const std::string& index, const std::function<std::string(std::size_t)>& value,
                     const std::function<std::string(std::size_t, const std::string&)>& store,
                     const std::string& indent) {
    std::string s;
    std::vector<std::string> a{index, "_skein_n"};
    for (std::size_t k = 0; k < params.size(); ++k) {
      const auto& p = params[k];
      if (p.raw) {
        a.push_back("_skein_p_" + p.name);
      } else if (!p.output) {
        a.push_back(r.is_array[k] ? value(k) : "_skein_v_" + p.name);
      } else {
        s += fmt::format("{}{} _skein_t_{};\n", indent, detail::codegen::compute_ctype(r.dtypes[k]), p.name);
        a.push_back("&_skein_t_" + p.name);
      }
    }
    s += fmt::format("{}{}_op({});\n", indent, kname, fmt::join(a, ", "));
    for (std::size_t k = impl.n_in; k < params.size(); ++k) {
      if (params[k].raw) continue;
      s += indent + store(k, detail::codegen::store_value(r.dtypes[k], "_skein_t_" + params[k].name)) + "\n";
    }
    return s;
  };

  if (contiguous) {
    bool any_vector = false;
    for (std::size_t k = 0; k < params.size(); ++k) any_vector |= r.layout_index[k] != npos;
    if (any_vector) {
      // Vector loop: U chunks of W elements per thread and iteration, every load issued before
      // the first element is computed.
      src += fmt::format(
          "    for (VSIZE_T _skein_c = _skein_tid; _skein_c < _skein_nchunks; _skein_c += _skein_nth * {}) {{\n",
          U);
      for (std::size_t u = 0; u < U; ++u) {
        src += fmt::format("        const VSIZE_T _skein_c{0} = _skein_c + {0} * _skein_nth;\n", u);
      }
      for (std::size_t k = 0; k < impl.n_in; ++k) {
        if (r.layout_index[k] == npos) continue;
        const std::size_t V = W * itemsize(r.dtypes[k]) / 16;
        const auto& nm = params[k].name;
        src += fmt::format(
            "        GLOBAL_MEM const uint4* _skein_w_{0} = (GLOBAL_MEM const uint4*)(_skein_p_{0} + _skein_head);\n",
            nm);
        for (std::size_t u = 0; u < U; ++u) {
          src += fmt::format("        _skein_vec_{}_{} _skein_x_{}_{};\n", kname, nm, nm, u);
          src += fmt::format("        if (_skein_c{} < _skein_nchunks) {{\n", u);
          for (std::size_t v = 0; v < V; ++v) {
            src += fmt::format("            _skein_x_{0}_{1}.v[{2}] = _skein_w_{0}[_skein_c{1} * {3} + {2}];\n",
                               nm, u, v, V);
          }
          src += "        }\n";
        }
      }
      for (std::size_t k = impl.n_in; k < params.size(); ++k) {
        if (r.layout_index[k] == npos) continue;
        src += fmt::format(
            "        GLOBAL_MEM uint4* _skein_w_{0} = (GLOBAL_MEM uint4*)(_skein_p_{0} + _skein_head);\n",
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
          src += call_op(
              fmt::format("_skein_head + _skein_c{} * {} + {}", u, W, j),
              [&](std::size_t k) {
                return detail::codegen::load_value(r.dtypes[k], fmt::format("_skein_x_{}_{}.e[{}]", params[k].name, u, j));
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
            src += fmt::format("            _skein_w_{0}[_skein_c{1} * {3} + {2}] = _skein_y_{0}.v[{2}];\n",
                               params[k].name, u, v, V);
          }
        }
        src += "        }\n";
      }
      src += "    }\n";
    }
    // The unaligned head and the tail, element by element.
    src += fmt::format("    const VSIZE_T _skein_tail = _skein_head + _skein_nchunks * {};\n", W);
    src += "    const VSIZE_T _skein_ns = _skein_head + (_skein_n - _skein_tail);\n";
    src += "    for (VSIZE_T _skein_t = _skein_tid; _skein_t < _skein_ns; _skein_t += _skein_nth) {\n";
    src += "        const VSIZE_T _skein_i = _skein_t < _skein_head ? _skein_t : _skein_tail + (_skein_t - _skein_head);\n";
    src += call_op(
        "_skein_i",
        [&](std::size_t k) {
          return detail::codegen::load_value(r.dtypes[k], fmt::format("_skein_p_{}[_skein_i]", params[k].name));
        },
        [&](std::size_t k, const std::string& v) {
          return fmt::format("_skein_p_{}[_skein_i] = {};", params[k].name, v);
        },
        "        ");
    src += "    }\n";
  } else {
    // General layout: each element's address from its multi-index.
    src += "    for (VSIZE_T _skein_t = _skein_tid; _skein_t < _skein_n; _skein_t += _skein_nth) {\n";
    src += "        VSIZE_T _skein_r = _skein_t;\n";
    for (std::size_t j = 0; j < r.layout_count; ++j) src += fmt::format("        uint64_t _skein_off{} = 0;\n", j);
    for (std::size_t d = D; d-- > 0;) {
      if (d > 0) {
        src += fmt::format("        {{\n            const VSIZE_T _skein_x = _skein_r % _skein_d{0};\n"
                           "            _skein_r /= _skein_d{0};\n", d);
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
    src += call_op(
        "_skein_t",
        [&](std::size_t k) {
          return detail::codegen::load_value(
              r.dtypes[k], fmt::format("*(GLOBAL_MEM const {}*)(_skein_q_{} + _skein_off{})",
                                       ctype(r.dtypes[k]), params[k].name, r.layout_index[k]));
        },
        [&](std::size_t k, const std::string& v) {
          return fmt::format("*(GLOBAL_MEM {}*)(_skein_q_{} + _skein_off{}) = {};", ctype(r.dtypes[k]),
                             params[k].name, r.layout_index[k], v);
        },
        "        ");
    src += "    }\n";
  }
  src += "}\n";
  return render(src, impl.options.globals, kname);
}

struct Plan {
  Resolved resolved;
  std::shared_ptr<const detail::codegen::CompiledProgram> program;
  detail::codegen::ArgPack args;
  std::size_t groups = 0;
  std::size_t local = 0;
  std::vector<std::uint64_t> tail;  // the values packed after the parameters
};

Plan make_plan(const ElementwiseKernel::Impl& impl, const Queue& queue, std::span<const Operand> args,
               std::optional<std::size_t> expect_device) {
  Plan plan;
  plan.resolved = resolve(impl, queue, args, expect_device, true);
  const Resolved& r = plan.resolved;
  if (r.n == 0) return plan;
  ProgramOptions options;
  options.fast_math = impl.options.fast_math;
  options.name = impl.options.name;
  if (!impl.options.fp_contract && queue.context().api().id() == ApiId::cuda) {
    options.compiler_options.push_back("--fmad=false");
  }
  plan.program = detail::codegen::cached_program(
      impl.owner, queue.context(), r.signature,
      [&] {
        impl.built += 1;
        return generate(impl, r);
      },
      {impl.options.name}, options);
  const std::size_t d = r.device;
  plan.local = plan.program->local_size[d];
  const std::size_t resident = plan.program->resident(impl.options.name, d);

  const auto& params = impl.params;
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (r.args[k].is_array()) {
      plan.args.array(r.args[k].array());
    } else {
      plan.args.bytes(r.args[k].bytes_as(r.dtypes[k], impl.what[k]));
    }
  }
  auto tail = [&](std::uint64_t v) {
    plan.args.value(v);
    plan.tail.push_back(v);
  };
  tail(r.n);
  std::uint64_t work = r.n;
  if (r.layout.contiguous) {
    std::uint64_t head = r.n, nchunks = 0;
    const bool aligned_buffers = queue.context().device(d).params().base_address_align >= 16 ||
                                 queue.context().api().id() == ApiId::cuda;
    std::vector<const Array*> vector_arrays;
    for (std::size_t k = 0; k < params.size(); ++k) {
      if (r.layout_index[k] != npos) vector_arrays.push_back(&r.args[k].array());
    }
    if (aligned_buffers && !vector_arrays.empty()) {
      if (auto h = detail::codegen::common_vector_start(vector_arrays); h && *h < r.n) {
        head = *h;
        nchunks = (r.n - head) / r.W;
      }
    }
    if (nchunks == 0) head = r.n;
    tail(head);
    tail(nchunks);
    work = std::max<std::uint64_t>(detail::ceil_div(nchunks, r.U), r.n - nchunks * r.W);
  } else {
    for (auto s : r.layout.shape) tail(s);
    for (const auto& strides : r.layout.strides) {
      for (auto s : strides) tail(s);
    }
  }
  plan.groups = std::clamp<std::uint64_t>(detail::ceil_div(work, plan.local), 1, resident);
  return plan;
}

void execute(const ElementwiseKernel::Impl& impl, const Queue& queue, const Plan& plan) {
  if (!plan.program) return;
  detail::codegen::launch(plan.program->kernel(impl.options.name), queue, plan.resolved.device, plan.groups,
                 plan.local, plan.args);
}

}  // namespace

ElementwiseKernel::ElementwiseKernel(std::string_view in_params, std::string_view out_params,
                                     std::string operation, ElementwiseOptions options) {
  auto impl = std::make_shared<Impl>();
  const std::string taken[] = {options.name, options.name + "_op"};
  impl->params = detail::codegen::declare_kernel(in_params, out_params, operation, options.name, kReserved, taken,
                                        "ElementwiseKernel", "z = a * x + y", impl->n_in);
  impl->what = detail::codegen::describe_arguments(impl->params, options.name);
  impl->operation = std::move(operation);
  impl->options = std::move(options);
  impl_ = std::move(impl);
}

const std::string& ElementwiseKernel::name() const { return impl_->options.name; }
std::size_t ElementwiseKernel::programs_built() const { return impl_->built.load(); }

namespace {

// The plan this thread called last, and the kernel object it belongs to (compared by its
// ownership, not its address: a kernel made later at the same address is another owner, and the
// weak reference keeps the control block, so no other owner can have it). Spares the kernel's
// mutex and search for a thread that calls one kernel with one argument layout over and over.
struct LastPlan {
  std::weak_ptr<ElementwiseKernel::Impl> owner;
  std::shared_ptr<const detail::elementwise::FastPlan> plan;
};

// A call through a kept plan: true when one matched and the kernel was enqueued.
bool call_fast(const std::shared_ptr<ElementwiseKernel::Impl>& owner, const Queue& queue,
               std::span<const Operand> args, const detail::codegen::CallKey& key) {
  const ElementwiseKernel::Impl& impl = *owner;
  thread_local LastPlan last;
  const void* context = detail::impl_of(queue.context()).get();
  const bool same_owner = !last.owner.owner_before(owner) && !owner.owner_before(last.owner);
  if (!same_owner || !last.plan || last.plan->context != context || !(last.plan->key == key)) {
    auto found = detail::codegen::find_plan(impl.fast_mutex, impl.fast_plans, context, key);
    if (!found) return false;
    last.owner = owner;
    last.plan = std::move(found);
  }
  const detail::elementwise::FastPlan* plan = last.plan.get();
  const auto program = plan->program.lock();  // the program (and so the context) still alive
  if (!program) {
    last = LastPlan{};  // gone with its context: the call goes the full way and keeps a new plan
    return false;
  }
  detail::codegen::StackArgs pack;
  // Two arguments per array (buffer, offset); words: one per array, up to three per scalar (a
  // 16-byte value and its alignment), one per tail value.
  if (!pack.fits(2 * args.size() + plan->tail.size(), 3 * args.size() + plan->tail.size())) {
    return false;
  }
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k].is_array()) {
      pack.array(args[k].array());
    } else {
      std::array<std::byte, 16> bytes;
      pack.value_bytes(bytes.data(), args[k].bytes_into(plan->dtypes[k], bytes, impl.what[k]));
    }
  }
  for (std::uint64_t v : plan->tail) pack.value_bytes(reinterpret_cast<const std::byte*>(&v), 8);
  detail::codegen::launch_planned(*plan->kernel, queue, plan->device, plan->groups, plan->local, pack.view());
  return true;
}

// Keeps the plan of a call that went the full way, for the next calls with its key.
void keep_plan(const ElementwiseKernel::Impl& impl, const Queue& queue, const Plan& plan,
               const detail::codegen::CallKey& key) {
  if (!plan.program) return;
  auto fast = std::make_shared<detail::elementwise::FastPlan>();
  fast->key = key;
  fast->context = detail::impl_of(queue.context()).get();
  fast->program = plan.program;
  fast->kernel = &plan.program->kernel(impl.options.name);
  fast->device = plan.resolved.device;
  fast->groups = plan.groups;
  fast->local = plan.local;
  fast->dtypes = plan.resolved.dtypes;
  fast->tail = plan.tail;
  detail::codegen::keep_plan<detail::elementwise::FastPlan>(impl.fast_mutex, impl.fast_plans,
                                              ElementwiseKernel::Impl::kFastPlans, std::move(fast));
}

}  // namespace

namespace detail {

void elementwise_enqueue(const ElementwiseKernel& kernel, const Queue& queue,
                         std::span<const Operand> args) {
  const auto& owner = impl_of(kernel);
  const auto& impl = *owner;
  codegen::CallKey key;
  const bool keyed = args.size() == impl.params.size() && codegen::make_key(args, key);
  if (keyed && call_fast(owner, queue, args, key)) return;
  Plan plan = make_plan(impl, queue, args, std::nullopt);
  execute(impl, queue, plan);
  if (keyed) keep_plan(impl, queue, plan, key);
}

}  // namespace detail

std::vector<Array> ElementwiseKernel::operator()(const Queue& queue,
                                                 std::span<const Operand> args) const {
  if (args.size() == impl_->params.size()) {
    // Every output given: the outputs are the last arguments.
    detail::elementwise_enqueue(*this, queue, args);
    std::vector<Array> outputs;
    outputs.reserve(impl_->n_out());
    for (std::size_t k = impl_->n_in; k < args.size(); ++k) outputs.push_back(args[k].array());
    return outputs;
  }
  Plan plan = make_plan(*impl_, queue, args, std::nullopt);
  execute(*impl_, queue, plan);
  return plan.resolved.outputs;
}

MultiDevice<std::vector<Array>> ElementwiseKernel::per_device(
    const Queue& queue, const MultiDevice<std::vector<Operand>>& args) const {
  std::vector<Plan> plans;
  for (std::size_t d : queue.device_idxs()) {
    const auto& list = args[d];
    plans.push_back(make_plan(*impl_, queue, list, d));
  }
  MultiDevice<std::vector<Array>> result;
  for (const auto& plan : plans) execute(*impl_, queue, plan);
  for (auto& plan : plans) result.set(plan.resolved.device, plan.resolved.outputs);
  return result;
}

std::string ElementwiseKernel::source(const Queue& queue, std::span<const Operand> args) const {
  const Resolved r = resolve(*impl_, queue, args, std::nullopt, false);
  return generate(*impl_, r);
}

// --- built-ins ---------------------------------------------------------------------------------

std::string_view name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::subtract: return "subtract";
    case BinaryOp::multiply: return "multiply";
    case BinaryOp::divide: return "divide";
    case BinaryOp::maximum: return "maximum";
    case BinaryOp::minimum: return "minimum";
  }
  return "?";
}

std::string_view name(CompareOp op) {
  switch (op) {
    case CompareOp::equal: return "equal";
    case CompareOp::not_equal: return "not_equal";
    case CompareOp::less: return "less";
    case CompareOp::less_equal: return "less_equal";
    case CompareOp::greater: return "greater";
    case CompareOp::greater_equal: return "greater_equal";
  }
  return "?";
}

std::string_view name(UnaryOp op) {
  switch (op) {
    case UnaryOp::negative: return "negative";
    case UnaryOp::absolute: return "absolute";
    case UnaryOp::square: return "square";
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::sin: return "sin";
    case UnaryOp::cos: return "cos";
    case UnaryOp::tanh: return "tanh";
    case UnaryOp::floor: return "floor";
    case UnaryOp::ceil: return "ceil";
    case UnaryOp::conjugate: return "conjugate";
  }
  return "?";
}

namespace {

using detail::codegen::builtin_key;

// The built-in kernels, one per operation and dtypes (keyed by builtin_key), made on first use
// and kept.
// By value: GCC 13 takes a reference parameter bound to a temporary for a dangling return (-Wdangling-reference).
template <class Make>
const ElementwiseKernel& builtin(std::uint64_t key, Make&& make) {
  static std::mutex mutex;
  static auto* kernels = new std::unordered_map<std::uint64_t, std::unique_ptr<ElementwiseKernel>>;
  // The kernels are never destroyed, so each thread may remember its last one: a loop calling one
  // built-in skips the lock and the lookup.
  thread_local const ElementwiseKernel* last = nullptr;
  thread_local std::uint64_t last_key = 0;
  if (last != nullptr && last_key == key) return *last;
  std::lock_guard lock(mutex);
  auto& slot = (*kernels)[key];
  if (!slot) slot = std::make_unique<ElementwiseKernel>(make());
  last = slot.get();
  last_key = key;
  return *slot;
}

// The dtype a parameter is declared with: an array's own, or the loop dtype for a scalar.
Dtype declared(const Operand& o, Dtype loop) { return o.is_array() ? o.dtype() : loop; }

std::string unsigned_for(Dtype d) { return itemsize(d) == 8 ? "uint64_t" : "uint32_t"; }

std::string make_complex(Dtype d) { return "skein_make_" + ctype(d).substr(6); }

// C for `a op b` on compute values of dtype t.
std::string arith(Dtype t, const std::string& a, char op, const std::string& b) {
  t = detail::codegen::compute_dtype(t);
  if (is_complex(t)) {
    const std::string m = make_complex(t);
    if (op == '+') return fmt::format("{}({}.re + {}.re, {}.im + {}.im)", m, a, b, a, b);
    if (op == '-') return fmt::format("{}({}.re - {}.re, {}.im - {}.im)", m, a, b, a, b);
    return fmt::format("{0}({1}.re * {2}.re - {1}.im * {2}.im, {1}.re * {2}.im + {1}.im * {2}.re)", m, a, b);
  }
  if (is_integer(t)) {
    // Wrap around as NumPy does: signed overflow is undefined in C, so go through unsigned.
    const std::string u = unsigned_for(t);
    return fmt::format("(({})(({}){} {} ({}){}))", ctype(t), u, a, op, u, b);
  }
  return fmt::format("({} {} {})", a, op, b);
}

std::string param_list(const std::vector<std::pair<Dtype, std::string>>& ps) {
  std::vector<std::string> parts;
  for (const auto& [d, n] : ps) parts.push_back(fmt::format("{} {}", name(d), n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The built-ins' calls: into `out` through the kept plans, or into a new array.
template <class... Ops>
Array run(const ElementwiseKernel& k, const Queue& queue, const std::optional<Array>& out,
          const Ops&... ops) {
  if (out) {
    const std::array<Operand, sizeof...(Ops) + 1> all{Operand(ops)..., Operand(*out)};
    detail::elementwise_enqueue(k, queue, all);
    return *out;
  }
  const std::array<Operand, sizeof...(Ops)> in{Operand(ops)...};
  return k(queue, in).front();
}

void check_out(const std::optional<Array>& out, Dtype expected, const char* call) {
  if (out && out->dtype() != expected) {
    detail::raise_in(SKEIN_HERE, call, "Pass an output of the result's dtype, or none.",
                     "the output is {}, the result dtype is {}", name(out->dtype()), name(expected));
  }
}

std::string fn(const char* f, Dtype t) {
  return detail::codegen::compute_dtype(t) == Dtype::float32 ? fmt::format("_skein_f32({})", f) : f;
}

// Defines _skein_f32(f): CUDA's float math functions carry an `f` suffix, OpenCL's are overloaded.
const char* kMathPreamble = R"(#ifndef _skein_f32
#ifdef CUDA
#define _skein_f32(fn) fn##f
#else
#define _skein_f32(fn) fn
#endif
#endif
)";

// NumPy's float type for float functions of an integer dtype.
Dtype float_for(Dtype d) {
  if (!is_integer(d)) return d;
  if (itemsize(d) == 1) return Dtype::float16;
  if (itemsize(d) == 2) return Dtype::float32;
  return Dtype::float64;
}

}  // namespace

Array axpy(const Queue& queue, const Operand& a, const Operand& x, const Operand& y,
           const std::optional<Array>& out) {
  const Operand* const ops[] = {&a, &x, &y};
  const Dtype r = detail::result_type_of(ops);
  check_out(out, r, "skein::axpy");
  const Dtype da = declared(a, r), dx = declared(x, r), dy = declared(y, r);
  const auto& k = builtin(builtin_key(1, da, dx, dy, r), [&] {
    const std::string ca = detail::codegen::convert_value(da, r, "a"), cx = detail::codegen::convert_value(dx, r, "x"),
                      cy = detail::codegen::convert_value(dy, r, "y");
    return ElementwiseKernel(param_list({{da, "a"}, {dx, "x"}, {dy, "y"}}), param_list({{r, "z"}}),
                             "z = " + arith(r, arith(r, ca, '*', cx), '+', cy),
                             {.name = "skein_axpy"});
  });
  return run(k, queue, out, a, x, y);
}

Array scale(const Queue& queue, const Operand& a, const Operand& x, const std::optional<Array>& out) {
  const Operand* const ops[] = {&a, &x};
  const Dtype r = detail::result_type_of(ops);
  check_out(out, r, "skein::scale");
  const Dtype da = declared(a, r), dx = declared(x, r);
  const auto& k = builtin(builtin_key(2, da, dx, r), [&] {
    return ElementwiseKernel(param_list({{da, "a"}, {dx, "x"}}), param_list({{r, "z"}}),
                             "z = " + arith(r, detail::codegen::convert_value(da, r, "a"), '*',
                                            detail::codegen::convert_value(dx, r, "x")),
                             {.name = "skein_scale"});
  });
  return run(k, queue, out, a, x);
}

void fill(const Queue& queue, const Array& out, const Operand& value) { copy(queue, value, out); }

void copy(const Queue& queue, const Operand& src, const Array& dst) {
  const Dtype s = src.is_array() ? src.dtype() : dst.dtype();
  const Dtype d = dst.dtype();
  if (is_complex(s) && !is_complex(d)) {
    detail::raise_in(SKEIN_HERE, "skein::copy",
                     "Take the real part explicitly (an ElementwiseKernel with z = x.re).",
                     "copying {} into {} would drop the imaginary part", name(s), name(d));
  }
  const auto& k = builtin(builtin_key(3, s, d), [&] {
    return ElementwiseKernel(param_list({{s, "x"}}), param_list({{d, "z"}}),
                             "z = " + detail::codegen::convert_value(s, d, "x"), {.name = "skein_copy"});
  });
  if (src.is_array()) {
    const std::array<Operand, 2> args{src, Operand(dst)};
    detail::elementwise_enqueue(k, queue, args);
  } else {
    // NumPy's fill: floats truncate toward zero for integer arrays, integers wrap.
    const auto bytes = src.bytes_as(d, "skein::copy value", true);
    Operand v = src;
    if (is_integer(d) && src.is_scalar()) {
      v = visit_dtype(d, [&](auto t) -> Operand {
        using T = decltype(t);
        if constexpr (std::is_integral_v<T>) {
          T x;
          std::memcpy(&x, bytes.data(), sizeof(T));
          return Operand(x);
        } else {
          return Operand(0);
        }
      });
    }
    k(queue, {v, dst});
  }
}

void detail::strided_copy(const Queue& queue, const Array& src, const Array& dst) { copy(queue, src, dst); }

Array astype(const Queue& queue, const Array& x, Dtype dtype) {
  if (is_complex(x.dtype()) && !is_complex(dtype)) {
    detail::raise_in(SKEIN_HERE, "skein::astype",
                     "Take the real part explicitly (an ElementwiseKernel with z = x.re).",
                     "converting {} to {} would drop the imaginary part", name(x.dtype()), name(dtype));
  }
  Array out = Array::empty(queue, x.shape(), dtype, x.device_idx());
  copy(queue, x, out);
  return out;
}

Array binary(const Queue& queue, BinaryOp op, const Operand& a, const Operand& b,
             const std::optional<Array>& out) {
  const Operand* const ops[] = {&a, &b};
  const Dtype r = detail::result_type_of(ops);
  const Dtype c = (op == BinaryOp::divide && is_integer(r)) ? Dtype::float64 : r;
  if (is_complex(c) && (op == BinaryOp::maximum || op == BinaryOp::minimum)) {
    detail::raise_in(SKEIN_HERE, "skein::binary", "Compare real and imaginary parts explicitly.",
                     "{} is not defined for {}", name(op), name(c));
  }
  check_out(out, c, "skein::binary");
  const Dtype da = declared(a, r), db = declared(b, r);
  const auto& k = builtin(builtin_key(4, op, da, db, c), [&] {
    const std::string x = detail::codegen::convert_value(da, c, "a"), y = detail::codegen::convert_value(db, c, "b");
    std::string expr;
    RenderGlobals globals;
    switch (op) {
      case BinaryOp::add: expr = arith(c, x, '+', y); break;
      case BinaryOp::subtract: expr = arith(c, x, '-', y); break;
      case BinaryOp::multiply: expr = arith(c, x, '*', y); break;
      case BinaryOp::divide:
        if (is_complex(c)) {
          globals.emplace("div", functions::div(c, c));
          expr = fmt::format("${{div}}({}, {})", x, y);
        } else {
          expr = fmt::format("({} / {})", x, y);
        }
        break;
      case BinaryOp::maximum:
      case BinaryOp::minimum: {
        const char* cmp = op == BinaryOp::maximum ? ">=" : "<=";
        const std::string CT = detail::codegen::compute_ctype(c);
        if (is_integer(c)) {
          expr = fmt::format("(({0}){1} {2} ({0}){3} ? ({0}){1} : ({0}){3})", CT, x, cmp, y);
        } else {
          // NaN propagates, as NumPy's maximum / minimum.
          expr = fmt::format("_skein_pick(({0}){1}, ({0}){2})", CT, x, y);
        }
        break;
      }
    }
    std::string preamble;
    if ((op == BinaryOp::maximum || op == BinaryOp::minimum) && !is_integer(c)) {
      const std::string CT = detail::codegen::compute_ctype(c);
      preamble = fmt::format(
          "WITHIN_KERNEL INLINE {0} _skein_pick({0} a, {0} b)\n{{\n"
          "    if (a != a) return a;\n    if (b != b) return b;\n    return a {1} b ? a : b;\n}}\n",
          CT, op == BinaryOp::maximum ? ">=" : "<=");
    }
    return ElementwiseKernel(param_list({{da, "a"}, {db, "b"}}), param_list({{c, "z"}}), "z = " + expr,
                             {.name = "skein_" + std::string(name(op)), .preamble = preamble,
                              .globals = globals});
  });
  return run(k, queue, out, a, b);
}

Array compare(const Queue& queue, CompareOp op, const Operand& a, const Operand& b,
              const std::optional<Array>& out) {
  const Operand* const ops[] = {&a, &b};
  const Dtype r = detail::result_type_of(ops);
  if (is_complex(r) && op != CompareOp::equal && op != CompareOp::not_equal) {
    detail::raise_in(SKEIN_HERE, "skein::compare", "Compare real parts (or magnitudes) explicitly.",
                     "{} is not defined for {}", name(op), name(r));
  }
  check_out(out, Dtype::uint8, "skein::compare");
  const Dtype da = declared(a, r), db = declared(b, r);
  const auto& k = builtin(builtin_key(5, op, da, db, r), [&] {
    const std::string x = detail::codegen::convert_value(da, r, "a"), y = detail::codegen::convert_value(db, r, "b");
    static const char* ops_c[] = {"==", "!=", "<", "<=", ">", ">="};
    const char* o = ops_c[static_cast<int>(op)];
    std::string cond;
    if (is_complex(r)) {
      cond = fmt::format("(({0}).re == ({1}).re && ({0}).im == ({1}).im)", x, y);
      if (op == CompareOp::not_equal) cond = "!" + cond;
    } else {
      cond = fmt::format("({} {} {})", x, o, y);
    }
    return ElementwiseKernel(param_list({{da, "a"}, {db, "b"}}), "uint8 z",
                             fmt::format("z = {} ? 1 : 0", cond), {.name = "skein_" + std::string(name(op))});
  });
  return run(k, queue, out, a, b);
}

Array unary(const Queue& queue, UnaryOp op, const Operand& x, const std::optional<Array>& out) {
  const Dtype d = x.is_array() ? x.dtype() : result_type(std::span<const Operand>(&x, 1));
  const bool float_fn = op == UnaryOp::sqrt || op == UnaryOp::exp || op == UnaryOp::log ||
                        op == UnaryOp::sin || op == UnaryOp::cos || op == UnaryOp::tanh ||
                        op == UnaryOp::floor || op == UnaryOp::ceil;
  if (is_complex(d) && float_fn && op != UnaryOp::exp) {
    detail::raise_in(SKEIN_HERE, "skein::unary",
                     "Complex inputs take negative, absolute, square, exp and conjugate.",
                     "{} of {} is not supported", name(op), name(d));
  }
  Dtype r = float_fn ? float_for(d) : d;
  if (op == UnaryOp::absolute && is_complex(d)) r = d == Dtype::complex64 ? Dtype::float32 : Dtype::float64;
  check_out(out, r, "skein::unary");
  const auto& k = builtin(builtin_key(6, op, d, r), [&] {
    const Dtype c = detail::codegen::compute_dtype(r);
    const std::string v = detail::codegen::convert_value(d, float_fn ? r : d, "x");
    const std::string CT = detail::codegen::compute_ctype(d);
    std::string expr;
    RenderGlobals globals;
    switch (op) {
      case UnaryOp::negative:
        if (is_complex(d)) {
          expr = fmt::format("{}(-x.re, -x.im)", make_complex(d));
        } else if (is_integer(d)) {
          expr = fmt::format("(({})(({})0 - ({})x))", CT, unsigned_for(d), unsigned_for(d));
        } else {
          expr = "-x";
        }
        break;
      case UnaryOp::absolute:
        if (is_complex(d)) {
          expr = fmt::format("{}(x.re, x.im)", fn("hypot", r));
        } else if (is_integer(d) && is_signed(d)) {
          expr = fmt::format("(x < 0 ? (({})(({})0 - ({})x)) : x)", CT, unsigned_for(d), unsigned_for(d));
        } else if (is_integer(d)) {
          expr = "x";
        } else {
          expr = fmt::format("{}(x)", fn("fabs", d));
        }
        break;
      case UnaryOp::square: expr = arith(d, "x", '*', "x"); break;
      case UnaryOp::conjugate:
        expr = is_complex(d) ? fmt::format("{}(x.re, -x.im)", make_complex(d)) : "x";
        break;
      case UnaryOp::exp:
        if (is_complex(d)) {
          globals.emplace("exp", functions::exp(d));
          expr = "${exp}(x)";
          break;
        }
        [[fallthrough]];
      default: expr = fmt::format("{}({})", fn(std::string(name(op)).c_str(), c), v); break;
    }
    return ElementwiseKernel(param_list({{d, "x"}}), param_list({{r, "z"}}), "z = " + expr,
                             {.name = "skein_" + std::string(name(op)), .preamble = kMathPreamble,
                              .globals = globals});
  });
  return run(k, queue, out, x);
}

}  // namespace skein
