// SPDX-License-Identifier: BSD-3-Clause
// The host side of the grid-array tests (grid_halo_test.cpp, grid_redistribute_test.cpp): the
// global array's values (a formula of the global index, so that each rank knows every value
// without asking another), the sentinels that ghost cells hold before an exchange, a block's host
// contents with its halo, and the conversions to and from a dtype's bytes.
#pragma once

#include <cstddef>
#include <cstring>
#include <skein/grid_layout.hpp>
#include <skein/skein.hpp>
#include <vector>

namespace skein::test::grid {

// Exact in float32, float64 and int32: below 2^24.
inline double global_value(std::size_t flat_point, std::size_t comp, std::size_t components,
                           std::size_t salt) {
  return static_cast<double>(((flat_point * components + comp) * 5 + salt * 11 + 1) % 1000003);
}

// What a ghost cell holds before the exchange: negative, so never a global value, and below every
// constant used here.
inline double sentinel(std::size_t member, std::size_t index, std::size_t salt) {
  return -1000.0 - static_cast<double>((member * 104729 + index * 3 + salt) % 1000000);
}

inline std::vector<std::byte> to_bytes(const std::vector<double>& v, Dtype dtype) {
  std::vector<std::byte> out(v.size() * itemsize(dtype));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == Dtype::float64) {
      std::memcpy(out.data() + 8 * i, &v[i], 8);
    } else if (dtype == Dtype::float32) {
      const auto f = static_cast<float>(v[i]);
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const auto n = static_cast<std::int32_t>(v[i]);
      std::memcpy(out.data() + 4 * i, &n, 4);
    }
  }
  return out;
}

inline std::vector<double> from_bytes(const std::vector<std::byte>& b, Dtype dtype) {
  std::vector<double> out(b.size() / itemsize(dtype));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (dtype == Dtype::float64) {
      std::memcpy(&out[i], b.data() + 8 * i, 8);
    } else if (dtype == Dtype::float32) {
      float f = 0;
      std::memcpy(&f, b.data() + 4 * i, 4);
      out[i] = f;
    } else {
      std::int32_t n = 0;
      std::memcpy(&n, b.data() + 4 * i, 4);
      out[i] = n;
    }
  }
  return out;
}

inline std::size_t flat(const Shape& shape, const std::vector<std::size_t>& p) {
  std::size_t f = 0;
  for (std::size_t a = 0; a < shape.size(); ++a) f = f * shape[a] + p[a];
  return f;
}

// Calls f(index) for every multi-index of `shape`, in C order.
template <class F>
inline void for_each_index(const Shape& shape, F&& f) {
  if (shape_size(shape) == 0) return;
  std::vector<std::size_t> i(shape.size(), 0);
  while (true) {
    f(i);
    std::size_t a = shape.size();
    while (a-- > 0) {
      if (++i[a] < shape[a]) break;
      i[a] = 0;
    }
    if (a == static_cast<std::size_t>(-1)) return;
  }
}

// The host contents of a member's block with halo: the global points inside, sentinels outside.
inline std::vector<double> initial_block(const GridLayout& l, std::size_t member,
                                         std::size_t salt) {
  const GridBlock b = l.block(member);
  const std::size_t n = l.ndim(), C = l.components();
  const Shape full = l.block_shape(member, true);
  const Shape spatial(full.begin(), full.begin() + static_cast<long>(n));
  std::vector<double> out;
  std::size_t k = 0;
  for_each_index(spatial, [&](const std::vector<std::size_t>& idx) {
    bool inside = true;
    std::vector<std::size_t> g(n);
    for (std::size_t a = 0; a < n; ++a) {
      inside = inside && idx[a] >= l.halo(a) && idx[a] < l.halo(a) + b.extent[a];
      g[a] = b.offset[a] + idx[a] - (inside ? l.halo(a) : 0);
    }
    for (std::size_t c = 0; c < C; ++c, ++k) {
      out.push_back(inside ? global_value(flat(l.shape(), g), c, C, salt)
                           : sentinel(member, k, salt));
    }
  });
  return out;
}

}  // namespace skein::test::grid
