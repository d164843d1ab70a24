// SPDX-License-Identifier: BSD-3-Clause
#include "skein/reduction.hpp"

#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/reduction_paths.hpp"
#include "codegen/group_counter.hpp"
#include "codegen/launch.hpp"
#include "codegen/params.hpp"
#include "codegen/programs.hpp"
#include "codegen/types.hpp"
#include "kernel_operands.hpp"
#include "skein/ctypes.hpp"
#include "arithmetic.hpp"

namespace skein {

namespace detail::red {

// The plan of a whole-array reduction (fast mode) kept from a call that went the full way, for
// later calls with the same key (detail::codegen::CallKey over the inputs).
struct FastPlan {
  codegen::CallKey key;
  const void* context = nullptr;                 // the context's Impl; alive while `program` is
  std::weak_ptr<const codegen::CompiledProgram> program;  // weak: the program cache decides its life
  const Kernel* p1 = nullptr;                    // in *program
  const Kernel* p2 = nullptr;
  std::size_t device = 0, groups = 0, local = 0, reduce_size = 0;
  bool one_launch = false;  // the program has the one-launch code (used when groups > 1)
  Dtype out_dtype = Dtype::float32;
  std::vector<Dtype> dtypes;        // per input
  std::vector<std::uint64_t> tail;  // p1's values after the inputs (size, layout)
};

}  // namespace detail::red

struct ReductionKernel::Impl {
  std::vector<detail::codegen::ParamDecl> params;  // the inputs
  detail::codegen::ParamDecl out;
  std::string map_expr, reduce_expr, identity;
  ReductionOptions options;
  std::uint64_t owner = detail::codegen::new_cache_owner();
  mutable std::atomic<std::size_t> built{0};  // programs generated (cache misses)
  std::vector<std::string> what;  // per input, for conversion errors: "argument 'x' of kernel 'k'"
  // The plans of the last few call shapes of whole-array reductions (most recent first).
  static constexpr std::size_t kFastPlans = 8;
  mutable std::mutex fast_mutex;
  mutable std::vector<std::shared_ptr<const detail::red::FastPlan>> fast_plans;

  ~Impl() { detail::codegen::drop_cache_owner(owner); }
  const std::string& name() const { return options.name; }
};

namespace {

constexpr std::size_t npos = static_cast<std::size_t>(-1);
constexpr std::string_view kReserved[] = {"i", "n", "a", "b", "reduce_t"};
// Records a combine kernel can stack (levels only decrease along the stack, so 2 x 64 suffice).
constexpr int kStack = 132;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return detail::ceil_div(a, b); }
unsigned log2_exact(std::uint64_t v) { return static_cast<unsigned>(std::countr_zero(v)); }
using detail::round_up;

// The highest level of the canonical tree over `total` elements: its root.
std::uint32_t max_level(std::uint64_t total) {
  return total <= 1 ? 0 : static_cast<std::uint32_t>(std::bit_width(total - 1));
}

// What a call resolves to.
struct Resolved {
  std::vector<Operand> args;       // the inputs
  std::vector<Dtype> dtypes;       // per input
  std::vector<bool> is_array;      // per input
  detail::codegen::Bindings bindings;
  Dtype out_dtype = Dtype::float32;
  bool struct_reduce = false;
  Dtype reduce_dtype = Dtype::float32;  // when not a struct (compute dtype)
  std::size_t reduce_size = 0, reduce_align = 0;
  std::size_t record_size = 0;
  std::optional<std::size_t> device;
  Shape shape;  // the inputs' broadcast shape
  detail::codegen::Layout layout;
  std::vector<std::size_t> layout_index;  // per input
  std::size_t layout_count = 0;
  std::uint64_t n = 0;
  std::size_t W = 1, U = 1;  // contiguous: elements per 16-byte chunk, chunks per thread
  std::string types_sig;      // the dtypes, for every program's signature
};

void check_alignment(const Array& a, const std::string& call, const std::string& kernel,
                     const std::string& param) {
  const std::size_t isz = a.itemsize();
  bool ok = detail::codegen::address_in_allocation(a) % isz == 0;
  for (std::size_t d = 0; ok && d < a.ndim(); ++d) ok = a.shape()[d] <= 1 || a.strides()[d] % isz == 0;
  if (!ok) {
    detail::raise_in(SKEIN_HERE, call,
                     "Use views whose offset and strides are multiples of the itemsize.",
                     "kernel '{}': argument '{}' has elements that are not aligned to their size",
                     kernel, param);
  }
}

// `launch_device`: the device of a per-device launch, where every array must be.
Resolved resolve(const ReductionKernel::Impl& impl, const Queue& queue,
                 std::span<const Operand> inputs, const std::optional<Array>& out,
                 const char* call, std::optional<std::size_t> launch_device = std::nullopt) {
  const std::string& kname = impl.name();
  const auto& params = impl.params;
  if (inputs.size() != params.size()) {
    std::vector<std::string> parts;
    for (const auto& p : params) parts.push_back(fmt::format("{}{} {}", p.raw ? "raw " : "", p.type, p.name));
    detail::raise_in(SKEIN_HERE, call,
                     "Pass one operand per input parameter (the output goes in ReductionArgs::out).",
                     "kernel '{}' takes {} input(s) ({}); {} were given", kname, params.size(),
                     fmt::join(parts, ", "), inputs.size());
  }
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].is_scalar() && params[k].raw) {
      detail::raise_in(SKEIN_HERE, call, "Pass an Array for it.",
                       "kernel '{}': raw parameter '{}' was given the scalar {}", kname,
                       params[k].name, inputs[k].to_string());
    }
    if (inputs[k].is_array()) {
      check_alignment(inputs[k].array(), call, kname, params[k].name);
      if (params[k].raw && !inputs[k].array().is_contiguous()) {
        detail::raise_in(SKEIN_HERE, call, "Pass a contiguous array (copy the view first).",
                         "kernel '{}': raw argument '{}' is a strided view", kname, params[k].name);
      }
    }
  }
  Resolved r;
  r.args.assign(inputs.begin(), inputs.end());
  // The output binds its placeholder too when given.
  std::vector<detail::codegen::ParamDecl> all = params;
  all.push_back(impl.out);
  std::vector<Operand> ops(inputs.begin(), inputs.end());
  if (out) ops.emplace_back(*out);
  r.bindings = detail::codegen::bind_types(all, ops, call, kname);
  for (const auto& p : params) r.dtypes.push_back(detail::codegen::param_dtype(p, r.bindings, call, kname));
  r.out_dtype = detail::codegen::param_dtype(impl.out, r.bindings, call, kname);
  if (impl.options.reduce_struct) {
    r.struct_reduce = true;
    r.reduce_size = impl.options.reduce_struct->itemsize();
    r.reduce_align = impl.options.reduce_struct->alignment();
  } else {
    r.reduce_dtype = detail::codegen::compute_dtype(impl.options.reduce_type.value_or(r.out_dtype));
    r.reduce_size = itemsize(r.reduce_dtype);
    r.reduce_align = alignment_of(r.reduce_dtype);
  }
  const std::size_t ra = std::max<std::size_t>(8, r.reduce_align);
  r.record_size = round_up(16 + r.reduce_size, ra);
  r.device = detail::codegen::common_device(queue, ops, all, launch_device, call, kname);

  std::vector<bool> take(inputs.size());
  bool any_raw = false, any_take = false;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    take[k] = !params[k].raw && inputs[k].is_array();
    any_raw |= params[k].raw;
    any_take |= take[k];
  }
  if (any_raw && !any_take) {
    detail::raise_in(SKEIN_HERE, call, "Pass a non-raw array too: its shape sets the number of elements.",
                     "kernel '{}': only raw arrays among the inputs, so the number of elements is unknown",
                     kname);
  }
  r.shape = detail::codegen::broadcast_shapes(inputs, take, params, call, kname);
  r.n = shape_size(r.shape);
  r.layout_index.assign(inputs.size(), npos);
  std::vector<detail::codegen::ArrayShape> shapes;
  std::size_t min_isz = 16, sum_isz = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    r.is_array.push_back(inputs[k].is_array());
    if (!take[k]) continue;
    r.layout_index[k] = shapes.size();
    shapes.push_back(detail::codegen::shape_of(inputs[k].array()));
    min_isz = std::min(min_isz, itemsize(r.dtypes[k]));
    sum_isz += itemsize(r.dtypes[k]);
  }
  r.layout_count = shapes.size();
  r.layout = detail::codegen::make_layout(r.shape, shapes);
  r.W = 16 / min_isz;
  r.U = std::clamp<std::size_t>(
      detail::floor_pow2(std::max<std::size_t>(1, 256 / std::max<std::size_t>(1, r.W * sum_isz))), 1, 4);

  std::string sig;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    sig += fmt::format("|{}{}", params[k].raw ? 'R' : r.is_array[k] ? 'A' : 'S', name(r.dtypes[k]));
  }
  sig += fmt::format("|o{}", name(r.out_dtype));
  r.types_sig = std::move(sig);
  return r;
}

// What every program of a reduction starts with: types, the preamble, and the map, reduce,
// identity and post-map functions.
std::string common_source(const ReductionKernel::Impl& impl, const Resolved& r, bool deterministic) {
  const std::string& k = impl.name();
  std::string src = "/* Generated by skein::ReductionKernel */\n";
  if (deterministic) {
    // Partial values must come out the same wherever they are computed: no FMA contraction.
    src += "#ifdef OPENCL\n#pragma OPENCL FP_CONTRACT OFF\n#endif\n";
  }
  for (const auto& [n, d] : r.bindings) src += fmt::format("typedef {} {};\n", detail::codegen::compute_ctype(d), n);
  if (r.struct_reduce) {
    src += ctype_struct(*impl.options.reduce_struct, "reduce_t") + "\n";
  } else {
    src += fmt::format("typedef {} reduce_t;\n", ctype(r.reduce_dtype));
  }
  if (!impl.options.preamble.empty()) src += impl.options.preamble + "\n";
  std::vector<std::string> decl{"const VSIZE_T i", "const VSIZE_T n"};
  for (std::size_t j = 0; j < impl.params.size(); ++j) {
    const auto& p = impl.params[j];
    if (p.raw) {
      decl.push_back(fmt::format("GLOBAL_MEM const {}* {}", ctype(r.dtypes[j]), p.name));
    } else {
      decl.push_back(fmt::format("const {} {}", detail::codegen::compute_ctype(r.dtypes[j]), p.name));
    }
  }
  src += fmt::format(
      "WITHIN_KERNEL INLINE reduce_t {0}_map({1})\n{{\n    /* map */\n    reduce_t _skein_m = {2};\n"
      "    return _skein_m;\n}}\n",
      k, fmt::join(decl, ", "), impl.map_expr);
  src += fmt::format(
      "WITHIN_KERNEL INLINE reduce_t {0}_reduce(const reduce_t a, const reduce_t b)\n{{\n"
      "    /* reduce */\n    reduce_t _skein_r = {1};\n    return _skein_r;\n}}\n",
      k, impl.reduce_expr);
  src += fmt::format(
      "WITHIN_KERNEL INLINE reduce_t {0}_identity()\n{{\n    /* identity */\n    reduce_t _skein_r = {1};\n"
      "    return _skein_r;\n}}\n",
      k, impl.identity);
  const std::string post = impl.options.post_map.empty() ? impl.out.name + " = a" : impl.options.post_map;
  src += fmt::format(
      "WITHIN_KERNEL INLINE void {0}_post(const reduce_t a, {1}* _skein_out)\n{{\n    {1} {2};\n"
      "    /* post_map */\n    {3};\n    *_skein_out = {2};\n}}\n",
      k, detail::codegen::compute_ctype(r.out_dtype), impl.out.name, post);
  // Stores the post-mapped value `v` at element `idx` of the output.
  src += fmt::format(
      "WITHIN_KERNEL INLINE void {0}_finish(const reduce_t v, GLOBAL_MEM char* yb, const uint64_t yo, "
      "const VSIZE_T idx)\n{{\n    {1} _skein_y;\n    {0}_post(v, &_skein_y);\n"
      "    ((GLOBAL_MEM {2}*)(yb + yo))[idx] = {3};\n}}\n",
      k, detail::codegen::compute_ctype(r.out_dtype), ctype(r.out_dtype), detail::codegen::store_value(r.out_dtype, "_skein_y"));
  return src;
}

// Pointers to the inputs and the values of scalar inputs, at the top of a kernel.
std::string input_setup(const ReductionKernel::Impl& impl, const Resolved& r, bool byte_pointers) {
  std::string src;
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    const auto& p = impl.params[k];
    const Dtype d = r.dtypes[k];
    if (r.is_array[k]) {
      if (!byte_pointers || p.raw) {
        src += "    " + detail::codegen::array_pointer(p.name, ctype(d), true) + "\n";
      } else {
        src += fmt::format("    GLOBAL_MEM const char* _skein_q_{0} = _skein_b_{0} + _skein_o_{0};\n", p.name);
      }
    } else if (d == Dtype::float16 || d == Dtype::bfloat16) {
      src += fmt::format("    {0} _skein_h_{1};\n    _skein_h_{1}.bits = _skein_a_{1};\n", ctype(d), p.name);
      src += fmt::format("    const float _skein_v_{} = {};\n", p.name, detail::codegen::load_value(d, "_skein_h_" + p.name));
    } else {
      src += fmt::format("    const {0} _skein_v_{1} = _skein_a_{1};\n", ctype(d), p.name);
    }
  }
  return src;
}

std::vector<std::string> input_params(const ReductionKernel::Impl& impl, const Resolved& r) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    if (r.is_array[k]) {
      out.push_back(detail::codegen::array_param(impl.params[k].name));
    } else {
      out.push_back(fmt::format("const {} _skein_a_{}", detail::codegen::scalar_param_ctype(r.dtypes[k]),
                                impl.params[k].name));
    }
  }
  return out;
}

// `K_map(index, n, ...)` with each non-raw array input's element given by `element(k)`.
std::string map_call(const ReductionKernel::Impl& impl, const Resolved& r, const std::string& index,
                     const std::function<std::string(std::size_t)>& element) {
  std::vector<std::string> a{index, "_skein_n"};
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    const auto& p = impl.params[k];
    if (p.raw) {
      a.push_back("_skein_p_" + p.name);
    } else if (r.is_array[k]) {
      a.push_back(detail::codegen::load_value(r.dtypes[k], element(k)));
    } else {
      a.push_back("_skein_v_" + p.name);
    }
  }
  return fmt::format("{}_map({})", impl.name(), fmt::join(a, ", "));
}

