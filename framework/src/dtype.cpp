// SPDX-License-Identifier: BSD-3-Clause
#include "skein/dtype.hpp"

#include <fmt/format.h>

#include "skein/detail/errors.hpp"

namespace skein {

std::size_t itemsize(Dtype dtype) {
  return visit_dtype(dtype, [](auto v) { return sizeof(v); });
}

std::string_view name(Dtype dtype) {
  switch (dtype) {
    case Dtype::int8: return "int8";
    case Dtype::int16: return "int16";
    case Dtype::int32: return "int32";
    case Dtype::int64: return "int64";
    case Dtype::uint8: return "uint8";
    case Dtype::uint16: return "uint16";
    case Dtype::uint32: return "uint32";
    case Dtype::uint64: return "uint64";
    case Dtype::float16: return "float16";
    case Dtype::bfloat16: return "bfloat16";
    case Dtype::float32: return "float32";
    case Dtype::float64: return "float64";
    case Dtype::complex64: return "complex64";
    case Dtype::complex128: return "complex128";
  }
  return "unknown";
}

Dtype dtype_from_name(std::string_view text) {
  for (Dtype d : all_dtypes) {
    if (name(d) == text) return d;
  }
  std::string valid;
  for (Dtype d : all_dtypes) valid += (valid.empty() ? "" : ", ") + std::string(name(d));
  detail::raise_in(SKEIN_HERE, "dtype_from_name", "Valid names: " + valid + ".",
                   "unknown dtype '{}'", text);
}

bool is_integer(Dtype d) { return d <= Dtype::uint64; }
bool is_signed(Dtype d) { return d <= Dtype::int64 || d >= Dtype::float16; }
bool is_floating(Dtype d) { return d >= Dtype::float16 && d <= Dtype::float64; }
bool is_complex(Dtype d) { return d == Dtype::complex64 || d == Dtype::complex128; }

float16::float16(float value) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t exp = (f >> 23) & 0xffu;
  std::uint32_t mant = f & 0x7fffffu;
  if (exp == 0xffu) {  // inf or NaN (keep NaN quiet and non-zero)
    bits = static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    return;
  }
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) {  // overflow to infinity
    bits = static_cast<std::uint16_t>(sign | 0x7c00u);
    return;
  }
  if (e <= 0) {  // subnormal half or zero
    if (e < -10) {
      bits = static_cast<std::uint16_t>(sign);
      return;
    }
    mant |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t half = mant >> shift;
    const std::uint32_t rest = mant & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    bits = static_cast<std::uint16_t>(sign | half);
    return;
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into inf: correct
  bits = static_cast<std::uint16_t>(sign | half);
}

float16::operator float() const {
  const std::uint32_t sign = (std::uint32_t(bits) & 0x8000u) << 16;
  const std::uint32_t exp = (bits >> 10) & 0x1fu;
  std::uint32_t mant = bits & 0x3ffu;
  std::uint32_t f;
  if (exp == 0) {
    if (mant == 0) {
      f = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      f = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1fu) {
    f = sign | 0x7f800000u | (mant << 13);
  } else {
    f = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(f);
}

bfloat16::bfloat16(float value) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  if ((f & 0x7f800000u) == 0x7f800000u && (f & 0x7fffffu)) {
    bits = static_cast<std::uint16_t>((f >> 16) | 0x40u);  // quiet NaN
    return;
  }
  const std::uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  bits = static_cast<std::uint16_t>((f + rounding) >> 16);
}

}  // namespace skein
