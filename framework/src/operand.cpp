// SPDX-License-Identifier: BSD-3-Clause
// Operand (skein/operand.hpp): a generated kernel's argument, its scalar's bytes in a dtype, and
// NumPy 2's type promotion over operands.
#include "skein/operand.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "promotion.hpp"
#include "skein/detail/errors.hpp"
#include "skein/functions.hpp"  // result_type over dtypes

namespace skein {

// --- Operand -----------------------------------------------------------------------------------

Operand::Operand(const Array& array) : array_(array), dtype_(array.dtype()), weak_(false) {}

Dtype Operand::int_dtype(std::size_t size, bool is_signed) {
  switch (size) {
    case 1: return is_signed ? Dtype::int8 : Dtype::uint8;
    case 2: return is_signed ? Dtype::int16 : Dtype::uint16;
    case 4: return is_signed ? Dtype::int32 : Dtype::uint32;
    default: return is_signed ? Dtype::int64 : Dtype::uint64;
  }
}

void Operand::set_int(std::int64_t v, Dtype d, bool weak) {
  kind_ = Kind::integer;
  int_ = v;
  value_ = static_cast<double>(v);
  dtype_ = d;
  weak_ = weak;
}
void Operand::set_uint(std::uint64_t v, Dtype d, bool weak) {
  kind_ = Kind::unsigned_integer;
  uint_ = v;
  value_ = static_cast<double>(v);
  dtype_ = d;
  weak_ = weak;
}
void Operand::set_float(double v, Dtype d, bool weak) {
  kind_ = Kind::floating;
  value_ = v;
  dtype_ = d;
  weak_ = weak;
}
void Operand::set_complex(std::complex<double> v, Dtype d, bool weak) {
  kind_ = Kind::complex;
  value_ = v;
  dtype_ = d;
  weak_ = weak;
}

const Array& Operand::array() const {
  if (!array_) {
    detail::raise_in(SKEIN_HERE, "Operand::array", "Check is_array() first.",
                     "the operand is the scalar {}", to_string());
  }
  return *array_;
}

Dtype Operand::dtype() const { return array_ ? array_->dtype() : dtype_; }

std::string Operand::to_string() const {
  if (array_) {
    return fmt::format("{} array of shape {}", name(array_->dtype()),
                       skein::to_string(array_->shape()));
  }
  switch (kind_) {
    case Kind::integer: return fmt::format("{}", int_);
    case Kind::unsigned_integer: return fmt::format("{}", uint_);
    case Kind::floating: return fmt::format("{}", value_.real());
    case Kind::complex: return fmt::format("({}{:+}j)", value_.real(), value_.imag());
  }
  return "?";
}

namespace {

// A scalar's bytes, at most 16 (complex128), without a heap allocation.
struct ScalarBytes {
  std::array<std::byte, 16> b{};
  std::size_t n = 0;
};

template <class T>
ScalarBytes bytes_of(const T& v) {
  static_assert(sizeof(T) <= 16);
  ScalarBytes out;
  std::memcpy(out.b.data(), &v, sizeof(T));
  out.n = sizeof(T);
  return out;
}

bool int_fits(Dtype d, long double v) {
  return visit_dtype(d, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>) {
      return v >= static_cast<long double>(std::numeric_limits<T>::min()) &&
             v <= static_cast<long double>(std::numeric_limits<T>::max());
    } else {
      return true;
    }
  });
}

}  // namespace