// Layout parameters of the general (strided) path, and the code computing byte offsets
// _skein_off<j> of flat element `index`.
std::vector<std::string> strided_params(const Resolved& r) {
  std::vector<std::string> out;
  const std::size_t D = r.layout.shape.size();
  for (std::size_t d = 0; d < D; ++d) out.push_back(fmt::format("const uint64_t _skein_d{}", d));
  for (std::size_t j = 0; j < r.layout_count; ++j) {
    for (std::size_t d = 0; d < D; ++d) out.push_back(fmt::format("const uint64_t _skein_s{}_{}", j, d));
  }
  return out;
}

std::string strided_offsets(const Resolved& r, const std::string& index, const std::string& indent) {
  const std::size_t D = r.layout.shape.size();
  std::string src = fmt::format("{}VSIZE_T _skein_r = {};\n", indent, index);
  for (std::size_t j = 0; j < r.layout_count; ++j) src += fmt::format("{}uint64_t _skein_off{} = 0;\n", indent, j);
  for (std::size_t d = D; d-- > 0;) {
    if (d > 0) {
      src += fmt::format("{0}{{\n{0}    const VSIZE_T _skein_x = _skein_r % _skein_d{1};\n{0}    _skein_r /= _skein_d{1};\n",
                         indent, d);
      for (std::size_t j = 0; j < r.layout_count; ++j) {
        src += fmt::format("{}    _skein_off{} += _skein_x * _skein_s{}_{};\n", indent, j, j, d);
      }
      src += indent + "}\n";
    } else {
      for (std::size_t j = 0; j < r.layout_count; ++j) {
        src += fmt::format("{}_skein_off{} += _skein_r * _skein_s{}_0;\n", indent, j, j);
      }
    }
  }
  return src;
}

std::string strided_element(const Resolved& r, std::size_t k, const std::string& name) {
  return fmt::format("*(GLOBAL_MEM const {}*)(_skein_q_{} + _skein_off{})", ctype(r.dtypes[k]), name,
                     r.layout_index[k]);
}

// Reduces _skein_sd[0..L) into _skein_sd[0] in any order (fast mode), for a group of L items.
std::string block_reduce_any(const std::string& k, std::size_t L, const std::string& indent = "    ") {
  return fmt::format(
      "{2}LOCAL_BARRIER;\n"
      "{2}for (unsigned int _skein_s = {1} / 2; _skein_s > 0; _skein_s >>= 1) {{\n"
      "{2}    if (_skein_lid < _skein_s) _skein_sd[_skein_lid] = {0}_reduce(_skein_sd[_skein_lid], _skein_sd[_skein_lid + _skein_s]);\n"
      "{2}    LOCAL_BARRIER;\n"
      "{2}}}\n",
      k, L, indent);
}

// One group's combine of _skein_count partial values, as K_p2 and the last group of a one-launch
// K_p1 both do (the same loop and tree, so both paths give the same bits): `acc` is declared and
// accumulates `load` (partial value _skein_t) in a loop of stride L; the result is left in
// _skein_sd[0].
std::string combine_partials(const std::string& k, std::size_t L, const std::string& acc,
                             const std::string& load, const std::string& indent) {
  return fmt::format("{0}reduce_t {1} = {2}_identity();\n"
                     "{0}for (VSIZE_T _skein_t = _skein_lid; _skein_t < _skein_count; _skein_t += {3}) "
                     "{1} = {2}_reduce({1}, {4});\n"
                     "{0}_skein_sd[_skein_lid] = {1};\n",
                     indent, acc, k, L, load) +
         block_reduce_any(k, L, indent);
}

// --- fast whole-array program: K_p1 (elements -> one partial per group), K_p2 (partials -> one) ---

// K_p1's _skein_finish: what its groups do with their values.
enum P1Finish : std::int32_t {
  kPartials = 0,  // each writes its partial value (K_p2 goes on)
  kAlone = 1,     // the only group writes the result
  kLastGroup = 2  // each writes its partial value; the last to finish reduces them to the result
};

// What K_p1 needs for kLastGroup: a ticket per group from the counter, with release before it
// and acquire after it at device scope, and loads of the partial values that no stale cache
// line answers. CUDA: __threadfence (a fence of device scope, both ways), atomicAdd. OpenCL C
// 2.0 / 3.0: atomic_work_item_fence of memory_scope_device around a relaxed atomic add.
std::string last_group_helpers(const std::string& k, const Resolved& r) {
  // The loads go by words no wider than the partial value's alignment.
  const std::size_t word = std::min<std::size_t>(r.reduce_align, 4);
  const char* word_t = word == 4 ? "uint32_t" : word == 2 ? "uint16_t" : "uint8_t";
  return fmt::format(R"(#ifdef CUDA
WITHIN_KERNEL INLINE unsigned int {0}_ticket(GLOBAL_MEM char* c)
{{
    __threadfence(); /* release: the group's partial value before its ticket */
    return atomicAdd((unsigned int*)c, 1u);
}}
WITHIN_KERNEL INLINE void {0}_acquire(void) {{ __threadfence(); }}
WITHIN_KERNEL INLINE void {0}_reset(GLOBAL_MEM char* c) {{ atomicExch((unsigned int*)c, 0u); }}
#define SKEIN_GROUP_SYNC __syncthreads()
#else
WITHIN_KERNEL INLINE uint {0}_ticket(GLOBAL_MEM char* c)
{{
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
    return atomic_fetch_add_explicit((volatile GLOBAL_MEM atomic_uint*)c, 1u, memory_order_relaxed,
                                     memory_scope_device);
}}
WITHIN_KERNEL INLINE void {0}_acquire(void)
{{
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acquire, memory_scope_device);
}}
WITHIN_KERNEL INLINE void {0}_reset(GLOBAL_MEM char* c)
{{
    atomic_store_explicit((volatile GLOBAL_MEM atomic_uint*)c, 0u, memory_order_relaxed, memory_scope_device);
}}
#define SKEIN_GROUP_SYNC barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#endif
/* Partial value t, written by another group: volatile loads, word by word. */
WITHIN_KERNEL INLINE reduce_t {0}_load_part(GLOBAL_MEM const char* p, const VSIZE_T t)
{{
    union {{ reduce_t v; {1} w[{2}]; }} _skein_u;
    GLOBAL_MEM const volatile {1}* _skein_w = (GLOBAL_MEM const volatile {1}*)((GLOBAL_MEM const reduce_t*)p + t);
    for (int _skein_k = 0; _skein_k < {2}; ++_skein_k) _skein_u.w[_skein_k] = _skein_w[_skein_k];
    return _skein_u.v;
}}
)",
                     k, word_t, r.reduce_size / word);
}

// `one_launch`: K_p1 has the code of kLastGroup (which compiles on CUDA and on OpenCL C 2.0 /
// 3.0 with device-scope fences; program_for passes the -cl-std).
std::string fast_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L,
                        bool one_launch) {
  const std::string& k = impl.name();
  std::string src = common_source(impl, r, false);
  if (one_launch) src += last_group_helpers(k, r);
  const bool contiguous = r.layout.contiguous;
  const std::size_t W = r.W, U = r.U;
  if (contiguous) {
    for (std::size_t j = 0; j < impl.params.size(); ++j) {
      if (r.layout_index[j] == npos) continue;
      src += fmt::format("typedef union {{ uint4 v[{}]; {} e[{}]; }} _skein_vec_{}_{};\n",
                         W * itemsize(r.dtypes[j]) / 16, ctype(r.dtypes[j]), W, k, impl.params[j].name);
    }
  }
  auto params = input_params(impl, r);
  params.push_back("const uint64_t _skein_n");
  if (contiguous) {
    params.push_back("const uint64_t _skein_head");
    params.push_back("const uint64_t _skein_nchunks");
  } else {
    for (auto& p : strided_params(r)) params.push_back(p);
  }
  params.push_back(detail::codegen::array_param("_part"));
  // _skein_finish: a P1Finish. The result goes post-mapped into _y; _cnt is the group counter of
  // kLastGroup (detail::codegen::group_counter).
  params.push_back("const int _skein_finish");
  params.push_back(detail::codegen::array_param("_y"));
  params.push_back(detail::codegen::array_param("_cnt"));
  src += fmt::format("KERNEL void {}_p1({})\n{{\n", k, fmt::join(params, ",\n    "));
  src += fmt::format("    LOCAL_MEM reduce_t _skein_sd[{}];\n", L);
  if (one_launch) src += "    LOCAL_MEM int _skein_last;\n";
  src += input_setup(impl, r, !contiguous);
  src += "    const VSIZE_T _skein_tid = get_global_id(0);\n";
  src += "    const VSIZE_T _skein_nth = get_global_size(0);\n";
  src += "    const unsigned int _skein_lid = get_local_id(0);\n";
  src += fmt::format("    reduce_t _skein_acc = {}_identity();\n", k);
  if (contiguous) {
    bool any_vector = false;
    for (std::size_t j = 0; j < impl.params.size(); ++j) any_vector |= r.layout_index[j] != npos;
    if (any_vector) {
      src += fmt::format(
          "    for (VSIZE_T _skein_c = _skein_tid; _skein_c < _skein_nchunks; _skein_c += _skein_nth * {}) {{\n", U);
      for (std::size_t u = 0; u < U; ++u) {
        src += fmt::format("        const VSIZE_T _skein_c{0} = _skein_c + {0} * _skein_nth;\n", u);
      }
      for (std::size_t j = 0; j < impl.params.size(); ++j) {
        if (r.layout_index[j] == npos) continue;
        const auto& nm = impl.params[j].name;
        const std::size_t V = W * itemsize(r.dtypes[j]) / 16;
        src += fmt::format(
            "        GLOBAL_MEM const uint4* _skein_w_{0} = (GLOBAL_MEM const uint4*)(_skein_p_{0} + _skein_head);\n", nm);
        for (std::size_t u = 0; u < U; ++u) {
          src += fmt::format("        _skein_vec_{}_{} _skein_x_{}_{};\n", k, nm, nm, u);
          src += fmt::format("        if (_skein_c{} < _skein_nchunks) {{\n", u);
          for (std::size_t v = 0; v < V; ++v) {
            src += fmt::format("            _skein_x_{0}_{1}.v[{2}] = _skein_w_{0}[_skein_c{1} * {3} + {2}];\n", nm, u, v, V);
          }
          src += "        }\n";
        }
      }
      for (std::size_t u = 0; u < U; ++u) {
        src += fmt::format("        if (_skein_c{} < _skein_nchunks) {{\n", u);
        for (std::size_t e = 0; e < W; ++e) {
          src += fmt::format("            _skein_acc = {}_reduce(_skein_acc, {});\n", k,
                             map_call(impl, r, fmt::format("_skein_head + _skein_c{} * {} + {}", u, W, e),
                                      [&](std::size_t j) {
                                        return fmt::format("_skein_x_{}_{}.e[{}]", impl.params[j].name, u, e);
                                      }));
        }
        src += "        }\n";
      }
      src += "    }\n";
    }
    src += fmt::format("    const VSIZE_T _skein_tail = _skein_head + _skein_nchunks * {};\n", W);
    src += "    const VSIZE_T _skein_ns = _skein_head + (_skein_n - _skein_tail);\n";
    src += "    for (VSIZE_T _skein_t = _skein_tid; _skein_t < _skein_ns; _skein_t += _skein_nth) {\n";
    src += "        const VSIZE_T _skein_i = _skein_t < _skein_head ? _skein_t : _skein_tail + (_skein_t - _skein_head);\n";
    src += fmt::format("        _skein_acc = {}_reduce(_skein_acc, {});\n", k,
                       map_call(impl, r, "_skein_i", [&](std::size_t j) {
                         return fmt::format("_skein_p_{}[_skein_i]", impl.params[j].name);
                       }));
    src += "    }\n";
  } else {
    src += "    for (VSIZE_T _skein_t = _skein_tid; _skein_t < _skein_n; _skein_t += _skein_nth) {\n";
    src += strided_offsets(r, "_skein_t", "        ");
    src += fmt::format("        _skein_acc = {}_reduce(_skein_acc, {});\n", k,
                       map_call(impl, r, "_skein_t", [&](std::size_t j) {
                         return strided_element(r, j, impl.params[j].name);
                       }));
    src += "    }\n";
  }
  src += "    _skein_sd[_skein_lid] = _skein_acc;\n";
  src += block_reduce_any(k, L);
  src += "    if (_skein_lid == 0) {\n";
  src += fmt::format("        if (_skein_finish == 1) {}_finish(_skein_sd[0], _skein_b__y, _skein_o__y, 0);\n", k);
  src += "        else ((GLOBAL_MEM reduce_t*)(_skein_b__part + _skein_o__part))[get_group_id(0)] = _skein_sd[0];\n";
  src += "    }\n";
  if (one_launch) {
    // The last group to take a ticket reduces every group's partial value exactly as K_p2 does
    // (same loop, same tree), so that both paths give the same bits; then it resets the counter
    // for the queue's next call.
    src += "    if (_skein_finish == 2) {\n";
    src += fmt::format(
        "        if (_skein_lid == 0) _skein_last = (VSIZE_T){}_ticket(_skein_b__cnt + _skein_o__cnt) == "
        "(VSIZE_T)get_num_groups(0) - 1;\n",
        k);
    src += "        SKEIN_GROUP_SYNC;\n";
    src += "        if (_skein_last) {\n";
    src += fmt::format("            {}_acquire();\n", k);
    src += "            GLOBAL_MEM const char* _skein_in = _skein_b__part + _skein_o__part;\n";
    src += "            const VSIZE_T _skein_count = get_num_groups(0);\n";
    src += combine_partials(k, L, "_skein_acc2", k + "_load_part(_skein_in, _skein_t)", "            ");
    src += "            if (_skein_lid == 0) {\n";
    src += fmt::format("                {}_finish(_skein_sd[0], _skein_b__y, _skein_o__y, 0);\n", k);
    src += fmt::format("                {}_reset(_skein_b__cnt + _skein_o__cnt);\n", k);
    src += "            }\n        }\n    }\n";
  }
  src += "}\n";

  // One group reduces `count` partial values; writes the result as a partial value or, with
  // `finish`, post-mapped into the output.
  src += fmt::format(
      "KERNEL void {0}_p2({1}, const uint64_t _skein_count, const int _skein_finish, {2}, {3})\n{{\n",
      k, detail::codegen::array_param("_in"), detail::codegen::array_param("_part"), detail::codegen::array_param("_y"));
  src += fmt::format("    LOCAL_MEM reduce_t _skein_sd[{}];\n", L);
  src += "    GLOBAL_MEM const reduce_t* _skein_in = (GLOBAL_MEM const reduce_t*)(_skein_b__in + _skein_o__in);\n";
  src += "    const unsigned int _skein_lid = get_local_id(0);\n";
  src += combine_partials(k, L, "_skein_acc", "_skein_in[_skein_t]", "    ");
  src += "    if (_skein_lid == 0) {\n";
  src += fmt::format("        if (_skein_finish) {}_finish(_skein_sd[0], _skein_b__y, _skein_o__y, 0);\n", k);
  src += "        else *(GLOBAL_MEM reduce_t*)(_skein_b__part + _skein_o__part) = _skein_sd[0];\n";
  src += "    }\n}\n";
  return render(src, impl.options.globals, k);
}

