// SPDX-License-Identifier: BSD-3-Clause
// Host data and distributed arrays of it, shared by the dist suites (dist_ops, dist_reductions,
// dist_device_values): the same global values on every rank from a seed, arrays whose ranks write
// their own rows (or rank 0 scatters a grid), the row splits the reductions are checked over, and
// a value's agreement between ranks.
#pragma once

#include <mpi.h>

#include <bit>
#include <cstdint>
#include <skein/dist_array.hpp>
#include <skein/grid_array.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dist_support.hpp"

namespace skein::test {

inline std::uint64_t mix(std::uint64_t z) {  // splitmix64's finaliser
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// n values of a global array, the same on every rank for one salt. exact: multiples of 1/4 in
// [-4, 4] (products of three and their sums are exact in float64); otherwise full mantissas in
// [-1, 1) (sums round).
template <class T>
std::vector<T> seeded_values(std::size_t n, std::uint64_t salt, bool exact) {
  std::vector<T> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t h = mix(k * 0x632BE59BD9B4E019ull + salt * 0x8CB92BA72F3D8DD7ull);
    out[k] = exact ? static_cast<T>(static_cast<double>(static_cast<int>(h % 33) - 16) / 4.0)
                   : static_cast<T>(static_cast<double>(h >> 11) * 0x1p-53 * 2.0 - 1.0);
  }
  return out;
}

// A distributed array of `global` (flat, row-major): each rank writes its own rows.
template <class T>
DistArray make_dist(Rig& s, const Shape& shape, const RowSplit& split, const std::vector<T>& global,
                    Halo halo = {}) {
  DistArray d(*s.comm, shape, dtype_of<T>, split, halo);
  const RowRange rows = d.rank_rows();
  const std::size_t C = d.layout().row_size();
  d.scatter_local(std::span<const T>(global.data() + rows.begin * C, rows.size() * C));
  return d;
}

// A grid array of `global`, scattered from rank 0.
template <class T>
GridArray make_grid(Rig& s, const GridLayout& layout, const std::vector<T>& global) {
  GridArray a(*s.comm, layout, dtype_of<T>);
  a.scatter(world_rank() == 0 ? global : std::vector<T>{}, 0);
  return a;
}

// Row splits of M members: even, weights 1..M, everything on the last member (the others empty).
inline std::vector<std::pair<RowSplit, std::string>> member_splits(std::size_t M,
                                                                   std::size_t rows) {
  std::vector<double> w;
  for (std::size_t m = 0; m < M; ++m) w.push_back(static_cast<double>(m + 1));
  std::vector<std::size_t> last(M, 0);
  last.back() = rows;
  return {{RowSplit::even(), "even"},
          {RowSplit::weights(w), "weights"},
          {RowSplit::counts(last), "last"}};
}

// Whether every rank has the same bits of `v` (collective).
inline bool same_everywhere(double v) {
  double lo = 0, hi = 0;
  MPI_Allreduce(&v, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return std::bit_cast<std::uint64_t>(lo) == std::bit_cast<std::uint64_t>(v) &&
         std::bit_cast<std::uint64_t>(hi) == std::bit_cast<std::uint64_t>(v);
}

}  // namespace skein::test
