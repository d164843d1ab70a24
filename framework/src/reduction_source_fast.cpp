// SPDX-License-Identifier: BSD-3-Clause
// The fast whole-array program of a ReductionKernel: K_p1 reduces the elements to one partial
// value per group, K_p2 reduces partial values in one group. The kernels' text is the skeleton
// framework/src/kernels/reduction_fast.tmpl (which says how they work); this file computes its
// values: the vector views of the contiguous path, the parameters, the one-launch code's loads.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/types.hpp"
#include "reduction_impl.hpp"
#include "skein/ctypes.hpp"
#include "skein/template.hpp"

namespace skein::detail::red {

std::string fast_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L,
                        bool one_launch) {
  RenderGlobals g = input_globals(impl, r);
  const std::vector<std::int64_t> nvec = vector_words(impl, r, r.W);
  // The one-launch code loads partial values by words no wider than their alignment.
  const std::size_t word = std::min<std::size_t>(r.reduce_align, 4);
  g.insert(
      {{"L", static_cast<std::int64_t>(L)},
       {"one_launch", one_launch ? 1 : 0},
       {"contiguous", r.layout.contiguous ? 1 : 0},
       {"W", static_cast<std::int64_t>(r.W)},
       {"U", static_cast<std::int64_t>(r.U)},
       {"nvec", nvec},
       {"any_vector", std::any_of(nvec.begin(), nvec.end(), [](auto n) { return n > 0; }) ? 1 : 0},
       {"strided_params", r.layout.contiguous ? std::vector<std::string>{} : strided_params(r)},
       {"p_part", codegen::array_param("_part")},
       {"p_y", codegen::array_param("_y")},
       {"p_cnt", codegen::array_param("_cnt")},
       {"p_in", codegen::array_param("_in")},
       {"word_t", word == 4   ? "uint32_t"
                  : word == 2 ? "uint16_t"
                              : "uint8_t"},
       {"nwords", static_cast<std::int64_t>(r.reduce_size / word)}});
  const std::string src =
      common_source(impl, r, false) + render_reduction("reduction_fast.tmpl", g);
  // Then the user's globals, over the whole text, as for every generated kernel.
  return render(src, impl.options.globals, impl.name());
}

}  // namespace skein::detail::red