// --- deterministic program: K_dleaf (elements), K_dmid (values of a previous pass), K_dcombine ---

// The pairwise combine of two sibling nodes of a tile that may not lie wholly inside the piece,
// emitting the children that are maximal inside it (see reduction.hpp).
std::string det_helpers(const std::string& k, const Resolved& r) {
  const std::size_t ra = std::max<std::size_t>(8, r.reduce_align);
  return fmt::format(R"(typedef struct ALIGN({1}) {{ uint64_t start; uint32_t level; uint32_t valid; reduce_t value; }} {0}_rec;

/* Whether node (level lev, first element p) of a pass, cut to [0, N), lies inside [a, b). */
WITHIN_KERNEL INLINE int {0}_full(const uint64_t p, const uint32_t lev, const uint64_t a, const uint64_t b,
                                  const uint64_t N)
{{
    if (p < a || p >= N) return 0;
    const uint64_t end = p + ((uint64_t)1 << lev);
    return (end < N ? end : N) <= b;
}}

WITHIN_KERNEL INLINE void {0}_emit(GLOBAL_MEM {0}_rec* recs, const uint64_t p, const uint32_t lev,
                                   const reduce_t v, const uint32_t lbase, const uint32_t lmax)
{{
    const uint32_t level = lbase + lev;
    if (level >= lmax) return; /* cannot happen: only the root reaches lmax */
    /* Right children are left-edge records (slots by increasing level), left children right-edge
       ones (by decreasing level): slot order is then global order. */
    const uint32_t slot = ((p >> lev) & 1) ? level : 2 * lmax - level;
    recs[slot].start = p << lbase;
    recs[slot].level = level;
    recs[slot].valid = 1;
    recs[slot].value = v;
}}

WITHIN_KERNEL INLINE reduce_t {0}_chk(const reduce_t l, const reduce_t r, const uint64_t p, const uint32_t lev,
                                      const uint64_t a, const uint64_t b, const uint64_t N,
                                      GLOBAL_MEM {0}_rec* recs, const uint32_t lbase, const uint32_t lmax)
{{
    const uint64_t pr = p + ((uint64_t)1 << lev);
    if (!{0}_full(p, lev + 1, a, b, N)) {{
        if ({0}_full(p, lev, a, b, N)) {0}_emit(recs, p, lev, l, lbase, lmax);
        if (pr < N && {0}_full(pr, lev, a, b, N)) {0}_emit(recs, pr, lev, r, lbase, lmax);
    }}
    return pr < N ? {0}_reduce(l, r) : l;
}}
)",
                     k, ra);
}

// One tile pass. `leaf(interior)` gives the code that sets reduce_t _skein_leaf<u> for sub-tile u
// of this thread (W elements starting at _skein_e<u> (piece index) / _skein_P<u> (pass index)).
std::string det_tile_kernel(const std::string& k, const std::string& kernel_name,
                            const std::vector<std::string>& own_params, const std::string& setup,
                            std::size_t L, std::size_t W, std::size_t U,
                            const std::function<std::string(std::size_t u, bool interior)>& leaf) {
  const unsigned w = log2_exact(W), lb = log2_exact(L);
  const unsigned s = w + lb + log2_exact(U);
  std::vector<std::string> params = own_params;
  for (const char* p : {"const uint64_t _skein_a", "const uint64_t _skein_bnd", "const uint64_t _skein_N",
                        "const uint64_t _skein_tile0"}) {
    params.push_back(p);
  }
  params.push_back(detail::codegen::array_param("_up"));
  params.push_back("const uint64_t _skein_up0");
  params.push_back("const uint32_t _skein_pass_up");
  params.push_back(detail::codegen::array_param("_recs"));
  params.push_back("const uint32_t _skein_lmax");
  params.push_back("const uint32_t _skein_lbase");
  std::string src = fmt::format("KERNEL void {}({})\n{{\n", kernel_name, fmt::join(params, ",\n    "));
  src += fmt::format("    LOCAL_MEM reduce_t _skein_sd[{}];\n", U * L);
  src += setup;
  src += fmt::format(
      "    GLOBAL_MEM {0}_rec* _skein_recs = (GLOBAL_MEM {0}_rec*)(_skein_b__recs + _skein_o__recs);\n", k);
  src += "    const unsigned int _skein_lid = get_local_id(0);\n";
  src += "    const uint64_t _skein_j = _skein_tile0 + get_group_id(0);\n";
  src += fmt::format("    const uint64_t _skein_T = _skein_j << {};\n", s);
  src += fmt::format(
      "    const int _skein_interior = _skein_T >= _skein_a && _skein_T + {} <= _skein_bnd;\n", std::uint64_t{1} << s);
  src += "#define _SKEIN_CHK(l, r, p, lev) " + k +
         "_chk((l), (r), (p), (lev), _skein_a, _skein_bnd, _skein_N, _skein_recs, _skein_lbase, _skein_lmax)\n";
  for (std::size_t u = 0; u < U; ++u) {
    src += fmt::format("    reduce_t _skein_leaf{};\n", u);
  }
  for (int interior = 1; interior >= 0; --interior) {
    src += interior ? "    if (_skein_interior) {\n" : "    else {\n";
    for (std::size_t u = 0; u < U; ++u) {
      src += fmt::format("        {{\n            const uint64_t _skein_P{0} = _skein_T + {1} + (uint64_t)_skein_lid * {2};\n",
                         u, u * L * W, W);
      src += fmt::format("            const uint64_t _skein_e{0} = _skein_P{0} - _skein_a;\n", u);
      src += leaf(u, interior != 0);
      src += "        }\n";
    }
    src += "    }\n";
  }
  for (std::size_t u = 0; u < U; ++u) src += fmt::format("    _skein_sd[{} + _skein_lid] = _skein_leaf{};\n", u * L, u);
  src += "    LOCAL_BARRIER;\n";
  // Pairwise over the group's threads, for every sub-tile: step `st` joins threads 2 st q and
  // 2 st q + st (adjacent nodes, so the canonical tree).
  src += fmt::format("    for (unsigned int _skein_st = 1, _skein_lv = {}; _skein_st < {}; _skein_st <<= 1, ++_skein_lv) {{\n", w, L);
  src += "        const unsigned int _skein_x = 2 * _skein_st * _skein_lid;\n";
  src += fmt::format("        if (_skein_x < {}) {{\n", L);
  for (std::size_t u = 0; u < U; ++u) {
    src += fmt::format(
        "            if (_skein_interior) _skein_sd[{0} + _skein_x] = {1}_reduce(_skein_sd[{0} + _skein_x], _skein_sd[{0} + _skein_x + _skein_st]);\n"
        "            else _skein_sd[{0} + _skein_x] = _SKEIN_CHK(_skein_sd[{0} + _skein_x], _skein_sd[{0} + _skein_x + _skein_st], "
        "_skein_T + {2} + (uint64_t)_skein_x * {3}, _skein_lv);\n",
        u * L, k, u * L * W, W);
  }
  src += "        }\n        LOCAL_BARRIER;\n    }\n";
  // Across the sub-tiles, then the tile's root.
  src += "    if (_skein_lid == 0) {\n";
  std::vector<std::string> vals;
  for (std::size_t u = 0; u < U; ++u) vals.push_back(fmt::format("_skein_sd[{}]", u * L));
  unsigned lev = w + lb;
  std::size_t span = L * W;
  while (vals.size() > 1) {
    std::vector<std::string> next;
    for (std::size_t q = 0; q < vals.size(); q += 2) {
      const std::string name = fmt::format("_skein_c{}_{}", lev, q / 2);
      src += fmt::format(
          "        const reduce_t {0} = _skein_interior ? {1}_reduce({2}, {3}) : _SKEIN_CHK({2}, {3}, _skein_T + {4}, {5});\n",
          name, k, vals[q], vals[q + 1], std::uint64_t{q / 2} * 2 * span, lev);
      next.push_back(name);
    }
    vals = std::move(next);
    ++lev;
    span *= 2;
  }
  src += fmt::format("        if ({}_full(_skein_T, {}, _skein_a, _skein_bnd, _skein_N)) {{\n", k, s);
  src += fmt::format(
      "            if (_skein_pass_up) ((GLOBAL_MEM reduce_t*)(_skein_b__up + _skein_o__up))[_skein_j - _skein_up0] = {};\n",
      vals[0]);
  src += "            else {\n";
  src += "                _skein_recs[_skein_lmax].start = 0;\n";
  src += "                _skein_recs[_skein_lmax].level = _skein_lmax;\n";
  src += "                _skein_recs[_skein_lmax].valid = 1;\n";
  src += fmt::format("                _skein_recs[_skein_lmax].value = {};\n", vals[0]);
  src += "            }\n        }\n    }\n";
  src += "#undef _SKEIN_CHK\n}\n";
  return src;
}

// The pairwise tree over W leaf values _skein_m0.._skein_m{W-1} into _skein_leaf<u>.
std::string leaf_tree(const std::string& k, std::size_t W, std::size_t u, bool interior) {
  std::string src;
  std::vector<std::string> vals;
  for (std::size_t e = 0; e < W; ++e) vals.push_back(fmt::format("_skein_m{}", e));
  unsigned lev = 0;
  while (vals.size() > 1) {
    std::vector<std::string> next;
    for (std::size_t q = 0; q < vals.size(); q += 2) {
      const std::string name = fmt::format("_skein_t{}_{}", lev, q / 2);
      if (interior) {
        src += fmt::format("            const reduce_t {} = {}_reduce({}, {});\n", name, k, vals[q], vals[q + 1]);
      } else {
        src += fmt::format("            const reduce_t {} = _SKEIN_CHK({}, {}, _skein_P{} + {}, {});\n", name, vals[q],
                           vals[q + 1], u, (q / 2) << (lev + 1), lev);
      }
      next.push_back(name);
    }
    vals = std::move(next);
    ++lev;
  }
  src += fmt::format("            _skein_leaf{} = {};\n", u, vals[0]);
  return src;
}

struct DetGeometry {
  std::size_t L = 1, W = 1, U = 1;  // leaf pass
  std::size_t Um = 1;               // later passes (one value per thread)
  std::uint64_t S0() const { return std::uint64_t{L} * W * U; }
  std::uint64_t Sm() const { return std::uint64_t{L} * Um; }
};

DetGeometry det_geometry(const Resolved& r, std::size_t L) {
  DetGeometry g;
  g.L = L;
  g.W = r.layout.contiguous ? r.W : 1;
  g.U = r.layout.contiguous ? r.U : 4;
  g.Um = 4;
  // Keep the group's local memory modest.
  while (g.U > 1 && g.U * L * r.reduce_size > 32768) g.U /= 2;
  while (g.Um > 1 && g.Um * L * r.reduce_size > 32768) g.Um /= 2;
  return g;
}

