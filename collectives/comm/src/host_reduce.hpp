// SPDX-License-Identifier: BSD-3-Clause
// Reductions on the host, element by element, as the MPI backend and the agreement check's
// carried exchange (src/communicator.cpp) compute them: integers wrap around, half types compute
// in float and round once per step, complex types support sum, prod and avg.
#pragma once

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "skein/communicator.hpp"
#include "skein/dtype.hpp"

namespace skein::detail {

template <class T>
constexpr bool is_half = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <class T>
constexpr bool is_cplx =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

// One element of a reduction. Integers wrap around (computed unsigned: signed overflow would be
// undefined behaviour); half types compute in float and round once per step.
template <class T>
T combine(T a, T b, ReduceOp op) {
  if constexpr (is_half<T>) {
    return T(combine(static_cast<float>(a), static_cast<float>(b), op));
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case ReduceOp::prod:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case ReduceOp::min: return std::min(a, b);
      case ReduceOp::max: return std::max(a, b);
    }
    return a;
  } else {
    // For complex T, min and max are both `break` (refused before any reduction runs).
    // NOLINTBEGIN(bugprone-branch-clone)
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: return a + b;
      case ReduceOp::prod: return a * b;
      case ReduceOp::min:
        if constexpr (!is_cplx<T>) return std::min(a, b);
        break;
      case ReduceOp::max:
        if constexpr (!is_cplx<T>) return std::max(a, b);
        break;
    }  // NOLINTEND(bugprone-branch-clone)

    return a;
  }
}

// The element loop with the operation fixed at compile time: no branch per element, so the
// compiler can vectorise the loop (a switch inside it made the MPI backend's local reduction of
// several devices, and the user-defined MPI operations, several times slower).
template <class T, ReduceOp Op>
void reduce_into(std::byte* acc, const std::byte* in, std::size_t n) {
  // memcpy per element: the staging buffers are byte arrays, and aligned loads are not promised.
  for (std::size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
    std::memcpy(&b, in + i * sizeof(T), sizeof(T));
    a = combine(a, b, Op);
    std::memcpy(acc + i * sizeof(T), &a, sizeof(T));
  }
}

template <class T>
void reduce_into(std::byte* acc, const std::byte* in, std::size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return reduce_into<T, ReduceOp::sum>(acc, in, n);
    case ReduceOp::prod: return reduce_into<T, ReduceOp::prod>(acc, in, n);
    case ReduceOp::min: return reduce_into<T, ReduceOp::min>(acc, in, n);
    case ReduceOp::max: return reduce_into<T, ReduceOp::max>(acc, in, n);
  }
}

inline void reduce_bytes(Dtype dtype, std::byte* acc, const std::byte* in, std::size_t n,
                         ReduceOp op) {
  visit_dtype(dtype, [&](auto t) { reduce_into<decltype(t)>(acc, in, n, op); });
}

// avg: the sum divided by the number of members.
inline void divide_bytes(Dtype dtype, std::byte* data, std::size_t n, std::size_t divisor) {
  visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    for (std::size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, data + i * sizeof(T), sizeof(T));
      if constexpr (is_half<T>) {
        v = T(static_cast<float>(v) / static_cast<float>(divisor));
      } else if constexpr (is_cplx<T>) {
        v /= static_cast<typename T::value_type>(divisor);
      } else {
        v = static_cast<T>(v / static_cast<T>(divisor));
      }
      std::memcpy(data + i * sizeof(T), &v, sizeof(T));
    }
  });
}

}  // namespace skein::detail
