// SPDX-License-Identifier: BSD-3-Clause
// The fast whole-array program of a ReductionKernel: K_p1 reduces the elements to one partial
// value per group (contiguous inputs in 16-byte chunks, the unaligned head and the tail element by
// element; other layouts by their strides), K_p2 reduces partial values in one group. With the
// one-launch code, the last group of K_p1 to finish reduces the partial values as K_p2 would.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/types.hpp"
#include "reduction_impl.hpp"
#include "skein/ctypes.hpp"
#include "skein/template.hpp"

namespace skein::detail::red {

namespace {

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

// K_p1's signature and the top of its body, up to its accumulator: the inputs, the size and the
// layout's values, the partial values' array, and what the groups do at the end (_skein_finish,
// a P1Finish: the result goes post-mapped into _y; _cnt is the group counter of kLastGroup,
// codegen::group_counter).
std::string p1_head(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L,
                    bool one_launch) {
  const std::string& k = impl.name();
  const bool contiguous = r.layout.contiguous;
  std::string src;
  if (contiguous) {
    for (std::size_t j = 0; j < impl.params.size(); ++j) {
      if (r.layout_index[j] == npos) continue;
      src += fmt::format("typedef union {{ uint4 v[{}]; {} e[{}]; }} _skein_vec_{}_{};\n",
                         r.W * itemsize(r.dtypes[j]) / 16, ctype(r.dtypes[j]), r.W, k,
                         impl.params[j].name);
    }
  }
  auto params = input_params(impl, r);
  params.emplace_back("const uint64_t _skein_n");
  if (contiguous) {
    params.emplace_back("const uint64_t _skein_head");
    params.emplace_back("const uint64_t _skein_nchunks");
  } else {
    for (auto& p : strided_params(r)) params.push_back(p);
  }
  params.push_back(codegen::array_param("_part"));
  params.emplace_back("const int _skein_finish");
  params.push_back(codegen::array_param("_y"));
  params.push_back(codegen::array_param("_cnt"));
  src += fmt::format("KERNEL void {}_p1({})\n{{\n", k, fmt::join(params, ",\n    "));
  src += fmt::format("    LOCAL_MEM reduce_t _skein_sd[{}];\n", L);
  if (one_launch) src += "    LOCAL_MEM int _skein_last;\n";
  src += input_setup(impl, r, !contiguous);
  src += "    const VSIZE_T _skein_tid = get_global_id(0);\n";
  src += "    const VSIZE_T _skein_nth = get_global_size(0);\n";
  src += "    const unsigned int _skein_lid = get_local_id(0);\n";
  src += fmt::format("    reduce_t _skein_acc = {}_identity();\n", k);
  return src;
}

// K_p1's loop over 16-byte chunks (contiguous inputs): U chunks of W elements per thread and
// iteration, every load issued before the first element is mapped.
std::string p1_vector_loop(const ReductionKernel::Impl& impl, const Resolved& r) {
  const std::string& k = impl.name();
  const std::size_t W = r.W, U = r.U;
  std::string src = fmt::format(
      "    for (VSIZE_T _skein_c = _skein_tid; _skein_c < _skein_nchunks; _skein_c += _skein_nth * "
      "{}) {{\n",
      U);
  for (std::size_t u = 0; u < U; ++u) {
    src += fmt::format("        const VSIZE_T _skein_c{0} = _skein_c + {0} * _skein_nth;\n", u);
  }
  for (std::size_t j = 0; j < impl.params.size(); ++j) {
    if (r.layout_index[j] == npos) continue;
    const auto& nm = impl.params[j].name;
    const std::size_t V = W * itemsize(r.dtypes[j]) / 16;
    src += fmt::format(
        "        GLOBAL_MEM const uint4* _skein_w_{0} = (GLOBAL_MEM const uint4*)(_skein_p_{0} + "
        "_skein_head);\n",
        nm);
    for (std::size_t u = 0; u < U; ++u) {
      src += fmt::format("        _skein_vec_{}_{} _skein_x_{}_{};\n", k, nm, nm, u);
      src += fmt::format("        if (_skein_c{} < _skein_nchunks) {{\n", u);
      for (std::size_t v = 0; v < V; ++v) {
        src += fmt::format(
            "            _skein_x_{0}_{1}.v[{2}] = _skein_w_{0}[_skein_c{1} * {3} + {2}];\n", nm, u,
            v, V);
      }
      src += "        }\n";
    }
  }
  for (std::size_t u = 0; u < U; ++u) {
    src += fmt::format("        if (_skein_c{} < _skein_nchunks) {{\n", u);
    for (std::size_t e = 0; e < W; ++e) {
      src += fmt::format(
          "            _skein_acc = {}_reduce(_skein_acc, {});\n", k,
          map_call(impl, r, fmt::format("_skein_head + _skein_c{} * {} + {}", u, W, e),
                   [&](std::size_t j) {
                     return fmt::format("_skein_x_{}_{}.e[{}]", impl.params[j].name, u, e);
                   }));
    }
    src += "        }\n";
  }
  src += "    }\n";
  return src;
}

// K_p1's loops element by element: the unaligned head and the tail of the contiguous path, or
// every element of the strided one.
std::string p1_element_loop(const ReductionKernel::Impl& impl, const Resolved& r) {
  const std::string& k = impl.name();
  std::string src;
  if (r.layout.contiguous) {
    src += fmt::format("    const VSIZE_T _skein_tail = _skein_head + _skein_nchunks * {};\n", r.W);
    src += "    const VSIZE_T _skein_ns = _skein_head + (_skein_n - _skein_tail);\n";
    src +=
        "    for (VSIZE_T _skein_t = _skein_tid; _skein_t < _skein_ns; _skein_t += _skein_nth) {\n";
    src +=
        "        const VSIZE_T _skein_i = _skein_t < _skein_head ? _skein_t : _skein_tail + "
        "(_skein_t - _skein_head);\n";
    src += fmt::format("        _skein_acc = {}_reduce(_skein_acc, {});\n", k,
                       map_call(impl, r, "_skein_i", [&](std::size_t j) {
                         return fmt::format("_skein_p_{}[_skein_i]", impl.params[j].name);
                       }));
    src += "    }\n";
  } else {
    src +=
        "    for (VSIZE_T _skein_t = _skein_tid; _skein_t < _skein_n; _skein_t += _skein_nth) {\n";
    src += strided_offsets(r, "_skein_t", "        ");
    src += fmt::format("        _skein_acc = {}_reduce(_skein_acc, {});\n", k,
                       map_call(impl, r, "_skein_t", [&](std::size_t j) {
                         return strided_element(r, j, impl.params[j].name);
                       }));
    src += "    }\n";
  }
  return src;
}

// The end of K_p1: the group's value reduced and written as _skein_finish says.
std::string p1_finish(const std::string& k, std::size_t L, bool one_launch) {
  std::string src = "    _skein_sd[_skein_lid] = _skein_acc;\n";
  src += block_reduce_any(k, L);
  src += "    if (_skein_lid == 0) {\n";
  src += fmt::format(
      "        if (_skein_finish == 1) {}_finish(_skein_sd[0], _skein_b__y, _skein_o__y, 0);\n", k);
  src +=
      "        else ((GLOBAL_MEM reduce_t*)(_skein_b__part + _skein_o__part))[get_group_id(0)] = "
      "_skein_sd[0];\n";
  src += "    }\n";
  if (one_launch) {
    // The last group to take a ticket reduces every group's partial value exactly as K_p2 does
    // (same loop, same tree), so that both paths give the same bits; then it resets the counter
    // for the queue's next call.
    src += "    if (_skein_finish == 2) {\n";
    src += fmt::format(
        "        if (_skein_lid == 0) _skein_last = (VSIZE_T){}_ticket(_skein_b__cnt + "
        "_skein_o__cnt) == "
        "(VSIZE_T)get_num_groups(0) - 1;\n",
        k);
    src += "        SKEIN_GROUP_SYNC;\n";
    src += "        if (_skein_last) {\n";
    src += fmt::format("            {}_acquire();\n", k);
    src += "            GLOBAL_MEM const char* _skein_in = _skein_b__part + _skein_o__part;\n";
    src += "            const VSIZE_T _skein_count = get_num_groups(0);\n";
    src += combine_partials(k, L, "_skein_acc2", k + "_load_part(_skein_in, _skein_t)",
                            "            ");
    src += "            if (_skein_lid == 0) {\n";
    src +=
        fmt::format("                {}_finish(_skein_sd[0], _skein_b__y, _skein_o__y, 0);\n", k);
    src += fmt::format("                {}_reset(_skein_b__cnt + _skein_o__cnt);\n", k);
    src += "            }\n        }\n    }\n";
  }
  src += "}\n";
  return src;
}

// K_p2: one group reduces `count` partial values; writes the result as a partial value or, with
// `finish`, post-mapped into the output.
std::string p2_kernel(const std::string& k, std::size_t L) {
  std::string src = fmt::format(
      "KERNEL void {0}_p2({1}, const uint64_t _skein_count, const int _skein_finish, {2}, "
      "{3})\n{{\n",
      k, codegen::array_param("_in"), codegen::array_param("_part"), codegen::array_param("_y"));
  src += fmt::format("    LOCAL_MEM reduce_t _skein_sd[{}];\n", L);
  src +=
      "    GLOBAL_MEM const reduce_t* _skein_in = (GLOBAL_MEM const reduce_t*)(_skein_b__in + "
      "_skein_o__in);\n";
  src += "    const unsigned int _skein_lid = get_local_id(0);\n";
  src += combine_partials(k, L, "_skein_acc", "_skein_in[_skein_t]", "    ");
  src += "    if (_skein_lid == 0) {\n";
  src += fmt::format(
      "        if (_skein_finish) {}_finish(_skein_sd[0], _skein_b__y, _skein_o__y, 0);\n", k);
  src += "        else *(GLOBAL_MEM reduce_t*)(_skein_b__part + _skein_o__part) = _skein_sd[0];\n";
  src += "    }\n}\n";
  return src;
}

}  // namespace

std::string fast_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L,
                        bool one_launch) {
  const std::string& k = impl.name();
  std::string src = common_source(impl, r, false);
  if (one_launch) src += last_group_helpers(k, r);
  src += p1_head(impl, r, L, one_launch);
  if (r.layout.contiguous) {
    const bool any_vector = std::any_of(r.layout_index.begin(), r.layout_index.end(),
                                        [](std::size_t j) { return j != npos; });
    if (any_vector) src += p1_vector_loop(impl, r);
  }
  src += p1_element_loop(impl, r);
  src += p1_finish(k, L, one_launch);
  src += p2_kernel(k, L);
  return render(src, impl.options.globals, k);
}

}  // namespace skein::detail::red