std::string det_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L) {
  const std::string& k = impl.name();
  const DetGeometry g = det_geometry(r, L);
  std::string src = common_source(impl, r, true);
  src += det_helpers(k, r);
  const bool contiguous = r.layout.contiguous;
  const std::size_t W = g.W;
  if (contiguous) {
    for (std::size_t j = 0; j < impl.params.size(); ++j) {
      if (r.layout_index[j] == npos) continue;
      src += fmt::format("typedef union {{ uint4 v[{}]; {} e[{}]; }} _skein_vec_{}_{};\n",
                         W * itemsize(r.dtypes[j]) / 16, ctype(r.dtypes[j]), W, k, impl.params[j].name);
    }
  }

  // Leaf pass: map values of the inputs.
  auto own = input_params(impl, r);
  own.push_back("const uint64_t _skein_n");
  own.push_back("const uint32_t _skein_vec");
  if (!contiguous) {
    for (auto& p : strided_params(r)) own.push_back(p);
  }
  auto element = [&](std::size_t j, const std::string& e) {
    if (contiguous) return fmt::format("_skein_p_{}[{}]", impl.params[j].name, e);
    return strided_element(r, j, impl.params[j].name);
  };
  auto leaf = [&](std::size_t u, bool interior) {
    std::string s;
    // The W map values _skein_m<e>.
    if (interior && contiguous) {
      bool any_vector = false;
      for (std::size_t j = 0; j < impl.params.size(); ++j) any_vector |= r.layout_index[j] != npos;
      if (any_vector) {
        s += "            if (_skein_vec) {\n";
        for (std::size_t j = 0; j < impl.params.size(); ++j) {
          if (r.layout_index[j] == npos) continue;
          const auto& nm = impl.params[j].name;
          const std::size_t V = W * itemsize(r.dtypes[j]) / 16;
          s += fmt::format("                _skein_vec_{0}_{1} _skein_x_{1};\n", k, nm);
          for (std::size_t v = 0; v < V; ++v) {
            s += fmt::format(
                "                _skein_x_{0}.v[{1}] = ((GLOBAL_MEM const uint4*)(_skein_p_{0} + _skein_e{2}))[{1}];\n",
                nm, v, u);
          }
        }
        for (std::size_t e = 0; e < W; ++e) {
          s += fmt::format("                const reduce_t _skein_m{} = {};\n", e,
                           map_call(impl, r, fmt::format("_skein_e{} + {}", u, e), [&](std::size_t j) {
                             return fmt::format("_skein_x_{}.e[{}]", impl.params[j].name, e);
                           }));
        }
        s += leaf_tree(k, W, u, true);
        s += "            } else {\n";
      }
      for (std::size_t e = 0; e < W; ++e) {
        s += fmt::format("                const reduce_t _skein_m{} = {};\n", e,
                         map_call(impl, r, fmt::format("_skein_e{} + {}", u, e), [&](std::size_t j) {
                           return element(j, fmt::format("_skein_e{} + {}", u, e));
                         }));
      }
      s += leaf_tree(k, W, u, true);
      if (any_vector) s += "            }\n";
      return s;
    }
    for (std::size_t e = 0; e < W; ++e) {
      // Elements outside the piece are never part of an emitted node: any value does.
      s += fmt::format("            reduce_t _skein_m{} = {}_identity();\n", e, k);
      s += fmt::format(
          "            if (_skein_P{0} + {1} >= _skein_a && _skein_P{0} + {1} < _skein_bnd) {{\n", u, e);
      if (!contiguous) s += strided_offsets(r, fmt::format("_skein_e{} + {}", u, e), "                ");
      s += fmt::format("                _skein_m{} = {};\n", e,
                       map_call(impl, r, fmt::format("_skein_e{} + {}", u, e), [&](std::size_t j) {
                         return element(j, fmt::format("_skein_e{} + {}", u, e));
                       }));
      s += "            }\n";
    }
    s += leaf_tree(k, W, u, interior);
    return s;
  };
  src += det_tile_kernel(k, k + "_dleaf", own, input_setup(impl, r, !contiguous), g.L, W, g.U, leaf);

  // Later passes: the values a previous pass handed up, one per thread and sub-tile.
  {
    std::vector<std::string> own_mid{detail::codegen::array_param("_in")};
    const std::string setup =
        "    GLOBAL_MEM const reduce_t* _skein_in = (GLOBAL_MEM const reduce_t*)(_skein_b__in + _skein_o__in);\n";
    src += det_tile_kernel(k, k + "_dmid", own_mid, setup, g.L, 1, g.Um, [&](std::size_t u, bool interior) {
      if (interior) return fmt::format("            _skein_leaf{0} = _skein_in[_skein_e{0}];\n", u);
      return fmt::format(
          "            _skein_leaf{0} = (_skein_P{0} >= _skein_a && _skein_P{0} < _skein_bnd) ? _skein_in[_skein_e{0}] : {1}_identity();\n",
          u, k);
    });
  }

  // Combine: one work item merges the records in global order (siblings bottom-up), then folds
  // what is left from the right (the nodes cut by N).
  src += fmt::format(R"(KERNEL void {0}_dcombine({1}, const uint64_t _skein_count, const uint64_t _skein_N, {2})
{{
    if (get_global_id(0) != 0) return;
    GLOBAL_MEM const {0}_rec* _skein_rec = (GLOBAL_MEM const {0}_rec*)(_skein_b__recs + _skein_o__recs);
    reduce_t _skein_sv[{3}];
    uint64_t _skein_sp[{3}];
    uint32_t _skein_sl[{3}];
    int _skein_top = 0;
    uint64_t _skein_pos = 0, _skein_hint = 0;
    while (_skein_pos < _skein_N) {{
        uint64_t _skein_k = _skein_hint;
        while (_skein_k < _skein_count && !_skein_rec[_skein_k].valid) ++_skein_k;
        if (_skein_k >= _skein_count || _skein_rec[_skein_k].start != _skein_pos) {{
            for (_skein_k = 0; _skein_k < _skein_count; ++_skein_k) {{
                if (_skein_rec[_skein_k].valid && _skein_rec[_skein_k].start == _skein_pos) break;
            }}
            if (_skein_k >= _skein_count) break; /* the records do not tile [0, N) */
        }}
        _skein_hint = _skein_k + 1;
        if (_skein_top >= {3}) break;
        const uint32_t _skein_lv = _skein_rec[_skein_k].level;
        _skein_sv[_skein_top] = _skein_rec[_skein_k].value;
        _skein_sp[_skein_top] = _skein_pos;
        _skein_sl[_skein_top] = _skein_lv;
        ++_skein_top;
        const uint64_t _skein_end = _skein_pos + ((uint64_t)1 << _skein_lv);
        _skein_pos = _skein_end < _skein_N ? _skein_end : _skein_N;
        while (_skein_top >= 2 && _skein_sl[_skein_top - 1] == _skein_sl[_skein_top - 2] &&
               ((_skein_sp[_skein_top - 2] >> _skein_sl[_skein_top - 2]) & 1) == 0 &&
               _skein_sp[_skein_top - 1] == _skein_sp[_skein_top - 2] + ((uint64_t)1 << _skein_sl[_skein_top - 2])) {{
            _skein_sv[_skein_top - 2] = {0}_reduce(_skein_sv[_skein_top - 2], _skein_sv[_skein_top - 1]);
            _skein_sl[_skein_top - 2] += 1;
            --_skein_top;
        }}
    }}
    reduce_t _skein_acc = {0}_identity();
    if (_skein_top > 0) {{
        _skein_acc = _skein_sv[_skein_top - 1];
        for (int _skein_t = _skein_top - 2; _skein_t >= 0; --_skein_t) _skein_acc = {0}_reduce(_skein_sv[_skein_t], _skein_acc);
    }}
    {0}_finish(_skein_acc, _skein_b__y, _skein_o__y, 0);
}}
)",
                     k, detail::codegen::array_param("_recs"), detail::codegen::array_param("_y"), kStack);
  return render(src, impl.options.globals, k);
}

// --- per-axis program (2-D): K_rows (axis 1), K_cols + K_cols2 (axis 0) ---

std::string axis_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L) {
  const std::string& k = impl.name();
  std::string src = common_source(impl, r, false);
  auto base = input_params(impl, r);
  base.push_back("const uint64_t _skein_R");
  base.push_back("const uint64_t _skein_C");
  for (std::size_t j = 0; j < r.layout_count; ++j) {
    base.push_back(fmt::format("const uint64_t _skein_s{}_0", j));
    base.push_back(fmt::format("const uint64_t _skein_s{}_1", j));
  }
  auto element = [&](std::size_t j) {
    return fmt::format("*(GLOBAL_MEM const {}*)(_skein_q_{} + _skein_row * _skein_s{}_0 + _skein_col * _skein_s{}_1)",
                       ctype(r.dtypes[j]), impl.params[j].name, r.layout_index[j], r.layout_index[j]);
  };
  const std::string setup = input_setup(impl, r, true) +
                            "    const VSIZE_T _skein_n = _skein_R * _skein_C;\n";
  // axis 1: a group per row.
  {
    auto params = base;
    params.push_back(detail::codegen::array_param("_y"));
    src += fmt::format("KERNEL void {}_rows({})\n{{\n", k, fmt::join(params, ",\n    "));
    src += fmt::format("    LOCAL_MEM reduce_t _skein_sd[{}];\n", L);
    src += setup;
    src += "    const unsigned int _skein_lid = get_local_id(0);\n";
    src += "    for (VSIZE_T _skein_row = get_group_id(0); _skein_row < _skein_R; _skein_row += get_num_groups(0)) {\n";
    src += fmt::format("        reduce_t _skein_acc = {}_identity();\n", k);
    src += fmt::format("        for (VSIZE_T _skein_col = _skein_lid; _skein_col < _skein_C; _skein_col += {}) {{\n", L);
    src += fmt::format("            _skein_acc = {}_reduce(_skein_acc, {});\n", k,
                       map_call(impl, r, "_skein_row * _skein_C + _skein_col", element));
    src += "        }\n";
    src += "        _skein_sd[_skein_lid] = _skein_acc;\n";
    std::string block = block_reduce_any(k, L);
    // indent the block reduction one level
    std::string indented;
    std::size_t pos = 0;
    while (pos < block.size()) {
      const auto e = block.find('\n', pos);
      indented += "    " + block.substr(pos, e - pos + 1);
      pos = e + 1;
    }
    src += indented;
    src += fmt::format("        if (_skein_lid == 0) {}_finish(_skein_sd[0], _skein_b__y, _skein_o__y, _skein_row);\n", k);
    src += "        LOCAL_BARRIER;\n    }\n}\n";
  }
  // axis 0: partial values per (chunk of rows, column), then a thread per column.
  {
    auto params = base;
    params.push_back("const uint64_t _skein_rpc");
    params.push_back("const uint64_t _skein_ncb");
    params.push_back(detail::codegen::array_param("_part"));
    src += fmt::format("KERNEL void {}_cols({})\n{{\n", k, fmt::join(params, ",\n    "));
    src += setup;
    src += "    const VSIZE_T _skein_g = get_group_id(0);\n";
    src += fmt::format("    const VSIZE_T _skein_col = (_skein_g % _skein_ncb) * {} + get_local_id(0);\n", L);
    src += "    const VSIZE_T _skein_ch = _skein_g / _skein_ncb;\n";
    src += "    if (_skein_col >= _skein_C) return;\n";
    src += fmt::format("    reduce_t _skein_acc = {}_identity();\n", k);
    src += "    const VSIZE_T _skein_r1 = (_skein_ch + 1) * _skein_rpc < _skein_R ? (_skein_ch + 1) * _skein_rpc : _skein_R;\n";
    src += "    for (VSIZE_T _skein_row = _skein_ch * _skein_rpc; _skein_row < _skein_r1; ++_skein_row) {\n";
    src += fmt::format("        _skein_acc = {}_reduce(_skein_acc, {});\n", k,
                       map_call(impl, r, "_skein_row * _skein_C + _skein_col", element));
    src += "    }\n";
    src += "    ((GLOBAL_MEM reduce_t*)(_skein_b__part + _skein_o__part))[_skein_ch * _skein_C + _skein_col] = _skein_acc;\n";
    src += "}\n";
    src += fmt::format(
        "KERNEL void {0}_cols2({1}, const uint64_t _skein_C, const uint64_t _skein_chunks, {2})\n{{\n"
        "    const VSIZE_T _skein_col = get_global_id(0);\n"
        "    if (_skein_col >= _skein_C) return;\n"
        "    GLOBAL_MEM const reduce_t* _skein_p = (GLOBAL_MEM const reduce_t*)(_skein_b__part + _skein_o__part);\n"
        "    reduce_t _skein_acc = {0}_identity();\n"
        "    for (VSIZE_T _skein_ch = 0; _skein_ch < _skein_chunks; ++_skein_ch) _skein_acc = {0}_reduce(_skein_acc, _skein_p[_skein_ch * _skein_C + _skein_col]);\n"
        "    {0}_finish(_skein_acc, _skein_b__y, _skein_o__y, _skein_col);\n}}\n",
        k, detail::codegen::array_param("_part"), detail::codegen::array_param("_y"));
  }
  return render(src, impl.options.globals, k);
}

// --- running ---------------------------------------------------------------------------------

enum class Mode { fast, det, axis };

// Whether the groups of K_p1 can finish in one launch on every device of the context (the fast
// program is built once for them all), and the compiler options that takes: on CUDA always (none);
// on OpenCL where each device's OpenCL C has device-scope fences, under one -cl-std for all.
// Elsewhere (OpenCL C 1.2: mem_fence orders only within a work group) std::nullopt: two launches.
std::optional<std::vector<std::string>> one_launch_options(const Context& context) {
  if (context.api().id() == ApiId::cuda) return std::vector<std::string>{};
  std::optional<std::string> common;
  for (const auto& device : context.devices()) {
    const auto version = detail::codegen::opencl_device_fence_std(device.params());
    if (!version || (common && *common != *version)) return std::nullopt;
    common = version;
  }
  if (!common) return std::nullopt;
  return std::vector<std::string>{"-cl-std=" + *common};
}

// Test switch (reduction_paths.hpp): force two launches, and count the calls.
std::atomic<bool> force_two_launches{false};
std::atomic<bool> count_finishes{false};
std::atomic<std::uint64_t> finished_one_group{0}, finished_one_launch{0}, finished_two_launches{0};
std::atomic<std::size_t> finished_last_groups{0};

void count_finish(std::size_t groups, bool one_launch) {
  if (!count_finishes.load(std::memory_order_relaxed)) return;
  auto& counter = groups == 1 ? finished_one_group : one_launch ? finished_one_launch : finished_two_launches;
  counter.fetch_add(1, std::memory_order_relaxed);
  finished_last_groups.store(groups, std::memory_order_relaxed);
}

std::shared_ptr<const detail::codegen::CompiledProgram> program_for(const ReductionKernel::Impl& impl,
                                                           const Context& context, const Resolved& r,
                                                           Mode mode) {
  const std::size_t L = detail::codegen::group_size_for(context);
  std::string sig;
  std::vector<std::string> kernels;
  const std::string& k = impl.name();
  ProgramOptions options;
  options.name = k;
  std::function<std::string()> build;
  const std::string layout_sig =
      r.layout.contiguous ? "c" : fmt::format("s{}", r.layout.shape.size());
  switch (mode) {
    case Mode::fast: {
      const auto one = one_launch_options(context);
      sig = fmt::format("red1|fast|{}|L{}{}{}", layout_sig, L, one ? "|one" : "", r.types_sig);
      kernels = {k + "_p1", k + "_p2"};
      build = [&, one_launch = one.has_value()] { return fast_source(impl, r, L, one_launch); };
      if (one) options.compiler_options = *one;
      break;
    }
    case Mode::det:
      sig = fmt::format("red1|det|{}|L{}{}", layout_sig, L, r.types_sig);
      kernels = {k + "_dleaf", k + "_dmid", k + "_dcombine"};
      build = [&] { return det_source(impl, r, L); };
      if (context.api().id() == ApiId::cuda) options.compiler_options.push_back("--fmad=false");
      break;
    case Mode::axis:
      sig = fmt::format("red1|axis|L{}{}", L, r.types_sig);
      kernels = {k + "_rows", k + "_cols", k + "_cols2"};
      build = [&] { return axis_source(impl, r, L); };
      break;
  }
  return detail::codegen::cached_program(
      impl.owner, context, sig,
      [&] {
        impl.built += 1;
        return build();
      },
      kernels, options);
}

void pack_inputs(detail::codegen::ArgPack& pack, const ReductionKernel::Impl& impl, const Resolved& r) {
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    if (r.is_array[k]) {
      pack.array(r.args[k].array());
    } else {
      pack.bytes(r.args[k].bytes_as(r.dtypes[k], fmt::format("argument '{}' of kernel '{}'",
                                                              impl.params[k].name, impl.name())));
    }
  }
}

void pack_strides(detail::codegen::ArgPack& pack, const Resolved& r) {
  for (auto s : r.layout.shape) pack.value(s);
  for (const auto& strides : r.layout.strides) {
    for (auto s : strides) pack.value(s);
  }
}

// The device of the array inputs; with scalars only, the queue's first device.
std::size_t device_of(const Resolved& r, const Queue& queue) {
  return r.device ? *r.device : queue.device_idxs().front();
}

void check_out(const Array& out, Dtype dtype, std::size_t elements, std::size_t device,
               const Queue& queue, const char* call, const std::string& kname) {
  if (out.dtype() != dtype || out.size() != elements || !out.is_contiguous()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass a contiguous output of the result's dtype and size, or none.",
                     "kernel '{}': the output is a {} array of shape {}{}; the result needs {} x {}",
                     kname, name(out.dtype()), to_string(out.shape()),
                     out.is_contiguous() ? "" : " (strided)", elements, name(dtype));
  }
  if (out.data().context_id() != detail::impl_of(queue.context()).get()) {
    detail::raise_in(SKEIN_HERE, call, "Use an output of the queue's context.",
                     "kernel '{}': the output belongs to another context", kname);
  }
  if (out.device_idx() != device) {
    detail::raise_in(SKEIN_HERE, call, "Put the output on the device the reduction runs on.",
                     "kernel '{}': the output is on device {}, the reduction runs on device {}", kname,
                     out.device_idx(), device);
  }
}

