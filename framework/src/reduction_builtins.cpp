// SPDX-License-Identifier: BSD-3-Clause
// The built-in reductions (skein/reduction.hpp): sum, min, max, dot and nrm2, each a
// ReductionKernel per dtypes, made on first use and kept for the process.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "codegen/programs.hpp"
#include "codegen/types.hpp"
#include "skein/ctypes.hpp"
#include "skein/detail/errors.hpp"
#include "skein/reduction.hpp"

namespace skein {

namespace {

// The built-in kernels, keyed by detail::codegen::builtin_key (the operation and its dtypes).
using detail::codegen::builtin_kernel;
using detail::codegen::builtin_key;

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
      if (max)
        return fmt::format("(({}){}{})", ctype(d), std::numeric_limits<T>::max(),
                           std::is_signed_v<T> ? "LL" : "ULL");
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
  if (is_record(x)) detail::raise_record_dtype(x, "skein::sum_dtype");
  if (is_integer(x)) return is_signed(x) ? Dtype::int64 : Dtype::uint64;
  return x;
}

Dtype nrm2_dtype(Dtype x) {
  if (is_record(x)) detail::raise_record_dtype(x, "skein::nrm2_dtype");
  switch (x) {
    case Dtype::float16:
    case Dtype::bfloat16:
    case Dtype::float32:
    case Dtype::float64: return x;
    case Dtype::complex64: return Dtype::float32;
    default: return Dtype::float64;  // complex128, and the integers
  }
}

const ReductionKernel& sum_kernel(Dtype x) {
  return builtin_kernel<ReductionKernel>(builtin_key(1, x), [&] {
    const Dtype o = sum_dtype(x);
    ReductionOptions opt{.name = "skein_sum"};
    std::string reduce = "a + b", identity = "0";
    if (is_complex(o)) {
      reduce = fmt::format("{}(a.re + b.re, a.im + b.im)", detail::codegen::make_complex(o));
      identity = fmt::format("{}(0, 0)", detail::codegen::make_complex(o));
    }
    return ReductionKernel(fmt::format("{} x", name(x)), fmt::format("{} y", name(o)),
                           is_complex(o) ? "x" : fmt::format("(reduce_t)x"), reduce, identity, opt);
  });
}

const ReductionKernel& min_kernel(Dtype x) {
  require_real(x, "skein::min");
  return builtin_kernel<ReductionKernel>(builtin_key(2, x), [&] {
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
  return builtin_kernel<ReductionKernel>(builtin_key(3, x), [&] {
    const bool f = !is_integer(x);
    const Dtype c = detail::codegen::compute_dtype(x);
    return ReductionKernel(fmt::format("{} x", name(x)), fmt::format("{} y", name(x)), "x",
                           f ? "(a != a || a >= b) ? a : b" : "a >= b ? a : b",
                           f ? infinity(c, true) : int_limit(x, false),
                           {.preamble = kInfinityPreamble, .name = "skein_max"});
  });
}

const ReductionKernel& dot_kernel(Dtype x, Dtype y) {
  return builtin_kernel<ReductionKernel>(builtin_key(4, x, y), [&] {
    const Dtype r = promote_types(x, y);
    const std::string cx = detail::codegen::convert_value(x, r, "x"),
                      cy = detail::codegen::convert_value(y, r, "y");
    std::string map, reduce = "a + b", identity = "0";
    if (is_complex(r)) {
      const std::string m = detail::codegen::make_complex(r);
      map = fmt::format(
          "{0}(({1}).re * ({2}).re - ({1}).im * ({2}).im, ({1}).re * ({2}).im + ({1}).im * "
          "({2}).re)",
          m, cx, cy);
      reduce = fmt::format("{}(a.re + b.re, a.im + b.im)", m);
      identity = fmt::format("{}(0, 0)", m);
    } else if (is_integer(r)) {
      const std::string u = itemsize(r) == 8 ? "uint64_t" : "uint32_t";
      map = fmt::format("(reduce_t)(({0}){1} * ({0}){2})", u, cx, cy);
      reduce = fmt::format("(reduce_t)(({0})a + ({0})b)", u);
    } else {
      map = fmt::format("(reduce_t)({} * {})", cx, cy);
    }
    return ReductionKernel(fmt::format("{} x, {} y", name(x), name(y)),
                           fmt::format("{} z", name(r)), map, reduce, identity,
                           {.name = "skein_dot"});
  });
}

const ReductionKernel& nrm2_kernel(Dtype x) {
  return builtin_kernel<ReductionKernel>(builtin_key(5, x), [&] {
    const Dtype o = nrm2_dtype(x);
    const bool wide =
        x == Dtype::float16 || x == Dtype::bfloat16 || x == Dtype::float32 || x == Dtype::complex64;
    if (wide) {
      // Squares of float32 values in float64: no overflow, no underflow, one rounding at the end.
      const std::string map = is_complex(x)
                                  ? "(double)x.re * (double)x.re + (double)x.im * (double)x.im"
                                  : "(double)x * (double)x";
      return ReductionKernel(
          fmt::format("{} x", name(x)), fmt::format("{} y", name(o)), map, "a + b", "0.0",
          {.post_map = "y = (float)sqrt(a)", .reduce_type = Dtype::float64, .name = "skein_nrm2"});
    }
    // A (scale, sum of squares) pair: value = scale * sqrt(ssq), with every |x| <= scale.
    StructType pair{{"scale", Dtype::float64}, {"ssq", Dtype::float64}};
    const std::string preamble =
        R"(WITHIN_KERNEL INLINE reduce_t skein_nrm2_pair(double scale, double ssq)
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
    const std::string map = is_complex(x)
                                ? "skein_nrm2_join(skein_nrm2_of(x.re), skein_nrm2_of(x.im))"
                                : "skein_nrm2_of((double)x)";
    return ReductionKernel(fmt::format("{} x", name(x)), fmt::format("{} y", name(o)), map,
                           "skein_nrm2_join(a, b)", "skein_nrm2_pair(0.0, 0.0)",
                           {.post_map = "y = a.scale * sqrt(a.ssq)",
                            .reduce_struct = pair,
                            .preamble = preamble,
                            .name = "skein_nrm2"});
  });
}

Array sum(const Queue& queue, const Array& x, const ReductionArgs& args) {
  if (is_record(x.dtype())) detail::raise_record_dtype(x.dtype(), "skein::sum");
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
    detail::raise_in(
        SKEIN_HERE, fn, "Reduce a non-empty array (min and max have no identity).",
        "{} of an empty array{} (shape {})", fn,
        per_axis ? fmt::format(" along axes ({})", fmt::join(axes, ", ")) : std::string(),
        to_string(x.shape()));
  }
}
}  // namespace

Array min(const Queue& queue, const Array& x, const ReductionArgs& args) {
  if (is_record(x.dtype())) detail::raise_record_dtype(x.dtype(), "skein::min");
  require_nonempty(x, args, "skein::min");
  return min_kernel(x.dtype())(queue, {x}, args);
}

Array max(const Queue& queue, const Array& x, const ReductionArgs& args) {
  if (is_record(x.dtype())) detail::raise_record_dtype(x.dtype(), "skein::max");
  require_nonempty(x, args, "skein::max");
  return max_kernel(x.dtype())(queue, {x}, args);
}

Array dot(const Queue& queue, const Array& x, const Array& y, const ReductionArgs& args) {
  for (Dtype d : {x.dtype(), y.dtype()}) {
    if (is_record(d)) detail::raise_record_dtype(d, "skein::dot");
  }
  return dot_kernel(x.dtype(), y.dtype())(queue, {x, y}, args);
}

Array nrm2(const Queue& queue, const Array& x, const ReductionArgs& args) {
  if (is_record(x.dtype())) detail::raise_record_dtype(x.dtype(), "skein::nrm2");
  return nrm2_kernel(x.dtype())(queue, {x}, args);
}

}  // namespace skein
