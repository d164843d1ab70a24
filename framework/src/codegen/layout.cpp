// SPDX-License-Identifier: BSD-3-Clause
#include "codegen/layout.hpp"

#include <functional>
#include <numeric>

namespace skein::detail::codegen {

Layout make_layout(const std::vector<std::size_t>& shape, std::span<const ArrayShape> arrays) {
  Layout l;
  l.size = std::accumulate(shape.begin(), shape.end(), std::uint64_t{1}, std::multiplies<>());
  std::vector<std::uint64_t> dims;
  std::vector<std::vector<std::uint64_t>> strides(arrays.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    dims.push_back(shape[d]);
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      const ArrayShape& a = arrays[k];
      const std::size_t lead = shape.size() - a.shape.size();  // a's dimensions are right-aligned
      std::uint64_t s = 0;
      if (d >= lead && a.shape[d - lead] != 1) s = a.strides[d - lead];
      strides[k].push_back(s);
    }
  }
  // Merge dimension d into d + 1 where every array steps through both as through one.
  std::vector<std::uint64_t> mdims;
  std::vector<std::vector<std::uint64_t>> mstrides(arrays.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    bool merge = !mdims.empty();
    for (std::size_t k = 0; merge && k < arrays.size(); ++k) {
      merge = mstrides[k].back() == strides[k][d] * dims[d];
    }
    if (merge) {
      mdims.back() *= dims[d];
      for (std::size_t k = 0; k < arrays.size(); ++k) mstrides[k].back() = strides[k][d];
    } else {
      mdims.push_back(dims[d]);
      for (std::size_t k = 0; k < arrays.size(); ++k) mstrides[k].push_back(strides[k][d]);
    }
  }
  if (mdims.empty()) {
    mdims.push_back(1);
    for (std::size_t k = 0; k < arrays.size(); ++k) mstrides[k].push_back(arrays[k].itemsize);
  }
  l.shape = std::move(mdims);
  l.strides = std::move(mstrides);
  l.contiguous = l.shape.size() == 1;
  for (std::size_t k = 0; l.contiguous && k < arrays.size(); ++k) {
    l.contiguous = l.strides[k][0] == arrays[k].itemsize || l.shape[0] <= 1;
  }
  return l;
}

}  // namespace skein::detail::codegen