Array output_for(const std::optional<Array>& out, const Queue& queue, Dtype dtype, Shape shape,
                 std::size_t device, const char* call, const std::string& kname) {
  if (out) {
    check_out(*out, dtype, shape_size(shape), device, queue, call, kname);
    return *out;
  }
  return Array::empty(queue, std::move(shape), dtype, device);
}

// Byte layout of the scratch memory of one call: regions at 256-byte boundaries.
struct ScratchLayout {
  std::size_t total = 0;
  std::size_t add(std::size_t bytes) {
    const std::size_t at = total;
    total += round_up(std::max<std::size_t>(bytes, 1), 256);
    return at;
  }
};

// The fast first pass on one device into `part` (groups partial values); returns the group count.
// The values p1 takes after its inputs: the size, then the vector loop's start and chunk count
// (contiguous) or the shape and strides.
std::vector<std::uint64_t> p1_tail(const ReductionKernel::Impl& impl, const Queue& queue,
                                   std::size_t d, const Resolved& r) {
  std::vector<std::uint64_t> tail{r.n};
  if (r.layout.contiguous) {
    std::uint64_t head = r.n, nchunks = 0;
    std::vector<const Array*> arrays;
    for (std::size_t k = 0; k < impl.params.size(); ++k) {
      if (r.layout_index[k] != npos) arrays.push_back(&r.args[k].array());
    }
    const bool aligned_buffers = queue.context().device(d).params().base_address_align >= 16 ||
                                 queue.context().api().id() == ApiId::cuda;
    if (aligned_buffers && !arrays.empty()) {
      if (auto h = detail::codegen::common_vector_start(arrays); h && *h < r.n) {
        head = *h;
        nchunks = (r.n - head) / r.W;
      }
    }
    if (nchunks == 0) head = r.n;
    tail.push_back(head);
    tail.push_back(nchunks);
  } else {
    for (auto s : r.layout.shape) tail.push_back(s);
    for (const auto& strides : r.layout.strides) {
      for (auto s : strides) tail.push_back(s);
    }
  }
  return tail;
}

// The fast first pass on one device into `part` (groups partial values); returns the group count.
// With `finish`, the result goes post-mapped into that array too: from the one group, or (with
// `counter`, a program with the one-launch code) from the last of several.
std::size_t enqueue_p1(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                       const Resolved& r, const detail::codegen::CompiledProgram& prog, const Buffer& part,
                       std::size_t part_offset, std::size_t groups, const Array* finish = nullptr,
                       const Buffer* counter = nullptr) {
  detail::codegen::ArgPack pack;
  pack_inputs(pack, impl, r);
  for (std::uint64_t v : p1_tail(impl, queue, d, r)) pack.value(v);
  pack.buffer(part, part_offset);
  const P1Finish mode = !finish ? kPartials : groups == 1 ? kAlone : kLastGroup;
  if (mode == kLastGroup && !counter) {
    detail::raise_in<RuntimeError>(SKEIN_HERE, "ReductionKernel", "This is a bug in Skein.",
                                   "kernel '{}': a one-launch finish without a group counter", impl.name());
  }
  pack.value(std::int32_t{mode});
  if (finish) {
    pack.array(*finish);
  } else {
    pack.buffer(part, part_offset);
  }
  if (counter) {
    pack.buffer(*counter);
  } else {
    pack.buffer(part, part_offset);
  }
  detail::codegen::launch(prog.kernel(impl.name() + "_p1"), queue, d, groups, prog.local_size[d], pack);
  return groups;
}

std::size_t p1_groups(const ReductionKernel::Impl& impl, const Resolved& r,
                      const detail::codegen::CompiledProgram& prog, std::size_t d) {
  const std::size_t L = prog.local_size[d];
  const std::uint64_t work = r.layout.contiguous ? std::max<std::uint64_t>(ceil_div(r.n, r.W * r.U), 1) : r.n;
  return std::clamp<std::uint64_t>(ceil_div(work, L), 1, prog.resident(impl.name() + "_p1", d));
}

void enqueue_p2(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                const detail::codegen::CompiledProgram& prog, const Buffer& in, std::size_t in_offset,
                std::uint64_t count, bool finish, const Buffer& part, std::size_t part_offset,
                const Array* y) {
  detail::codegen::ArgPack pack;
  pack.buffer(in, in_offset);
  pack.value(count);
  pack.value(std::int32_t{finish ? 1 : 0});
  pack.buffer(part, part_offset);
  if (y) {
    pack.array(*y);
  } else {
    pack.buffer(part, part_offset);
  }
  detail::codegen::launch(prog.kernel(impl.name() + "_p2"), queue, d, 1, prog.local_size[d], pack);
}

// Deterministic records of one piece: passes over tiles, into `recs` (cleared first).
void enqueue_records(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                     const Resolved& r, const detail::codegen::CompiledProgram& prog, std::uint64_t offset,
                     std::uint64_t total, const Buffer& recs, std::size_t recs_offset,
                     const Buffer& scratch, std::size_t up_a, std::size_t up_b) {
  const std::uint32_t lmax = max_level(total);
  const std::size_t capacity = ReductionKernel::record_capacity(total);
  queue.device_queue(d).fill_zero(*recs.adapter(), recs.offset() + recs_offset, capacity * r.record_size);
  const std::uint64_t n = r.n;
  if (n == 0) return;
  const std::size_t L = prog.local_size[d];
  const DetGeometry g = det_geometry(r, L);

  std::uint64_t a = offset, b = offset + n, N = total;
  std::uint32_t lbase = 0;
  std::size_t in_off = 0, out_off = up_a;
  bool first = true;
  while (a < b) {
    const std::uint64_t S = first ? g.S0() : g.Sm();
    const unsigned s = log2_exact(S);
    const std::uint64_t tile0 = a / S, tiles = ceil_div(b, S) - tile0;
    const bool pass_up = N > S;
    const std::uint64_t A = ceil_div(a, S);
    const std::uint64_t B = (b == N) ? ceil_div(N, S) : b / S;
    detail::codegen::ArgPack pack;
    if (first) {
      pack_inputs(pack, impl, r);
      pack.value(n);
      // 16-byte loads of the leaves need each input's element with a global index that is a
      // multiple of W at a 16-byte boundary.
      std::uint32_t vec = 0;
      if (r.layout.contiguous && (queue.context().device(d).params().base_address_align >= 16 ||
                                  queue.context().api().id() == ApiId::cuda)) {
        vec = 1;
        for (std::size_t k = 0; k < impl.params.size(); ++k) {
          if (r.layout_index[k] == npos) continue;
          const Array& arr = r.args[k].array();
          const std::uint64_t isz = arr.itemsize();
          if ((detail::codegen::address_in_allocation(arr) % 16 + 16 - (offset * isz) % 16) % 16 != 0) vec = 0;
        }
      }
      pack.value(vec);
      if (!r.layout.contiguous) pack_strides(pack, r);
    } else {
      pack.buffer(scratch, in_off);
    }
    pack.value(a);
    pack.value(b);
    pack.value(N);
    pack.value(tile0);
    pack.buffer(scratch, out_off);
    pack.value(A);
    pack.value(std::uint32_t{pass_up ? 1u : 0u});
    pack.buffer(recs, recs_offset);
    pack.value(lmax);
    pack.value(lbase);
    detail::codegen::launch(prog.kernel(impl.name() + (first ? "_dleaf" : "_dmid")), queue, d, tiles, L, pack);
    if (!pass_up || A >= B) break;
    a = A;
    b = B;
    N = ceil_div(N, S);
    lbase += s;
    in_off = out_off;
    out_off = (out_off == up_a) ? up_b : up_a;
    first = false;
  }
}

// Scratch bytes for the up-arrays of a piece of n elements.
std::size_t up_bytes(const Resolved& r, std::size_t L) {
  const DetGeometry g = det_geometry(r, L);
  return (r.n / g.S0() + 2) * r.reduce_size;
}

void enqueue_combine(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                     const detail::codegen::CompiledProgram& prog, const Buffer& recs, std::size_t recs_offset,
                     std::uint64_t count, std::uint64_t total, const Array& y) {
  detail::codegen::ArgPack pack;
  pack.buffer(recs, recs_offset);
  pack.value(count);
  pack.value(total);
  pack.array(y);
  detail::codegen::launch(prog.kernel(impl.name() + "_dcombine"), queue, d, 1, 1, pack);
}

// --- per-axes program (any number of dimensions): K_axg (a group per output), K_axt (a thread per
// output). The broadcast shape is split into kept dimensions (the output's, in order) and reduced
// ones, each list with merged dimensions where every input allows it; output element o and
// reduced element j (both flat, C order) give each input's byte offset, and the flat index `i`
// in the broadcast shape is one more "input" with element strides.

struct AxesPlan {
  std::vector<std::uint64_t> kept, red;  // dimension sizes after merging
  // Per layout input, then one more for the flat index: strides over kept / reduced dimensions.
  std::vector<std::vector<std::uint64_t>> kept_strides, red_strides;
  Shape out_shape;
  std::uint64_t M = 1, N = 1;  // outputs, reduced elements per output
};

// Drops dimensions of size 1 and merges neighbours (a, b) where stride[a] == stride[b] * size[b]
// for every input.
void merge_dims(std::vector<std::uint64_t>& sizes, std::vector<std::vector<std::uint64_t>>& strides) {
  std::vector<std::uint64_t> ns;
  std::vector<std::vector<std::uint64_t>> nst(strides.size());
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] == 1) continue;
    bool merge = !ns.empty();
    for (std::size_t j = 0; merge && j < strides.size(); ++j) {
      merge = nst[j].back() == strides[j][t] * sizes[t];
    }
    if (merge) {
      ns.back() *= sizes[t];
      for (std::size_t j = 0; j < strides.size(); ++j) nst[j].back() = strides[j][t];
    } else {
      ns.push_back(sizes[t]);
      for (std::size_t j = 0; j < strides.size(); ++j) nst[j].push_back(strides[j][t]);
    }
  }
  sizes = std::move(ns);
  strides = std::move(nst);
}

AxesPlan plan_axes(const ReductionKernel::Impl& impl, const Resolved& r, const std::vector<bool>& reduced) {
  const std::size_t D = r.shape.size();
  const std::size_t layouts = r.layout_count + 1;
  std::vector<std::vector<std::uint64_t>> full(layouts, std::vector<std::uint64_t>(D, 0));
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    if (r.layout_index[k] == npos) continue;
    const Array& a = r.args[k].array();
    const std::size_t lead = D - a.ndim();
    for (std::size_t dim = lead; dim < D; ++dim) {
      if (a.shape()[dim - lead] != 1) full[r.layout_index[k]][dim] = a.strides()[dim - lead];
    }
  }
  std::uint64_t e = 1;
  for (std::size_t dim = D; dim-- > 0;) {
    full[layouts - 1][dim] = e;
    e *= r.shape[dim];
  }
  AxesPlan p;
  p.kept_strides.resize(layouts);
  p.red_strides.resize(layouts);
  for (std::size_t dim = 0; dim < D; ++dim) {
    auto& sizes = reduced[dim] ? p.red : p.kept;
    auto& strides = reduced[dim] ? p.red_strides : p.kept_strides;
    sizes.push_back(r.shape[dim]);
    for (std::size_t j = 0; j < layouts; ++j) strides[j].push_back(full[j][dim]);
    if (reduced[dim]) {
      p.N *= r.shape[dim];
    } else {
      p.M *= r.shape[dim];
      p.out_shape.push_back(r.shape[dim]);
    }
  }
  if (p.out_shape.empty()) p.out_shape = {1};
  merge_dims(p.kept, p.kept_strides);
  merge_dims(p.red, p.red_strides);
  return p;
}

std::string axes_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L,
                        std::size_t nk, std::size_t nr) {
  const std::string& k = impl.name();
  const std::size_t layouts = r.layout_count + 1;
  std::string src = common_source(impl, r, false);
  auto params = input_params(impl, r);
  params.push_back("const uint64_t _skein_M");
  params.push_back("const uint64_t _skein_N");
  for (std::size_t t = 0; t < nk; ++t) params.push_back(fmt::format("const uint64_t _skein_kd{}", t));
  for (std::size_t t = 0; t < nr; ++t) params.push_back(fmt::format("const uint64_t _skein_rd{}", t));
  for (std::size_t j = 0; j < layouts; ++j) {
    for (std::size_t t = 0; t < nk; ++t) params.push_back(fmt::format("const uint64_t _skein_ks{}_{}", j, t));
    for (std::size_t t = 0; t < nr; ++t) params.push_back(fmt::format("const uint64_t _skein_rs{}_{}", j, t));
  }
  params.push_back(detail::codegen::array_param("_y"));
  // Offsets of output _skein_o's first element: _skein_kb<j>.
  std::string kept = "        VSIZE_T _skein_ox = _skein_o;\n";
  for (std::size_t j = 0; j < layouts; ++j) kept += fmt::format("        uint64_t _skein_kb{} = 0;\n", j);
  for (std::size_t t = nk; t-- > 0;) {
    kept += fmt::format("        if (_skein_kd{0} != 1) {{\n            const VSIZE_T _skein_x = _skein_ox % _skein_kd{0};\n"
                        "            _skein_ox /= _skein_kd{0};\n", t);
    for (std::size_t j = 0; j < layouts; ++j) {
      kept += fmt::format("            _skein_kb{0} += _skein_x * _skein_ks{0}_{1};\n", j, t);
    }
    kept += "        }\n";
  }
  // Offsets of reduced element _skein_j: _skein_off<j>.
  std::string red = "            VSIZE_T _skein_jx = _skein_j;\n";
  for (std::size_t j = 0; j < layouts; ++j) red += fmt::format("            uint64_t _skein_off{0} = _skein_kb{0};\n", j);
  for (std::size_t t = nr; t-- > 0;) {
    red += fmt::format("            if (_skein_rd{0} != 1) {{\n                const VSIZE_T _skein_x = _skein_jx % _skein_rd{0};\n"
                       "                _skein_jx /= _skein_rd{0};\n", t);
    for (std::size_t j = 0; j < layouts; ++j) {
      red += fmt::format("                _skein_off{0} += _skein_x * _skein_rs{0}_{1};\n", j, t);
    }
    red += "            }\n";
  }
  auto element = [&](std::size_t j) {
    return fmt::format("*(GLOBAL_MEM const {}*)(_skein_q_{} + _skein_off{})", ctype(r.dtypes[j]),
                       impl.params[j].name, r.layout_index[j]);
  };
  const std::string acc = fmt::format("            _skein_acc = {}_reduce(_skein_acc, {});\n", k,
                                      map_call(impl, r, fmt::format("_skein_off{}", layouts - 1), element));
  const std::string setup = input_setup(impl, r, true) + "    const VSIZE_T _skein_n = _skein_M * _skein_N;\n";
  // A group per output.
  src += fmt::format("KERNEL void {}_axg({})\n{{\n", k, fmt::join(params, ",\n    "));
  src += fmt::format("    LOCAL_MEM reduce_t _skein_sd[{}];\n", L);
  src += setup;
  src += "    const unsigned int _skein_lid = get_local_id(0);\n";
  src += "    for (VSIZE_T _skein_o = get_group_id(0); _skein_o < _skein_M; _skein_o += get_num_groups(0)) {\n";
  src += kept;
  src += fmt::format("        reduce_t _skein_acc = {}_identity();\n", k);
  src += fmt::format("        for (VSIZE_T _skein_j = _skein_lid; _skein_j < _skein_N; _skein_j += {}) {{\n", L);
  src += red + acc;
  src += "        }\n        _skein_sd[_skein_lid] = _skein_acc;\n";
  const std::string block = block_reduce_any(k, L);
  for (std::size_t pos = 0; pos < block.size();) {
    const auto e = block.find('\n', pos);
    src += "    " + block.substr(pos, e - pos + 1);
    pos = e + 1;
  }
  src += fmt::format("        if (_skein_lid == 0) {}_finish(_skein_sd[0], _skein_b__y, _skein_o__y, _skein_o);\n", k);
  src += "        LOCAL_BARRIER;\n    }\n}\n";
  // A thread per output, its elements in order.
  src += fmt::format("KERNEL void {}_axt({})\n{{\n", k, fmt::join(params, ",\n    "));
  src += setup;
  src += "    for (VSIZE_T _skein_o = get_global_id(0); _skein_o < _skein_M; _skein_o += get_global_size(0)) {\n";
  src += kept;
  src += fmt::format("        reduce_t _skein_acc = {}_identity();\n", k);
  src += "        for (VSIZE_T _skein_j = 0; _skein_j < _skein_N; ++_skein_j) {\n";
  src += red + acc;
  src += "        }\n";
  src += fmt::format("        {}_finish(_skein_acc, _skein_b__y, _skein_o__y, _skein_o);\n", k);
  src += "    }\n}\n";
  return render(src, impl.options.globals, k);
}

