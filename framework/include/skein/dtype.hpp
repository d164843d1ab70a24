// SPDX-License-Identifier: BSD-3-Clause
// Element types of buffers and arrays, as a run-time value (Dtype) and as host C++ types.
#pragma once

#include <bit>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "skein/export.hpp"

namespace skein {

// The element type of an array. The enumerators are the built-in (numeric) dtypes; values from
// first_record_dtype up are record (struct) dtypes made by skein::register_dtype
// (skein/records.hpp), which itemsize(), name(), dtype_from_name(), ctype() and alignment_of()
// know, and which arithmetic, visit_dtype() and the numeric predicates do not (see is_record).
enum class Dtype : std::uint8_t {
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  float16,
  bfloat16,
  float32,
  float64,
  complex64,
  complex128,
};

inline constexpr Dtype all_dtypes[] = {
    Dtype::int8,    Dtype::int16,   Dtype::int32,     Dtype::int64,     Dtype::uint8,
    Dtype::uint16,  Dtype::uint32,  Dtype::uint64,    Dtype::float16,   Dtype::bfloat16,
    Dtype::float32, Dtype::float64, Dtype::complex64, Dtype::complex128};

// The first value of a record dtype (register_dtype hands out values from here up to 255).
inline constexpr std::uint8_t first_record_dtype = 64;

// True for a record (struct) dtype made by register_dtype (skein/records.hpp): not a number.
// Threads: any; the value alone decides.
constexpr bool is_record(Dtype dtype) noexcept {
  return static_cast<std::uint8_t>(dtype) >= first_record_dtype;
}

// Size in bytes of one element (a record's: its StructType's itemsize). LogicError for a value
// that is neither an enumerator nor a registered record.
SKEIN_EXPORT std::size_t itemsize(Dtype dtype);
// NumPy's name: "int8", ..., "float32", "complex128"; a record's: the cname it was registered
// under. LogicError for an unknown value.
SKEIN_EXPORT std::string_view name(Dtype dtype);
// Parses NumPy's names and the names of registered records; throws LogicError listing the valid
// ones.
SKEIN_EXPORT Dtype dtype_from_name(std::string_view name);
// Numeric kinds; all false for a record dtype.
SKEIN_EXPORT bool is_integer(Dtype dtype);
SKEIN_EXPORT bool is_signed(Dtype dtype);
SKEIN_EXPORT bool is_floating(Dtype dtype);
SKEIN_EXPORT bool is_complex(Dtype dtype);

// NumPy's min_scalar_type: the smallest dtype that holds the value. An integer: the smallest
// unsigned type for a value >= 0 (the smallest signed one with force_signed, grunnur's option),
// else the smallest signed one; int64 / uint64 beyond. A float: the smallest of float16, float32,
// float64 whose range holds it (not its precision: 0.1 gives float16, as NumPy; infinities and NaN
// give float16). A complex: complex64 when both parts fit float32's range, else complex128.
// Note float16 is a storage type in kernels (skein/ctypes.hpp).
SKEIN_EXPORT Dtype min_scalar_type_of_int(std::int64_t value, bool force_signed = false);
SKEIN_EXPORT Dtype min_scalar_type_of_uint(std::uint64_t value, bool force_signed = false);
SKEIN_EXPORT Dtype min_scalar_type(double value);
SKEIN_EXPORT Dtype min_scalar_type(std::complex<double> value);
template <class T>
  requires std::is_integral_v<T>
Dtype min_scalar_type(T value, bool force_signed = false) {
  if constexpr (std::is_signed_v<T>) {
    return min_scalar_type_of_int(static_cast<std::int64_t>(value), force_signed);
  } else {
    return min_scalar_type_of_uint(static_cast<std::uint64_t>(value), force_signed);
  }
}

// grunnur's complex_for: the complex dtype of a real one (float32 -> complex64, float64 ->
// complex128). LogicError for any other dtype.
SKEIN_EXPORT Dtype complex_for(Dtype dtype);
// grunnur's real_for: the real dtype of a complex one's parts (complex64 -> float32, complex128 ->
// float64). LogicError for any other dtype.
SKEIN_EXPORT Dtype real_for(Dtype dtype);

namespace detail {
// Throws LogicError saying that `call` (where) does not take the record dtype `dtype`: what
// visit_dtype and the arithmetic do with a record.
[[noreturn]] SKEIN_EXPORT void raise_record_dtype(Dtype dtype, std::string_view call);
}  // namespace detail

// IEEE 754 binary16, stored as its bits; converts to and from float with round-to-nearest-even.
struct SKEIN_EXPORT float16 {
  std::uint16_t bits = 0;
  float16() = default;
  explicit float16(float value);
  explicit operator float() const;
  static float16 from_bits(std::uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
  friend bool operator==(float16 a, float16 b) { return a.bits == b.bits; }
};

// bfloat16: the upper half of a float32, round-to-nearest-even.
struct SKEIN_EXPORT bfloat16 {
  std::uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float value);
  explicit operator float() const { return std::bit_cast<float>(std::uint32_t(bits) << 16); }
  static bfloat16 from_bits(std::uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  friend bool operator==(bfloat16 a, bfloat16 b) { return a.bits == b.bits; }
};

template <class T>
struct dtype_traits;  // no definition: a type without a Dtype fails to compile

#define SKEIN_DTYPE_TRAIT(T, D)              \
  template <>                                \
  struct dtype_traits<T> {                   \
    static constexpr Dtype value = Dtype::D; \
  };
SKEIN_DTYPE_TRAIT(std::int8_t, int8)
SKEIN_DTYPE_TRAIT(std::int16_t, int16)
SKEIN_DTYPE_TRAIT(std::int32_t, int32)
SKEIN_DTYPE_TRAIT(std::int64_t, int64)
SKEIN_DTYPE_TRAIT(std::uint8_t, uint8)
SKEIN_DTYPE_TRAIT(std::uint16_t, uint16)
SKEIN_DTYPE_TRAIT(std::uint32_t, uint32)
SKEIN_DTYPE_TRAIT(std::uint64_t, uint64)
SKEIN_DTYPE_TRAIT(float16, float16)
SKEIN_DTYPE_TRAIT(bfloat16, bfloat16)
SKEIN_DTYPE_TRAIT(float, float32)
SKEIN_DTYPE_TRAIT(double, float64)
SKEIN_DTYPE_TRAIT(std::complex<float>, complex64)
SKEIN_DTYPE_TRAIT(std::complex<double>, complex128)
#undef SKEIN_DTYPE_TRAIT

template <class T>
inline constexpr Dtype dtype_of = dtype_traits<std::remove_cv_t<T>>::value;

// Calls f(T{}) with the host type of a run-time dtype. A record dtype has no such type: LogicError
// naming the dtype and the calling function (`where`, by default the caller's).
template <class F>
decltype(auto) visit_dtype(Dtype dtype, F&& f,
                           std::source_location where = std::source_location::current()) {
  if (is_record(dtype)) detail::raise_record_dtype(dtype, where.function_name());
  switch (dtype) {
    case Dtype::int8: return f(std::int8_t{});
    case Dtype::int16: return f(std::int16_t{});
    case Dtype::int32: return f(std::int32_t{});
    case Dtype::int64: return f(std::int64_t{});
    case Dtype::uint8: return f(std::uint8_t{});
    case Dtype::uint16: return f(std::uint16_t{});
    case Dtype::uint32: return f(std::uint32_t{});
    case Dtype::uint64: return f(std::uint64_t{});
    case Dtype::float16: return f(float16{});
    case Dtype::bfloat16: return f(bfloat16{});
    case Dtype::float32: return f(float{});
    case Dtype::float64: return f(double{});
    case Dtype::complex64: return f(std::complex<float>{});
    case Dtype::complex128: return f(std::complex<double>{});
  }
  return f(std::uint8_t{});  // unreachable for valid enumerators
}

}  // namespace skein
