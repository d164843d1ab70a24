// SPDX-License-Identifier: BSD-3-Clause
// The deterministic whole-array program of a ReductionKernel: a canonical pairwise tree over the
// elements' global indices (see reduction.hpp), so that a split array gives the same bits
// whatever the split. K_dleaf reduces tiles of elements, K_dmid tiles of the values a previous
// pass handed up; both emit a record for each node of the tree that is maximal inside the piece,
// and K_dcombine merges the records in global order into the result.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/types.hpp"
#include "reduction_impl.hpp"
#include "skein/ctypes.hpp"
#include "skein/template.hpp"

namespace skein::detail::red {

namespace {

// Records a combine kernel can stack (levels only decrease along the stack, so 2 x 64 suffice).
constexpr int kStack = 132;

// The pairwise combine of two sibling nodes of a tile that may not lie wholly inside the piece,
// emitting the children that are maximal inside it (see reduction.hpp).
std::string det_helpers(const std::string& k, const Resolved& r) {
  const std::size_t ra = std::max<std::size_t>(8, r.reduce_align);
  return fmt::format(
      R"(typedef struct ALIGN({1}) {{ uint64_t start; uint32_t level; uint32_t valid; reduce_t value; }} {0}_rec;

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
  for (const char* p : {"const uint64_t _skein_a", "const uint64_t _skein_bnd",
                        "const uint64_t _skein_N", "const uint64_t _skein_tile0"}) {
    params.emplace_back(p);
  }
  params.push_back(codegen::array_param("_up"));
  params.emplace_back("const uint64_t _skein_up0");
  params.emplace_back("const uint32_t _skein_pass_up");
  params.push_back(codegen::array_param("_recs"));
  params.emplace_back("const uint32_t _skein_lmax");
  params.emplace_back("const uint32_t _skein_lbase");
  std::string src =
      fmt::format("KERNEL void {}({})\n{{\n", kernel_name, fmt::join(params, ",\n    "));
  src += fmt::format("    LOCAL_MEM reduce_t _skein_sd[{}];\n", U * L);
  src += setup;
  src += fmt::format(
      "    GLOBAL_MEM {0}_rec* _skein_recs = (GLOBAL_MEM {0}_rec*)(_skein_b__recs + "
      "_skein_o__recs);\n",
      k);
  src += "    const unsigned int _skein_lid = get_local_id(0);\n";
  src += "    const uint64_t _skein_j = _skein_tile0 + get_group_id(0);\n";
  src += fmt::format("    const uint64_t _skein_T = _skein_j << {};\n", s);
  src += fmt::format(
      "    const int _skein_interior = _skein_T >= _skein_a && _skein_T + {} <= _skein_bnd;\n",
      std::uint64_t{1} << s);
  src += "#define _SKEIN_CHK(l, r, p, lev) " + k +
         "_chk((l), (r), (p), (lev), _skein_a, _skein_bnd, _skein_N, _skein_recs, _skein_lbase, "
         "_skein_lmax)\n";
  for (std::size_t u = 0; u < U; ++u) {
    src += fmt::format("    reduce_t _skein_leaf{};\n", u);
  }
  for (int interior = 1; interior >= 0; --interior) {
    src += interior ? "    if (_skein_interior) {\n" : "    else {\n";
    for (std::size_t u = 0; u < U; ++u) {
      src += fmt::format(
          "        {{\n            const uint64_t _skein_P{0} = _skein_T + {1} + "
          "(uint64_t)_skein_lid * {2};\n",
          u, u * L * W, W);
      src += fmt::format("            const uint64_t _skein_e{0} = _skein_P{0} - _skein_a;\n", u);
      src += leaf(u, interior != 0);
      src += "        }\n";
    }
    src += "    }\n";
  }
  for (std::size_t u = 0; u < U; ++u)
    src += fmt::format("    _skein_sd[{} + _skein_lid] = _skein_leaf{};\n", u * L, u);
  src += "    LOCAL_BARRIER;\n";
  // Pairwise over the group's threads, for every sub-tile: step `st` joins threads 2 st q and
  // 2 st q + st (adjacent nodes, so the canonical tree).
  src += fmt::format(
      "    for (unsigned int _skein_st = 1, _skein_lv = {}; _skein_st < {}; _skein_st <<= 1, "
      "++_skein_lv) {{\n",
      w, L);
  src += "        const unsigned int _skein_x = 2 * _skein_st * _skein_lid;\n";
  src += fmt::format("        if (_skein_x < {}) {{\n", L);
  for (std::size_t u = 0; u < U; ++u) {
    src += fmt::format(
        "            if (_skein_interior) _skein_sd[{0} + _skein_x] = {1}_reduce(_skein_sd[{0} + "
        "_skein_x], _skein_sd[{0} + _skein_x + _skein_st]);\n"
        "            else _skein_sd[{0} + _skein_x] = _SKEIN_CHK(_skein_sd[{0} + _skein_x], "
        "_skein_sd[{0} + _skein_x + _skein_st], "
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
          "        const reduce_t {0} = _skein_interior ? {1}_reduce({2}, {3}) : _SKEIN_CHK({2}, "
          "{3}, _skein_T + {4}, {5});\n",
          name, k, vals[q], vals[q + 1], std::uint64_t{q / 2} * 2 * span, lev);
      next.push_back(name);
    }
    vals = std::move(next);
    ++lev;
    span *= 2;
  }
  src +=
      fmt::format("        if ({}_full(_skein_T, {}, _skein_a, _skein_bnd, _skein_N)) {{\n", k, s);
  src += fmt::format(
      "            if (_skein_pass_up) ((GLOBAL_MEM reduce_t*)(_skein_b__up + "
      "_skein_o__up))[_skein_j - _skein_up0] = {};\n",
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
        src += fmt::format("            const reduce_t {} = {}_reduce({}, {});\n", name, k, vals[q],
                           vals[q + 1]);
      } else {
        src += fmt::format(
            "            const reduce_t {} = _SKEIN_CHK({}, {}, _skein_P{} + {}, {});\n", name,
            vals[q], vals[q + 1], u, (q / 2) << (lev + 1), lev);
      }
      next.push_back(name);
    }
    vals = std::move(next);
    ++lev;
  }
  src += fmt::format("            _skein_leaf{} = {};\n", u, vals[0]);
  return src;
}