// The reduced axes of a per-axis call (sorted flags per dimension), checked.
std::vector<bool> reduced_axes(const ReductionKernel::Impl& impl, const ReductionArgs& args,
                               std::size_t ndim, const Shape& shape, const char* call) {
  if (args.axis && !args.axes.empty()) {
    detail::raise_in(SKEIN_HERE, call, "Give either axis or axes.",
                     "kernel '{}': both axis ({}) and axes ({}) were given", impl.name(), *args.axis,
                     fmt::join(args.axes, ", "));
  }
  std::vector<bool> reduced(ndim, false);
  const std::vector<std::size_t> axes = args.axis ? std::vector<std::size_t>{*args.axis} : args.axes;
  for (std::size_t a : axes) {
    if (a >= ndim) {
      detail::raise_in(SKEIN_HERE, call, "Give axes below the number of dimensions.",
                       "kernel '{}': axis {} of inputs of shape {} ({} dimension(s))", impl.name(), a,
                       to_string(shape), ndim);
    }
    if (reduced[a]) {
      detail::raise_in(SKEIN_HERE, call, "Name each axis once.",
                       "kernel '{}': axis {} appears twice in axes ({})", impl.name(), a,
                       fmt::join(axes, ", "));
    }
    reduced[a] = true;
  }
  return reduced;
}

Array reduce_axes(const ReductionKernel::Impl& impl, const Queue& queue, const Resolved& r,
                  std::size_t d, const std::vector<bool>& reduced, const ReductionArgs& args,
                  const char* call) {
  AxesPlan p = plan_axes(impl, r, reduced);
  // Fewer programs: dimension counts rounded up to 2 or 4 with leading dimensions of size 1, which
  // the kernels skip (a branch the same for every thread).
  auto pad = [](std::vector<std::uint64_t>& sizes, std::vector<std::vector<std::uint64_t>>& strides) {
    const std::size_t n = sizes.size() <= 2 ? 2 : sizes.size() <= 4 ? 4 : sizes.size();
    const std::size_t extra = n - sizes.size();
    sizes.insert(sizes.begin(), extra, 1);
    for (auto& st : strides) st.insert(st.begin(), extra, 0);
  };
  pad(p.kept, p.kept_strides);
  pad(p.red, p.red_strides);
  Array y = output_for(args.out, queue, r.out_dtype, p.out_shape, d, call, impl.name());
  if (p.M == 0) return y;
  const std::size_t nk = p.kept.size(), nr = p.red.size();
  const std::size_t L = detail::codegen::group_size_for(queue.context());
  ProgramOptions options;
  options.name = impl.name();
  const std::string sig = fmt::format("red1|axes|k{}|r{}|L{}{}", nk, nr, L, r.types_sig);
  auto prog = detail::codegen::cached_program(
      impl.owner, queue.context(), sig,
      [&] {
        impl.built += 1;
        return axes_source(impl, r, L, nk, nr);
      },
      {impl.name() + "_axg", impl.name() + "_axt"}, options);
  detail::codegen::ArgPack pack;
  pack_inputs(pack, impl, r);
  pack.value(p.M);
  pack.value(p.N);
  for (auto v : p.kept) pack.value(v);
  for (auto v : p.red) pack.value(v);
  for (std::size_t j = 0; j < p.kept_strides.size(); ++j) {
    for (auto v : p.kept_strides[j]) pack.value(v);
    for (auto v : p.red_strides[j]) pack.value(v);
  }
  pack.array(y);
  const std::size_t Ld = prog->local_size[d];
  const std::uint64_t resident = prog->resident(impl.name() + "_axg", d);
  // Short reductions, or enough outputs to fill the device with threads: a thread per output.
  if (p.N < Ld || p.M >= resident * Ld) {
    const std::uint64_t groups = std::clamp<std::uint64_t>(ceil_div(p.M, Ld), 1,
                                                           prog->resident(impl.name() + "_axt", d));
    detail::codegen::launch(prog->kernel(impl.name() + "_axt"), queue, d, groups, Ld, pack);
  } else {
    const std::uint64_t groups = std::clamp<std::uint64_t>(p.M, 1, resident);
    detail::codegen::launch(prog->kernel(impl.name() + "_axg"), queue, d, groups, Ld, pack);
  }
  return y;
}

}  // namespace

// --- ReductionKernel ---------------------------------------------------------------------------

ReductionKernel::ReductionKernel(std::string_view in_params, std::string_view out_param,
                                 std::string map_expr, std::string reduce_expr, std::string identity,
                                 ReductionOptions options) {
  const std::string call = "ReductionKernel";
  detail::codegen::check_kernel_name(options.name, call);
  auto impl = std::make_shared<Impl>();
  impl->params = detail::codegen::parse_params(in_params, false, call, options.name);
  auto outs = detail::codegen::parse_params(out_param, true, call, options.name);
  if (outs.size() != 1 || outs[0].raw) {
    detail::raise_in(SKEIN_HERE, call, "Declare exactly one output, e.g. \"T y\".",
                     "kernel '{}': {} output parameter(s) in \"{}\"{}", options.name, outs.size(),
                     out_param, !outs.empty() && outs[0].raw ? " (a raw output)" : "");
  }
  impl->out = outs[0];
  auto all = impl->params;
  all.push_back(impl->out);
  detail::codegen::check_reserved(all, kReserved, call, options.name);
  if (options.reduce_type && options.reduce_struct) {
    detail::raise_in(SKEIN_HERE, call, "Set reduce_type or reduce_struct, not both.",
                     "kernel '{}': two reduce types given", options.name);
  }
  if (options.reduce_struct && options.reduce_struct->fields().empty()) {
    detail::raise_in(SKEIN_HERE, call, "Give the struct at least one field.",
                     "kernel '{}': the reduce struct is empty", options.name);
  }
  for (const auto* e : {&map_expr, &reduce_expr, &identity}) {
    if (e->find_first_not_of(" \t\r\n") == std::string::npos) {
      detail::raise_in(SKEIN_HERE, call, "Give the map, reduce and identity expressions.",
                       "kernel '{}': the {} expression is empty", options.name,
                       e == &map_expr ? "map" : e == &reduce_expr ? "reduce" : "identity");
    }
  }
  impl->map_expr = std::move(map_expr);
  impl->reduce_expr = std::move(reduce_expr);
  impl->identity = std::move(identity);
  impl->options = std::move(options);
  for (const auto& p : impl->params) {
    impl->what.push_back(fmt::format("argument '{}' of kernel '{}'", p.name, impl->options.name));
  }
  impl_ = std::move(impl);
}

const std::string& ReductionKernel::name() const { return impl_->name(); }
std::size_t ReductionKernel::programs_built() const { return impl_->built.load(); }

std::size_t ReductionKernel::record_capacity(std::uint64_t global_size) {
  return 2 * static_cast<std::size_t>(max_level(global_size)) + 1;
}

Dtype ReductionKernel::out_dtype(std::span<const Operand> inputs) const {
  // The dtypes alone decide it; no queue is needed to bind them.
  std::vector<detail::codegen::ParamDecl> all = impl_->params;
  all.push_back(impl_->out);
  const auto b = detail::codegen::bind_types(all, inputs, "ReductionKernel::out_dtype", impl_->name());
  return detail::codegen::param_dtype(impl_->out, b, "ReductionKernel::out_dtype", impl_->name());
}

Dtype ReductionKernel::partial_dtype(std::span<const Operand> inputs) const {
  if (impl_->options.reduce_struct) return Dtype::uint8;
  // The dtypes alone decide it; no queue is needed to bind them.
  std::vector<detail::codegen::ParamDecl> all = impl_->params;
  all.push_back(impl_->out);
  const auto b = detail::codegen::bind_types(all, inputs, "ReductionKernel::partial_dtype", impl_->name());
  const Dtype out = detail::codegen::param_dtype(impl_->out, b, "ReductionKernel::partial_dtype", impl_->name());
  return detail::codegen::compute_dtype(impl_->options.reduce_type.value_or(out));
}

std::size_t ReductionKernel::partial_size(std::span<const Operand> inputs) const {
  if (impl_->options.reduce_struct) return impl_->options.reduce_struct->itemsize();
  return itemsize(partial_dtype(inputs));
}

std::size_t ReductionKernel::record_size(std::span<const Operand> inputs) const {
  const std::size_t size = partial_size(inputs);
  const std::size_t align = impl_->options.reduce_struct ? impl_->options.reduce_struct->alignment() : size;
  const std::size_t ra = std::max<std::size_t>(8, align);
  return round_up(16 + size, ra);
}

namespace {

// Runs `launch`, the one-launch K_p1 counting in `counter`. Should it fail, the queue's counter is
// replaced by a fresh zeroed one for later calls: the error may come from an earlier kernel that
// stopped between its groups' tickets and the last group's reset (see detail::codegen::group_counter).
template <class Launch>
void with_counter(const Queue& queue, std::size_t device, const Buffer& counter, Launch&& launch) {
  try {
    launch();
  } catch (...) {
    detail::codegen::drop_group_counter(queue, device, counter);
    throw;
  }
}

// A whole-array reduction through a kept plan; nothing when none matches.
std::optional<Array> call_fast(const ReductionKernel::Impl& impl, const Queue& queue,
                               std::span<const Operand> inputs, const std::optional<Array>& out,
                               const detail::codegen::CallKey& key) {
  const auto plan = detail::codegen::find_plan(impl.fast_mutex, impl.fast_plans,
                                          detail::impl_of(queue.context()).get(), key);
  if (!plan) return std::nullopt;
  const auto program = plan->program.lock();  // the program (and so the context) still alive
  if (!program) return std::nullopt;
  detail::codegen::StackArgs pack;
  const std::size_t n_args = 2 * inputs.size() + plan->tail.size() + 8;
  if (!pack.fits(n_args, 2 * n_args + 2)) return std::nullopt;
  Array y = output_for(out, queue, plan->out_dtype, Shape{1}, plan->device, "ReductionKernel",
                       impl.name());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].is_array()) {
      pack.array(inputs[k].array());
    } else {
      std::array<std::byte, 16> bytes;
      pack.value_bytes(bytes.data(), inputs[k].bytes_into(plan->dtypes[k], bytes, impl.what[k]));
    }
  }
  for (std::uint64_t v : plan->tail) pack.value_bytes(reinterpret_cast<const std::byte*>(&v), 8);
  const std::int32_t finish = 1, partial = kPartials, alone = kAlone, last_group = kLastGroup;
  if (plan->groups == 1) {
    pack.array(y);
    pack.value_bytes(reinterpret_cast<const std::byte*>(&alone), 4);
    pack.array(y);
    pack.array(y);  // no counter
    detail::codegen::launch_generated(*plan->p1, queue, plan->device, 1, plan->local,
                             pack.view());
    count_finish(1, false);
    return y;
  }
  detail::codegen::Scratch scratch(queue, plan->device, plan->groups * plan->reduce_size);
  pack.buffer(scratch.buffer());
  if (plan->one_launch && !force_two_launches.load(std::memory_order_relaxed)) {
    const Buffer counter = detail::codegen::group_counter(queue, plan->device);
    pack.value_bytes(reinterpret_cast<const std::byte*>(&last_group), 4);
    pack.array(y);
    pack.buffer(counter);
    with_counter(queue, plan->device, counter, [&] {
      detail::codegen::launch_generated(*plan->p1, queue, plan->device, plan->groups, plan->local,
                               pack.view());
    });
    count_finish(plan->groups, true);
    return y;
  }
  pack.value_bytes(reinterpret_cast<const std::byte*>(&partial), 4);
  pack.buffer(scratch.buffer());
  pack.buffer(scratch.buffer());  // no counter
  detail::codegen::launch_generated(*plan->p1, queue, plan->device, plan->groups, plan->local,
                           pack.view());
  detail::codegen::StackArgs pack2;
  const std::uint64_t count = plan->groups;
  pack2.buffer(scratch.buffer());
  pack2.value_bytes(reinterpret_cast<const std::byte*>(&count), 8);
  pack2.value_bytes(reinterpret_cast<const std::byte*>(&finish), 4);
  pack2.buffer(scratch.buffer());
  pack2.array(y);
  detail::codegen::launch_generated(*plan->p2, queue, plan->device, 1, plan->local,
                           pack2.view());
  count_finish(plan->groups, false);
  return y;
}

