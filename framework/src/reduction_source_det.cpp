// SPDX-License-Identifier: BSD-3-Clause
// The deterministic whole-array program of a ReductionKernel: a canonical pairwise tree over the
// elements' global indices (see reduction.hpp), so that a split array gives the same bits
// whatever the split. K_dleaf reduces tiles of elements, K_dmid tiles of the values a previous
// pass handed up, K_dcombine merges their records into the result. The kernels' text is the
// skeleton framework/src/kernels/reduction_det.tmpl (which says how they work); this file
// computes the tiles' geometry and the skeleton's values.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/types.hpp"
#include "reduction_impl.hpp"
#include "skein/ctypes.hpp"
#include "skein/template.hpp"

namespace skein::detail::red {

namespace {

// Records a combine kernel can stack (levels only decrease along the stack, so 2 x 64 suffice).
constexpr int kStack = 132;

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
  const DetGeometry g = det_geometry(r, L);
  RenderGlobals v = input_globals(impl, r);
  const std::vector<std::int64_t> nvec = vector_words(impl, r, g.W);  // K_dleaf's views
  std::vector<std::int64_t> pow2;
  for (unsigned i = 0; i < 63; ++i) pow2.push_back(std::int64_t{1} << i);
  auto integer = [](std::size_t x) { return static_cast<std::int64_t>(x); };
  v.insert(
      {{"L", integer(g.L)},
       {"lb", integer(log2_exact(g.L))},
       {"W", integer(g.W)},
       {"lw", integer(log2_exact(g.W))},
       {"U", integer(g.U)},
       {"lu", integer(log2_exact(g.U))},
       {"Um", integer(g.Um)},
       {"lum", integer(log2_exact(g.Um))},
       {"pow2", pow2},
       {"contiguous", r.layout.contiguous ? 1 : 0},
       {"nvec", nvec},
       {"any_vector", std::any_of(nvec.begin(), nvec.end(), [](auto n) { return n > 0; }) ? 1 : 0},
       {"strided_params", r.layout.contiguous ? std::vector<std::string>{} : strided_params(r)},
       {"rec_align", integer(std::max<std::size_t>(8, r.reduce_align))},
       {"stack", kStack},
       {"p_in", codegen::array_param("_in")},
       {"p_up", codegen::array_param("_up")},
       {"p_recs", codegen::array_param("_recs")},
       {"p_y", codegen::array_param("_y")}});
  const std::string src = common_source(impl, r, true) + render_reduction("reduction_det.tmpl", v);
  // Then the user's globals, over the whole text, as for every generated kernel.
  return render(src, impl.options.globals, impl.name());
}

}  // namespace skein::detail::red