// Input j's element at piece index `e` (contiguous), or at the strided path's offsets.
std::string leaf_element(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t j,
                         const std::string& e) {
  if (r.layout.contiguous) return fmt::format("_skein_p_{}[{}]", impl.params[j].name, e);
  return strided_element(r, j, impl.params[j].name);
}

// The code that sets _skein_leaf<u> in K_dleaf: the W map values _skein_m<e> of sub-tile u and
// their tree. In an interior tile of contiguous inputs the values come by 16-byte loads where
// the piece is aligned for them (_skein_vec), else element by element; in an edge tile only the
// elements inside the piece are mapped.
std::string leaf_values(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t W,
                        std::size_t u, bool interior) {
  const std::string& k = impl.name();
  const bool contiguous = r.layout.contiguous;
  std::string s;
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
              "                _skein_x_{0}.v[{1}] = ((GLOBAL_MEM const uint4*)(_skein_p_{0} + "
              "_skein_e{2}))[{1}];\n",
              nm, v, u);
        }
      }
      for (std::size_t e = 0; e < W; ++e) {
        s +=
            fmt::format("                const reduce_t _skein_m{} = {};\n", e,
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
                         return leaf_element(impl, r, j, fmt::format("_skein_e{} + {}", u, e));
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
        "            if (_skein_P{0} + {1} >= _skein_a && _skein_P{0} + {1} < _skein_bnd) {{\n", u,
        e);
    if (!contiguous)
      s += strided_offsets(r, fmt::format("_skein_e{} + {}", u, e), "                ");
    s += fmt::format("                _skein_m{} = {};\n", e,
                     map_call(impl, r, fmt::format("_skein_e{} + {}", u, e), [&](std::size_t j) {
                       return leaf_element(impl, r, j, fmt::format("_skein_e{} + {}", u, e));
                     }));
    s += "            }\n";
  }
  s += leaf_tree(k, W, u, interior);
  return s;
}

// K_dleaf: the leaf pass, over map values of the inputs (with their vector views when contiguous).
std::string leaf_kernel(const ReductionKernel::Impl& impl, const Resolved& r,
                        const DetGeometry& g) {
  const std::string& k = impl.name();
  const bool contiguous = r.layout.contiguous;
  const std::size_t W = g.W;
  std::string src;
  if (contiguous) {
    for (std::size_t j = 0; j < impl.params.size(); ++j) {
      if (r.layout_index[j] == npos) continue;
      src += fmt::format("typedef union {{ uint4 v[{}]; {} e[{}]; }} _skein_vec_{}_{};\n",
                         W * itemsize(r.dtypes[j]) / 16, ctype(r.dtypes[j]), W, k,
                         impl.params[j].name);
    }
  }
  auto own = input_params(impl, r);
  own.emplace_back("const uint64_t _skein_n");
  own.emplace_back("const uint32_t _skein_vec");
  if (!contiguous) {
    for (auto& p : strided_params(r)) own.push_back(p);
  }
  src += det_tile_kernel(
      k, k + "_dleaf", own, input_setup(impl, r, !contiguous), g.L, W, g.U,
      [&](std::size_t u, bool interior) { return leaf_values(impl, r, W, u, interior); });
  return src;
}

// K_dmid: later passes, over the values a previous pass handed up, one per thread and sub-tile.
std::string mid_kernel(const std::string& k, const DetGeometry& g) {
  std::vector<std::string> own_mid{codegen::array_param("_in")};
  const std::string setup =
      "    GLOBAL_MEM const reduce_t* _skein_in = (GLOBAL_MEM const reduce_t*)(_skein_b__in + "
      "_skein_o__in);\n";
  return det_tile_kernel(
      k, k + "_dmid", own_mid, setup, g.L, 1, g.Um, [&](std::size_t u, bool interior) {
        if (interior)
          return fmt::format("            _skein_leaf{0} = _skein_in[_skein_e{0}];\n", u);
        return fmt::format(
            "            _skein_leaf{0} = (_skein_P{0} >= _skein_a && _skein_P{0} < _skein_bnd) ? "
            "_skein_in[_skein_e{0}] : {1}_identity();\n",
            u, k);
      });
}

// K_dcombine: one work item merges the records in global order (siblings bottom-up), then folds
// what is left from the right (the nodes cut by N).
std::string combine_kernel(const std::string& k) {
  return fmt::format(
      R"(KERNEL void {0}_dcombine({1}, const uint64_t _skein_count, const uint64_t _skein_N, {2})
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
      k, codegen::array_param("_recs"), codegen::array_param("_y"), kStack);
}

}  // namespace

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
  src += leaf_kernel(impl, r, g);
  src += mid_kernel(k, g);
  src += combine_kernel(k);
  return render(src, impl.options.globals, k);
}

}  // namespace skein::detail::red