// Keeps the plan of a whole-array reduction that went the full way.
void keep_plan(const ReductionKernel::Impl& impl, const Queue& queue, const Resolved& r,
               std::size_t d, const std::shared_ptr<const detail::codegen::CompiledProgram>& prog,
               std::size_t groups, bool one_launch, const detail::codegen::CallKey& key) {
  auto fast = std::make_shared<detail::red::FastPlan>();
  fast->key = key;
  fast->context = detail::impl_of(queue.context()).get();
  fast->program = prog;
  fast->p1 = &prog->kernel(impl.name() + "_p1");
  fast->p2 = &prog->kernel(impl.name() + "_p2");
  fast->device = d;
  fast->groups = groups;
  fast->local = prog->local_size[d];
  fast->reduce_size = r.reduce_size;
  fast->one_launch = one_launch;
  fast->out_dtype = r.out_dtype;
  fast->dtypes = r.dtypes;
  fast->tail = p1_tail(impl, queue, d, r);
  detail::codegen::keep_plan<detail::red::FastPlan>(impl.fast_mutex, impl.fast_plans,
                                               ReductionKernel::Impl::kFastPlans, std::move(fast));
}

}  // namespace

Array ReductionKernel::operator()(const Queue& queue, std::span<const Operand> inputs,
                                  const ReductionArgs& args) const {
  const auto& impl = *impl_;
  const char* call = "ReductionKernel";
  // Whole-array reductions with an array among the inputs go through the kept plans.
  detail::codegen::CallKey key;
  const bool keyed =
      !args.axis && args.axes.empty() && !args.deterministic &&
      std::any_of(inputs.begin(), inputs.end(), [](const Operand& o) { return o.is_array(); }) &&
      detail::codegen::make_key(inputs, key);
  if (keyed) {
    if (auto y = call_fast(impl, queue, inputs, args.out, key)) return *y;
  }
  const Resolved r = resolve(impl, queue, inputs, args.out, call);
  const std::size_t d = device_of(r, queue);
  if (args.axis || !args.axes.empty()) {
    if (args.deterministic) {
      detail::raise_in(SKEIN_HERE, call,
                       "Per-axis reductions are already deterministic on one device; drop "
                       "deterministic.",
                       "kernel '{}': deterministic mode is for whole-array reductions", impl.name());
    }
    const auto reduced = reduced_axes(impl, args, r.shape.size(), r.shape, call);
    if (r.shape.size() != 2 || reduced[0] == reduced[1]) return reduce_axes(impl, queue, r, d, reduced, args, call);
    const std::uint64_t R = r.shape[0], C = r.shape[1];
    const std::size_t axis = reduced[0] ? 0 : 1;
    Array y = output_for(args.out, queue, r.out_dtype, Shape{axis == 0 ? C : R}, d, call, impl.name());
    if (y.size() == 0) return y;
    auto prog = program_for(impl, queue.context(), r, Mode::axis);
    const std::size_t L = prog->local_size[d];
    detail::codegen::ArgPack pack;
    pack_inputs(pack, impl, r);
    pack.value(R);
    pack.value(C);
    // Byte strides of each non-raw input over the (R, C) shape (0 where broadcast).
    for (std::size_t k = 0; k < impl.params.size(); ++k) {
      if (r.layout_index[k] == npos) continue;
      const Array& a = r.args[k].array();
      const std::size_t lead = 2 - a.ndim();
      for (std::size_t dim = 0; dim < 2; ++dim) {
        std::uint64_t s = 0;
        if (dim >= lead && a.shape()[dim - lead] != 1) s = a.strides()[dim - lead];
        pack.value(s);
      }
    }
    if (axis == 1) {
      pack.array(y);
      const std::size_t groups = std::clamp<std::uint64_t>(R, 1, prog->resident(impl.name() + "_rows", d));
      detail::codegen::launch(prog->kernel(impl.name() + "_rows"), queue, d, groups, L, pack);
      return y;
    }
    const std::uint64_t ncb = ceil_div(C, L);
    const std::uint64_t resident = prog->resident(impl.name() + "_cols", d);
    std::uint64_t chunks = std::clamp<std::uint64_t>(resident / ncb, 1, std::max<std::uint64_t>(R / 16, 1));
    const std::uint64_t rpc = std::max<std::uint64_t>(ceil_div(R, chunks), 1);
    chunks = std::max<std::uint64_t>(ceil_div(R, rpc), 1);
    pack.value(rpc);
    pack.value(ncb);
    detail::codegen::Scratch scratch(queue, d, chunks * C * r.reduce_size);
    pack.buffer(scratch.buffer());
    detail::codegen::launch(prog->kernel(impl.name() + "_cols"), queue, d, ncb * chunks, L, pack);
    detail::codegen::ArgPack pack2;
    pack2.buffer(scratch.buffer());
    pack2.value(C);
    pack2.value(chunks);
    pack2.array(y);
    detail::codegen::launch(prog->kernel(impl.name() + "_cols2"), queue, d, ncb, L, pack2);
    return y;
  }
  Array y = output_for(args.out, queue, r.out_dtype, Shape{1}, d, call, impl.name());
  if (args.deterministic) {
    auto prog = program_for(impl, queue.context(), r, Mode::det);
    const std::size_t L = prog->local_size[d];
    ScratchLayout layout;
    const std::size_t recs_at = layout.add(record_capacity(r.n) * r.record_size);
    const std::size_t up_a = layout.add(up_bytes(r, L));
    const std::size_t up_b = layout.add(up_bytes(r, L));
    detail::codegen::Scratch scratch(queue, d, layout.total);
    enqueue_records(impl, queue, d, r, *prog, 0, r.n, scratch.buffer(), recs_at, scratch.buffer(), up_a, up_b);
    enqueue_combine(impl, queue, d, *prog, scratch.buffer(), recs_at, record_capacity(r.n), r.n, y);
    return y;
  }
  auto prog = program_for(impl, queue.context(), r, Mode::fast);
  const std::size_t groups = p1_groups(impl, r, *prog, d);
  const bool one_launch = one_launch_options(queue.context()).has_value();
  if (groups == 1) {
    enqueue_p1(impl, queue, d, r, *prog, y.data(), y.offset(), 1, &y);
    count_finish(1, false);
  } else if (one_launch && !force_two_launches.load(std::memory_order_relaxed)) {
    detail::codegen::Scratch scratch(queue, d, groups * r.reduce_size);
    const Buffer counter = detail::codegen::group_counter(queue, d);
    with_counter(queue, d, counter,
                 [&] { enqueue_p1(impl, queue, d, r, *prog, scratch.buffer(), 0, groups, &y, &counter); });
    count_finish(groups, true);
  } else {
    detail::codegen::Scratch scratch(queue, d, groups * r.reduce_size);
    enqueue_p1(impl, queue, d, r, *prog, scratch.buffer(), 0, groups);
    enqueue_p2(impl, queue, d, *prog, scratch.buffer(), 0, groups, true, scratch.buffer(), 0, &y);
    count_finish(groups, false);
  }
  if (keyed) keep_plan(impl, queue, r, d, prog, groups, one_launch, key);
  return y;
}

Array ReductionKernel::partial(const Queue& queue, std::span<const Operand> inputs,
                               const std::optional<Array>& out) const {
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::partial";
  const Resolved r = resolve(impl, queue, inputs, std::nullopt, call);
  const std::size_t d = device_of(r, queue);
  const Dtype pd = r.struct_reduce ? Dtype::uint8 : r.reduce_dtype;
  Array y = output_for(out, queue, pd, Shape{r.struct_reduce ? r.reduce_size : 1}, d, call, impl.name());
  auto prog = program_for(impl, queue.context(), r, Mode::fast);
  const std::size_t groups = p1_groups(impl, r, *prog, d);
  detail::codegen::Scratch scratch(queue, d, groups * r.reduce_size);
  enqueue_p1(impl, queue, d, r, *prog, scratch.buffer(), 0, groups);
  enqueue_p2(impl, queue, d, *prog, scratch.buffer(), 0, groups, false, y.data(), y.offset(), nullptr);
  return y;
}

Array ReductionKernel::finish(const Queue& queue, std::span<const Operand> inputs,
                              const Array& partials, const std::optional<Array>& out) const {
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::finish";
  Resolved r = resolve(impl, queue, inputs, out, call);
  const Dtype pd = r.struct_reduce ? Dtype::uint8 : r.reduce_dtype;
  if (partials.dtype() != pd || !partials.is_contiguous() ||
      (r.struct_reduce && partials.size() % r.reduce_size != 0)) {
    detail::raise_in(SKEIN_HERE, call, "Pass partial values as partial() makes them.",
                     "kernel '{}': the partials are a {} array of shape {}; partial values are {}{}",
                     impl.name(), skein::name(partials.dtype()), to_string(partials.shape()), skein::name(pd),
                     r.struct_reduce ? fmt::format(" x {} bytes each", r.reduce_size) : "");
  }
  if (partials.data().context_id() != detail::impl_of(queue.context()).get()) {
    detail::raise_in(SKEIN_HERE, call, "Use partials of the queue's context.",
                     "kernel '{}': the partials belong to another context", impl.name());
  }
  const std::size_t d = partials.device_idx();
  if (!queue.has_device(d)) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that contains the partials' device.",
                     "kernel '{}': the partials are on device {}, which is not in the queue", impl.name(), d);
  }
  const std::uint64_t count = r.struct_reduce ? partials.size() / r.reduce_size : partials.size();
  Array y = output_for(out, queue, r.out_dtype, Shape{1}, d, call, impl.name());
  auto prog = program_for(impl, queue.context(), r, Mode::fast);
  enqueue_p2(impl, queue, d, *prog, partials.data(), partials.offset(), count, true, partials.data(),
             partials.offset(), &y);
  return y;
}

Array ReductionKernel::records(const Queue& queue, std::span<const Operand> inputs,
                               std::uint64_t global_offset, std::uint64_t global_size,
                               const std::optional<Array>& out) const {
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::records";
  const Resolved r = resolve(impl, queue, inputs, std::nullopt, call);
  if (global_offset > global_size || r.n > global_size - global_offset) {
    detail::raise_in(SKEIN_HERE, call, "The piece must lie inside the global range.",
                     "kernel '{}': a piece of {} elements at offset {} does not fit in {} elements",
                     impl.name(), r.n, global_offset, global_size);
  }
  const std::size_t d = device_of(r, queue);
  const std::size_t bytes = record_capacity(global_size) * r.record_size;
  Array recs = output_for(out, queue, Dtype::uint8, Shape{bytes}, d, call, impl.name());
  auto prog = program_for(impl, queue.context(), r, Mode::det);
  const std::size_t L = prog->local_size[d];
  ScratchLayout layout;
  const std::size_t up_a = layout.add(up_bytes(r, L));
  const std::size_t up_b = layout.add(up_bytes(r, L));
  detail::codegen::Scratch scratch(queue, d, layout.total);
  enqueue_records(impl, queue, d, r, *prog, global_offset, global_size, recs.data(), recs.offset(),
                  scratch.buffer(), up_a, up_b);
  return recs;
}

Array ReductionKernel::combine(const Queue& queue, std::span<const Operand> inputs,
                               const Array& records, std::uint64_t global_size,
                               const std::optional<Array>& out) const {
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::combine";
  const Resolved r = resolve(impl, queue, inputs, out, call);
  if (records.dtype() != Dtype::uint8 || !records.is_contiguous() ||
      records.nbytes() % r.record_size != 0) {
    detail::raise_in(SKEIN_HERE, call, "Pass records as records() makes them (uint8, whole records).",
                     "kernel '{}': the records are a {} array of {} bytes; a record has {} bytes",
                     impl.name(), skein::name(records.dtype()), records.nbytes(), r.record_size);
  }
  if (records.data().context_id() != detail::impl_of(queue.context()).get()) {
    detail::raise_in(SKEIN_HERE, call, "Use records of the queue's context.",
                     "kernel '{}': the records belong to another context", impl.name());
  }
  const std::size_t d = records.device_idx();
  if (!queue.has_device(d)) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that contains the records' device.",
                     "kernel '{}': the records are on device {}, which is not in the queue", impl.name(), d);
  }
  Array y = output_for(out, queue, r.out_dtype, Shape{1}, d, call, impl.name());
  auto prog = program_for(impl, queue.context(), r, Mode::det);
  enqueue_combine(impl, queue, d, *prog, records.data(), records.offset(), records.nbytes() / r.record_size,
                  global_size, y);
  return y;
}

Array ReductionKernel::per_device(const Queue& queue, const MultiDevice<std::vector<Operand>>& inputs,
                                  const ReductionArgs& args) const {
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::per_device";
  if (args.axis || !args.axes.empty()) {
    detail::raise_in(SKEIN_HERE, call, "Reduce per axis on each device with operator().",
                     "kernel '{}': per_device reduces whole arrays", impl.name());
  }
  const auto& devs = queue.device_idxs();
  std::vector<Resolved> rs;
  std::uint64_t total = 0;
  for (std::size_t d : devs) {
    rs.push_back(resolve(impl, queue, inputs[d], std::nullopt, call, d));
    rs.back().device = d;
    total += rs.back().n;
    if (rs.back().types_sig != rs.front().types_sig) {
      detail::raise_in(SKEIN_HERE, call, "Give every device inputs of the same dtypes and kinds.",
                       "kernel '{}': device {} has inputs {}, device {} has {}", impl.name(), devs.front(),
                       rs.front().types_sig, d, rs.back().types_sig);
    }
  }
  const std::size_t first = devs.front();
  Array y = output_for(args.out, queue, rs.front().out_dtype, Shape{1}, first, call, impl.name());
  const Mode mode = args.deterministic ? Mode::det : Mode::fast;
  std::vector<std::shared_ptr<const detail::codegen::CompiledProgram>> progs;
  for (const auto& r : rs) progs.push_back(program_for(impl, queue.context(), r, mode));
  const std::size_t per = args.deterministic ? record_capacity(total) * rs.front().record_size
                                             : rs.front().reduce_size;
  std::vector<ScratchLayout> layouts(devs.size());
  std::vector<std::size_t> own_at(devs.size()), up_a(devs.size()), up_b(devs.size()), groups(devs.size());
  std::size_t gather_at = 0;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const std::size_t d = devs[i];
    const std::size_t L = progs[i]->local_size[d];
    if (args.deterministic) {
      own_at[i] = layouts[i].add(per);
      up_a[i] = layouts[i].add(up_bytes(rs[i], L));
      up_b[i] = layouts[i].add(up_bytes(rs[i], L));
    } else {
      groups[i] = p1_groups(impl, rs[i], *progs[i], d);
      up_a[i] = layouts[i].add(groups[i] * rs[i].reduce_size);
      own_at[i] = layouts[i].add(per);
    }
    if (i == 0) gather_at = layouts[i].add(per * devs.size());
  }
  std::vector<std::optional<detail::codegen::Scratch>> scratch(devs.size());
  for (std::size_t i = 0; i < devs.size(); ++i) scratch[i].emplace(queue, devs[i], layouts[i].total);

  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const std::size_t d = devs[i];
    const Buffer& buf = scratch[i]->buffer();
    if (args.deterministic) {
      enqueue_records(impl, queue, d, rs[i], *progs[i], offset, total, buf, own_at[i], buf, up_a[i], up_b[i]);
    } else {
      enqueue_p1(impl, queue, d, rs[i], *progs[i], buf, up_a[i], groups[i]);
      enqueue_p2(impl, queue, d, *progs[i], buf, up_a[i], groups[i], false, buf, own_at[i], nullptr);
    }
    offset += rs[i].n;
  }
  // Bring every device's values to the first device, in device order.
  const Buffer& gather = scratch[0]->buffer();
  for (std::size_t i = 0; i < devs.size(); ++i) {
    gather.get_sub_region(gather_at + i * per, per)
        .set(queue, scratch[i]->buffer().get_sub_region(own_at[i], per));
    // The source device's later work must not overwrite its scratch before the copy has read it.
    if (devs[i] != first) queue.device_queue(devs[i]).wait_for_queue(queue.device_queue(first));
  }
  if (args.deterministic) {
    enqueue_combine(impl, queue, first, *progs[0], gather, gather_at, record_capacity(total) * devs.size(), total, y);
  } else {
    enqueue_p2(impl, queue, first, *progs[0], gather, gather_at, devs.size(), true, gather, gather_at, &y);
  }
  return y;
}

