// SPDX-License-Identifier: BSD-3-Clause
// The canonical pairwise tree of reduction.hpp written out on the host, for the tests that check
// deterministic reductions bit for bit (framework and MPI tests alike): header-only.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace skein::test {

// The canonical tree over [0, N): node (l, k) covers [k 2^l, (k+1) 2^l) cut to [0, N); its value
// is reduce(left, right), or the left child alone when the right one is empty. No leaves: the
// identity.
template <class R, class F = std::plus<R>>
R canonical_tree(const std::vector<R>& leaves, R identity = R(0), F reduce = F{}) {
  const std::uint64_t N = leaves.size();
  if (N == 0) return identity;
  std::function<R(unsigned, std::uint64_t)> node = [&](unsigned l, std::uint64_t k) -> R {
    const std::uint64_t start = k << l;
    if (l == 0) return leaves[start];
    const std::uint64_t right = start + (std::uint64_t{1} << (l - 1));
    const R left = node(l - 1, 2 * k);
    if (right >= N) return left;
    return reduce(left, node(l - 1, 2 * k + 1));
  };
  unsigned L = 0;
  while ((std::uint64_t{1} << L) < N) ++L;
  return node(L, 0);
}

}  // namespace skein::test