std::vector<std::byte> Operand::bytes_as(Dtype target, std::string_view what, bool truncate) const {
  std::array<std::byte, 16> b;
  const std::size_t n = bytes_into(target, b, what, truncate);
  return {b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::size_t Operand::bytes_into(Dtype target, std::span<std::byte, 16> out, std::string_view what,
                                bool truncate) const {
  const ScalarBytes r = [&]() -> ScalarBytes {
    if (array_) {
      detail::raise_in(SKEIN_HERE, "Operand", "Pass a scalar.", "{}: an array was given", what);
    }
    if (is_record(target)) detail::raise_record_dtype(target, fmt::format("Operand ({})", what));
    auto refuse = [&](const std::string& why, const std::string& hint) {
      detail::raise_in(SKEIN_HERE, "Operand", hint,
                       "{}: the scalar {} cannot be converted to {}: {}", what, to_string(),
                       name(target), why);
    };
    if (kind_ == Kind::complex && !is_complex(target)) {
      refuse("that would drop the imaginary part", "Pass the real part, or use a complex dtype.");
    }
    if (is_integer(target)) {
      long double v = 0;
      bool exact_int = true;
      if (kind_ == Kind::integer) {
        v = static_cast<long double>(int_);
      } else if (kind_ == Kind::unsigned_integer) {
        v = static_cast<long double>(uint_);
      } else {
        const double f = value_.real();
        if (!std::isfinite(f)) refuse("it is not finite", "Pass a finite value.");
        exact_int = std::trunc(f) == f;
        v = static_cast<long double>(std::trunc(f));
        if (!exact_int && !truncate) {
          refuse("it has a fractional part", "Pass an integer, or a float dtype.");
        }
      }
      return visit_dtype(target, [&](auto t) -> ScalarBytes {
        using T = decltype(t);
        if constexpr (std::is_integral_v<T>) {
          if (!int_fits(target, v)) {
            if (!truncate || (kind_ != Kind::integer && kind_ != Kind::unsigned_integer)) {
              refuse(fmt::format("it is outside {}'s range", name(target)),
                     "Pass a value that fits, or use a wider dtype.");
            }
            // Integers wrap as in C (two's complement), as NumPy's astype.
            const std::uint64_t bits =
                kind_ == Kind::integer ? static_cast<std::uint64_t>(int_) : uint_;
            return bytes_of(static_cast<T>(bits));
          }
          return bytes_of(static_cast<T>(v));
        } else {
          return {};
        }
      });
    }
    const double re = kind_ == Kind::integer            ? static_cast<double>(int_)
                      : kind_ == Kind::unsigned_integer ? static_cast<double>(uint_)
                                                        : value_.real();
    switch (target) {
      case Dtype::float16: return bytes_of(float16(static_cast<float>(re)).bits);
      case Dtype::bfloat16: return bytes_of(bfloat16(static_cast<float>(re)).bits);
      case Dtype::float32: return bytes_of(static_cast<float>(re));
      case Dtype::float64: return bytes_of(re);
      case Dtype::complex64:
        return bytes_of(
            std::complex<float>(static_cast<float>(re), static_cast<float>(value_.imag())));
      case Dtype::complex128: return bytes_of(std::complex<double>(re, value_.imag()));
      default: break;
    }
    return {};
  }();
  std::memcpy(out.data(), r.b.data(), r.n);
  return r.n;
}

Operand Operand::typed(Dtype dtype, double value) {
  Operand probe(value);
  Operand out(0);
  out.weak_ = false;
  if (is_integer(dtype)) {
    const auto b = probe.bytes_as(dtype, "Operand::typed");
    return typed_int(dtype, visit_dtype(dtype, [&](auto t) -> std::int64_t {
                       using T = decltype(t);
                       if constexpr (std::is_integral_v<T>) {
                         T v;
                         std::memcpy(&v, b.data(), sizeof(T));
                         return static_cast<std::int64_t>(v);
                       } else {
                         return 0;
                       }
                     }));
  }
  if (is_complex(dtype)) {
    out.set_complex(std::complex<double>(value, 0), dtype, false);
    return out;
  }
  // The value as the dtype holds it, so that host references see the same number.
  double stored = value;
  if (dtype == Dtype::float32) stored = static_cast<float>(value);
  if (dtype == Dtype::float16) stored = static_cast<float>(float16(static_cast<float>(value)));
  if (dtype == Dtype::bfloat16) stored = static_cast<float>(bfloat16(static_cast<float>(value)));
  out.set_float(stored, dtype, false);
  return out;
}

Operand Operand::typed(Dtype dtype, std::complex<double> value) {
  if (!is_complex(dtype)) {
    if (value.imag() != 0) {
      Operand(value).bytes_as(dtype, "Operand::typed");  // raises
    }
    return typed(dtype, value.real());
  }
  Operand out(0);
  if (dtype == Dtype::complex64) value = std::complex<double>(std::complex<float>(value));
  out.set_complex(value, dtype, false);
  return out;
}

Operand Operand::typed_int(Dtype dtype, std::int64_t value) {
  if (!is_integer(dtype)) return typed(dtype, static_cast<double>(value));
  Operand probe(value);
  (void)probe.bytes_as(dtype, "Operand::typed_int");  // range check
  Operand out(0);
  if (is_signed(dtype)) {
    out.set_int(value, dtype, false);
  } else {
    out.set_uint(static_cast<std::uint64_t>(value), dtype, false);
  }
  return out;
}

// --- promotion ---------------------------------------------------------------------------------

namespace {
bool is_half_dtype(Dtype d) { return d == Dtype::float16 || d == Dtype::bfloat16; }

// 0: integer, 1: float, 2: complex.
int kind_rank(Dtype d) { return is_complex(d) ? 2 : is_integer(d) ? 0 : 1; }
}  // namespace

Dtype promote_types(Dtype a, Dtype b) {
  if (is_record(a)) detail::raise_record_dtype(a, "skein::promote_types");
  if (is_record(b)) detail::raise_record_dtype(b, "skein::promote_types");
  if (a == b) return a;
  if (is_half_dtype(a) || is_half_dtype(b)) {
    if (is_half_dtype(a) && is_half_dtype(b)) return Dtype::float32;  // float16 + bfloat16
    const Dtype h = is_half_dtype(a) ? a : b;
    const Dtype o = is_half_dtype(a) ? b : a;
    if (is_integer(o)) {
      if (itemsize(o) == 1) return h;
      return itemsize(o) == 2 ? Dtype::float32 : Dtype::float64;
    }
    return o;  // float32, float64, complex64, complex128 all hold a 16-bit float
  }
  return result_type({a, b});
}

namespace {

// result_type over any range of operands, `at` giving each one: the public function's span and the
// built-ins' arrays of addresses (they ask it of their arguments without copying them: a copy of
// an array operand is two atomic reference counts), neither allocating.
template <class Range, class At>
Dtype result_type_over(const Range& operands, At at) {
  if (operands.empty()) {
    detail::raise_in(SKEIN_HERE, "skein::result_type", "Pass at least one operand.", "no operands");
  }
  std::optional<Dtype> strong;
  int weak_kind = -1;
  for (const auto& e : operands) {
    const Operand& o = at(e);
    if (is_record(o.dtype())) detail::raise_record_dtype(o.dtype(), "skein::result_type");
    if (o.weak()) {
      weak_kind = std::max(weak_kind, kind_rank(o.dtype()));
    } else {
      strong = strong ? promote_types(*strong, o.dtype()) : o.dtype();
    }
  }
  if (!strong) {
    return weak_kind == 2 ? Dtype::complex128 : weak_kind == 1 ? Dtype::float64 : Dtype::int64;
  }
  Dtype r = *strong;
  if (weak_kind > kind_rank(r)) {
    if (weak_kind == 1) {
      r = Dtype::float64;  // integers meeting a weak float: NumPy's default float
    } else if (is_integer(r)) {
      r = Dtype::complex128;
    } else {
      r = (r == Dtype::float64) ? Dtype::complex128 : Dtype::complex64;
    }
  }
  // A weak integer must fit an integer result (NumPy 2 raises OverflowError).
  if (is_integer(r)) {
    for (const auto& e : operands) {
      const Operand& o = at(e);
      if (o.weak()) (void)o.bytes_as(r, "skein::result_type (a weak integer scalar)");
    }
  }
  return r;
}

}  // namespace

Dtype result_type(std::span<const Operand> operands) {
  return result_type_over(operands, [](const Operand& o) -> const Operand& { return o; });
}

Dtype detail::result_type_of(std::span<const Operand* const> operands) {
  return result_type_over(operands, [](const Operand* o) -> const Operand& { return *o; });
}

}  // namespace skein