std::string ReductionKernel::source(const Queue& queue, std::span<const Operand> inputs) const {
  const Resolved r = resolve(*impl_, queue, inputs, std::nullopt, "ReductionKernel::source");
  const std::size_t L = detail::codegen::group_size_for(queue.context());
  const bool one_launch = one_launch_options(queue.context()).has_value();
  return fast_source(*impl_, r, L, one_launch) + "\n" + det_source(*impl_, r, L) + "\n" +
         axis_source(*impl_, r, L);
}

namespace detail::red {

void set_finish_for_tests(Finish finish) {
  force_two_launches.store(finish == Finish::two_launches);
  count_finishes.store(true);
}

FinishCounts finish_counts() {
  return {finished_one_group.load(), finished_one_launch.load(), finished_two_launches.load(),
          finished_last_groups.load()};
}

bool one_launch_supported(const Queue& queue) { return one_launch_options(queue.context()).has_value(); }

std::uintptr_t group_counter_id(const Queue& queue, std::size_t device_idx) {
  return codegen::group_counter(queue, device_idx).adapter()->native();
}

std::string fast_source_for_tests(const ReductionKernel& kernel, const Queue& queue,
                                  std::span<const Operand> inputs, bool one_launch) {
  const auto& impl = *impl_of(kernel);
  const Resolved r = resolve(impl, queue, inputs, std::nullopt, "fast_source_for_tests");
  return fast_source(impl, r, codegen::group_size_for(queue.context()), one_launch);
}

}  // namespace detail::red

void detail::raise_not_one_element(const Array& result) {
  detail::raise_in(SKEIN_HERE, "skein::reduction_value", "Pass a whole-array reduction's result.",
                   "the array has shape {} ({} elements), not one element", to_string(result.shape()),
                   result.size());
}

std::vector<ReductionNode> reduction_nodes(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  if (offset > total || size > total - offset) {
    detail::raise_in(SKEIN_HERE, "skein::reduction_nodes", "The piece must lie inside [0, total).",
                     "a piece of {} elements at offset {} does not fit in {}", size, offset, total);
  }
  std::vector<ReductionNode> out;
  const std::uint64_t a = offset, b = offset + size, N = total;
  const std::uint32_t lmax = max_level(N);
  auto full = [&](std::uint64_t p, std::uint32_t lev) {
    if (p < a || p >= N) return false;
    const std::uint64_t end = lev >= 63 ? N : p + (std::uint64_t{1} << lev);
    return std::min(end, N) <= b;
  };
  std::uint64_t p = a;
  while (p < b) {
    std::uint32_t lev = 0;
    while (lev < lmax && (p >> (lev + 1) << (lev + 1)) == p && full(p, lev + 1)) ++lev;
    out.push_back({p, lev});
    const std::uint64_t end = p + (std::uint64_t{1} << lev);
    p = std::min(end, N);
  }
  return out;
}

// --- built-ins ---------------------------------------------------------------------------------

namespace {

// Keyed by detail::codegen::builtin_key (the operation and its dtypes).
using detail::codegen::builtin_key;

template <class Make>
const ReductionKernel& builtin(std::uint64_t key, Make&& make) {
  static std::mutex mutex;
  static auto* kernels = new std::unordered_map<std::uint64_t, std::unique_ptr<ReductionKernel>>;
  std::lock_guard lock(mutex);
  auto& slot = (*kernels)[key];
  if (!slot) slot = std::make_unique<ReductionKernel>(make());
  return *slot;
}

std::string make_complex(Dtype d) { return "skein_make_" + ctype(d).substr(6); }

// Infinities on both backends (NVRTC has no INFINITY without headers).
const char* kInfinityPreamble = R"(#ifdef CUDA
#define SKEIN_INFINITY_F __int_as_float(0x7f800000)
#define SKEIN_INFINITY_D __longlong_as_double(0x7ff0000000000000LL)
#else
#define SKEIN_INFINITY_F INFINITY
#define SKEIN_INFINITY_D ((double)INFINITY)
#endif
)";

std::string infinity(Dtype d, bool negative) {
  const char* inf = d == Dtype::float64 ? "SKEIN_INFINITY_D" : "SKEIN_INFINITY_F";
  return negative ? fmt::format("(-{})", inf) : inf;
}

std::string int_limit(Dtype d, bool max) {
  return visit_dtype(d, [&](auto t) -> std::string {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>) {
      if (max) return fmt::format("(({}){}{})", ctype(d), std::numeric_limits<T>::max(), std::is_signed_v<T> ? "LL" : "ULL");
      if (std::is_signed_v<T>) {
        // -MAX - 1: the literal of the minimum itself does not exist in C.
        return fmt::format("(({})(-{}LL - 1))", ctype(d), std::numeric_limits<T>::max());
      }
      return fmt::format("(({})0)", ctype(d));
    } else {
      return "0";
    }
  });
}

void require_real(Dtype d, const char* fn) {
  if (is_complex(d)) {
    detail::raise_in(SKEIN_HERE, fn, "Reduce the real or imaginary parts, or the magnitudes.",
                     "{} of {} is not defined (complex numbers are not ordered)", fn, name(d));
  }
}

}  // namespace

Dtype sum_dtype(Dtype x) {
  if (is_integer(x)) return is_signed(x) ? Dtype::int64 : Dtype::uint64;
  return x;
}

Dtype nrm2_dtype(Dtype x) {
  switch (x) {
    case Dtype::float16: case Dtype::bfloat16: case Dtype::float32: case Dtype::float64: return x;
    case Dtype::complex64: return Dtype::float32;
    case Dtype::complex128: return Dtype::float64;
    default: return Dtype::float64;
  }
}

const ReductionKernel& sum_kernel(Dtype x) {
  return builtin(builtin_key(1, x), [&] {
    const Dtype o = sum_dtype(x);
    ReductionOptions opt{.name = "skein_sum"};
    std::string reduce = "a + b", identity = "0";
    if (is_complex(o)) {
      reduce = fmt::format("{}(a.re + b.re, a.im + b.im)", make_complex(o));
      identity = fmt::format("{}(0, 0)", make_complex(o));
    }
    return ReductionKernel(fmt::format("{} x", name(x)), fmt::format("{} y", name(o)),
                           is_complex(o) ? "x" : fmt::format("(reduce_t)x"), reduce, identity, opt);
  });
}

const ReductionKernel& min_kernel(Dtype x) {
  require_real(x, "skein::min");
  return builtin(builtin_key(2, x), [&] {
    const bool f = !is_integer(x);
    const Dtype c = detail::codegen::compute_dtype(x);
    return ReductionKernel(fmt::format("{} x", name(x)), fmt::format("{} y", name(x)), "x",
                           f ? "(a != a || a <= b) ? a : b" : "a <= b ? a : b",
                           f ? infinity(c, false) : int_limit(x, true),
                           {.preamble = kInfinityPreamble, .name = "skein_min"});
  });
}

const ReductionKernel& max_kernel(Dtype x) {
  require_real(x, "skein::max");
  return builtin(builtin_key(3, x), [&] {
    const bool f = !is_integer(x);
    const Dtype c = detail::codegen::compute_dtype(x);
    return ReductionKernel(fmt::format("{} x", name(x)), fmt::format("{} y", name(x)), "x",
                           f ? "(a != a || a >= b) ? a : b" : "a >= b ? a : b",
                           f ? infinity(c, true) : int_limit(x, false),
                           {.preamble = kInfinityPreamble, .name = "skein_max"});
  });
}

const ReductionKernel& dot_kernel(Dtype x, Dtype y) {
  return builtin(builtin_key(4, x, y), [&] {
    const Dtype r = promote_types(x, y);
    const std::string cx = detail::codegen::convert_value(x, r, "x"), cy = detail::codegen::convert_value(y, r, "y");
    std::string map, reduce = "a + b", identity = "0";
    if (is_complex(r)) {
      const std::string m = make_complex(r);
      map = fmt::format("{0}(({1}).re * ({2}).re - ({1}).im * ({2}).im, ({1}).re * ({2}).im + ({1}).im * ({2}).re)", m, cx, cy);
      reduce = fmt::format("{}(a.re + b.re, a.im + b.im)", m);
      identity = fmt::format("{}(0, 0)", m);
    } else if (is_integer(r)) {
      const std::string u = itemsize(r) == 8 ? "uint64_t" : "uint32_t";
      map = fmt::format("(reduce_t)(({0}){1} * ({0}){2})", u, cx, cy);
      reduce = fmt::format("(reduce_t)(({0})a + ({0})b)", u);
    } else {
      map = fmt::format("(reduce_t)({} * {})", cx, cy);
    }
    return ReductionKernel(fmt::format("{} x, {} y", name(x), name(y)), fmt::format("{} z", name(r)), map,
                           reduce, identity, {.name = "skein_dot"});
  });
}

const ReductionKernel& nrm2_kernel(Dtype x) {
  return builtin(builtin_key(5, x), [&] {
    const Dtype o = nrm2_dtype(x);
    const bool wide = x == Dtype::float16 || x == Dtype::bfloat16 || x == Dtype::float32 ||
                      x == Dtype::complex64;
    if (wide) {
      // Squares of float32 values in float64: no overflow, no underflow, one rounding at the end.
      const std::string map = is_complex(x) ? "(double)x.re * (double)x.re + (double)x.im * (double)x.im"
                                            : "(double)x * (double)x";
      return ReductionKernel(fmt::format("{} x", name(x)), fmt::format("{} y", name(o)), map, "a + b", "0.0",
                             {.post_map = "y = (float)sqrt(a)", .reduce_type = Dtype::float64,
                              .name = "skein_nrm2"});
    }
    // A (scale, sum of squares) pair: value = scale * sqrt(ssq), with every |x| <= scale.
    StructType pair{{"scale", Dtype::float64}, {"ssq", Dtype::float64}};
    const std::string preamble = R"(WITHIN_KERNEL INLINE reduce_t skein_nrm2_pair(double scale, double ssq)
{
    reduce_t r;
    r.scale = scale;
    r.ssq = ssq;
    return r;
}
WITHIN_KERNEL INLINE reduce_t skein_nrm2_join(reduce_t p, reduce_t q)
{
    if (!(p.scale >= q.scale)) { reduce_t t = p; p = q; q = t; }
    if (p.scale == 0.0) return p;
    const double ratio = (q.scale == p.scale) ? 1.0 : q.scale / p.scale;
    return skein_nrm2_pair(p.scale, p.ssq + q.ssq * ratio * ratio);
}
WITHIN_KERNEL INLINE reduce_t skein_nrm2_of(double v)
{
    const double m = fabs(v);
    return skein_nrm2_pair(m, m == 0.0 ? 0.0 : 1.0);
}
)";
    const std::string map = is_complex(x) ? "skein_nrm2_join(skein_nrm2_of(x.re), skein_nrm2_of(x.im))"
                                          : "skein_nrm2_of((double)x)";
    return ReductionKernel(fmt::format("{} x", name(x)), fmt::format("{} y", name(o)), map,
                           "skein_nrm2_join(a, b)", "skein_nrm2_pair(0.0, 0.0)",
                           {.post_map = "y = a.scale * sqrt(a.ssq)", .reduce_struct = pair,
                            .preamble = preamble, .name = "skein_nrm2"});
  });
}

Array sum(const Queue& queue, const Array& x, const ReductionArgs& args) {
  return sum_kernel(x.dtype())(queue, {x}, args);
}

namespace {
// As NumPy: an error when any reduced axis (every axis without axis/axes) has no element.
void require_nonempty(const Array& x, const ReductionArgs& args, const char* fn) {
  std::vector<std::size_t> axes = args.axis ? std::vector<std::size_t>{*args.axis} : args.axes;
  const bool per_axis = !axes.empty();
  bool empty = !per_axis && x.size() == 0;
  for (std::size_t a : axes) empty |= a < x.ndim() && x.shape()[a] == 0;
  if (empty) {
    detail::raise_in(SKEIN_HERE, fn, "Reduce a non-empty array (min and max have no identity).",
                     "{} of an empty array{} (shape {})", fn,
                     per_axis ? fmt::format(" along axes ({})", fmt::join(axes, ", ")) : std::string(),
                     to_string(x.shape()));
  }
}
}  // namespace

Array min(const Queue& queue, const Array& x, const ReductionArgs& args) {
  require_nonempty(x, args, "skein::min");
  return min_kernel(x.dtype())(queue, {x}, args);
}

Array max(const Queue& queue, const Array& x, const ReductionArgs& args) {
  require_nonempty(x, args, "skein::max");
  return max_kernel(x.dtype())(queue, {x}, args);
}

Array dot(const Queue& queue, const Array& x, const Array& y, const ReductionArgs& args) {
  return dot_kernel(x.dtype(), y.dtype())(queue, {x, y}, args);
}

Array nrm2(const Queue& queue, const Array& x, const ReductionArgs& args) {
  return nrm2_kernel(x.dtype())(queue, {x}, args);
}

}  // namespace skein
