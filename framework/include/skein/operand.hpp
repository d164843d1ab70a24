// SPDX-License-Identifier: BSD-3-Clause
// The arguments of generated kernels (elementwise, reduction, stencil and fused kernels): an Array
// or a scalar, and NumPy 2's type promotion over them. skein/elementwise.hpp includes this header,
// so code that includes that one has these too.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "skein/array.hpp"
#include "skein/dtype.hpp"
#include "skein/export.hpp"

namespace skein {

// An argument of an elementwise or reduction kernel: an Array, or a scalar.
//
// C++ scalars are *weak* in type promotion, as Python scalars are in NumPy 2 (NEP 50): only
// their kind (integer, float, complex) counts, so `2.0 * x` with a float32 x stays float32 and
// `3 + x` with an int8 x stays int8 (an integer that does not fit raises LogicError, as NumPy's
// OverflowError). float16 / bfloat16 values and Operand::typed() scalars are strong: their dtype
// promotes like an array's.
class SKEIN_EXPORT Operand {
 public:
  Operand(const Array& array);  // NOLINT: implicit on purpose
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  Operand(T value) {  // NOLINT
    if constexpr (std::is_floating_point_v<T>) {
      set_float(static_cast<double>(value), sizeof(T) == 4 ? Dtype::float32 : Dtype::float64, true);
    } else if constexpr (std::is_signed_v<T>) {
      set_int(static_cast<std::int64_t>(value), int_dtype(sizeof(T), true), true);
    } else {
      set_uint(static_cast<std::uint64_t>(value), int_dtype(sizeof(T), false), true);
    }
  }
  template <class T>
  Operand(std::complex<T> value) {  // NOLINT
    set_complex(std::complex<double>(value), dtype_of<std::complex<T>>, true);
  }
  Operand(float16 value) {
    set_float(static_cast<double>(static_cast<float>(value)), Dtype::float16, false);
  }
  Operand(bfloat16 value) {
    set_float(static_cast<double>(static_cast<float>(value)), Dtype::bfloat16, false);
  }

  // A strongly typed scalar: `value` converted to `dtype` (promotes like an array of `dtype`).
  // LogicError when the value does not fit (an integer out of range, a complex value for a real
  // dtype, a fraction for an integer dtype).
  static Operand typed(Dtype dtype, double value);
  static Operand typed(Dtype dtype, std::complex<double> value);
  static Operand typed_int(Dtype dtype, std::int64_t value);

  bool is_array() const { return array_.has_value(); }
  bool is_scalar() const { return !array_.has_value(); }
  const Array& array() const;  // LogicError for a scalar
  // The array's dtype, or the scalar's natural dtype (int -> int32, double -> float64, ...).
  Dtype dtype() const;
  // Whether the scalar is weak in promotion (see above); false for arrays.
  bool weak() const { return !array_ && weak_; }
  // The scalar's value (for messages and host-side references).
  std::complex<double> value() const { return value_; }
  std::string to_string() const;

  // The scalar's bytes as `dtype` (float16/bfloat16 as their bits). Converting a complex value to
  // a real dtype, a non-integral float to an integer dtype, or an integer that does not fit, raises
  // LogicError naming `what` (e.g. "argument 'a' of kernel 'axpy'"); with `truncate` set, floats
  // are truncated toward zero and integers wrap as in C instead (NumPy's fill / astype).
  std::vector<std::byte> bytes_as(Dtype dtype, std::string_view what, bool truncate = false) const;
  // The same into `out` without allocating (what a launch per call wants); returns the number of
  // bytes written (itemsize(dtype)).
  std::size_t bytes_into(Dtype dtype, std::span<std::byte, 16> out, std::string_view what,
                         bool truncate = false) const;

 private:
  static Dtype int_dtype(std::size_t size, bool is_signed);
  void set_int(std::int64_t v, Dtype d, bool weak);
  void set_uint(std::uint64_t v, Dtype d, bool weak);
  void set_float(double v, Dtype d, bool weak);
  void set_complex(std::complex<double> v, Dtype d, bool weak);

  std::optional<Array> array_;
  Dtype dtype_ = Dtype::int32;
  bool weak_ = true;
  enum class Kind : std::uint8_t {
    integer,
    unsigned_integer,
    floating,
    complex
  } kind_ = Kind::integer;
  std::int64_t int_ = 0;
  std::uint64_t uint_ = 0;
  std::complex<double> value_;
};

// NumPy 2's promotion over arrays and scalars (weak C++ scalars count by kind only, see Operand),
// extended to float16 and bfloat16: int8/uint8 + float16 -> float16, int16 + float16 -> float32,
// int32 + float16 -> float64 (as NumPy), bfloat16 the same as float16, and float16 + bfloat16 ->
// float32 (as ml_dtypes). Integers: int32 + float32 -> float64, int64 + uint64 -> float64,
// int8 + uint8 -> int16. LogicError for an empty list or a weak integer that does not fit.
SKEIN_EXPORT Dtype result_type(std::span<const Operand> operands);
// Two dtypes (both strong).
SKEIN_EXPORT Dtype promote_types(Dtype a, Dtype b);

}  // namespace skein
