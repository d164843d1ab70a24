// SPDX-License-Identifier: BSD-3-Clause
#include "skein/dtype.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "record_registry.hpp"
#include "skein/detail/errors.hpp"

namespace skein {

std::size_t itemsize(Dtype dtype) {
  if (is_record(dtype)) return detail::record_entry(dtype, "skein::itemsize").itemsize;
  return visit_dtype(dtype, [](auto v) { return sizeof(v); });
}

std::string_view name(Dtype dtype) {
  if (is_record(dtype)) return detail::record_entry(dtype, "skein::name").cname;
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
  if (auto r = detail::record_by_name(text)) return *r;
  std::string valid;
  for (Dtype d : all_dtypes) valid += (valid.empty() ? "" : ", ") + std::string(name(d));
  const std::string records = detail::record_names();
  if (!records.empty()) valid += "; records: " + records;
  detail::raise_in(SKEIN_HERE, "dtype_from_name", "Valid names: " + valid + ".",
                   "unknown dtype '{}'", text);
}

bool is_integer(Dtype d) { return d <= Dtype::uint64; }
bool is_signed(Dtype d) { return d <= Dtype::int64 || (d >= Dtype::float16 && !is_record(d)); }
bool is_floating(Dtype d) { return d >= Dtype::float16 && d <= Dtype::float64; }
bool is_complex(Dtype d) { return d == Dtype::complex64 || d == Dtype::complex128; }

Dtype min_scalar_type_of_int(std::int64_t v, bool force_signed) {
  if (v >= 0) return min_scalar_type_of_uint(static_cast<std::uint64_t>(v), force_signed);
  if (v >= INT8_MIN) return Dtype::int8;
  if (v >= INT16_MIN) return Dtype::int16;
  if (v >= INT32_MIN) return Dtype::int32;
  return Dtype::int64;
}

Dtype min_scalar_type_of_uint(std::uint64_t v, bool force_signed) {
  if (force_signed) {
    if (v <= INT8_MAX) return Dtype::int8;
    if (v <= INT16_MAX) return Dtype::int16;
    if (v <= INT32_MAX) return Dtype::int32;
    if (v <= INT64_MAX) return Dtype::int64;
    detail::raise_in(SKEIN_HERE, "skein::min_scalar_type",
                     "Values above 2**63 - 1 fit uint64 only: pass force_signed = false.",
                     "{} fits no signed dtype", v);
  }
  if (v <= UINT8_MAX) return Dtype::uint8;
  if (v <= UINT16_MAX) return Dtype::uint16;
  if (v <= UINT32_MAX) return Dtype::uint32;
  return Dtype::uint64;
}

Dtype min_scalar_type(double v) {
  const double a = std::fabs(v);
  if (!(a <= std::numeric_limits<double>::max()) || a <= 65504.0) return Dtype::float16;
  if (a <= static_cast<double>(std::numeric_limits<float>::max())) return Dtype::float32;
  return Dtype::float64;
}

Dtype min_scalar_type(std::complex<double> v) {
  const double m = static_cast<double>(std::numeric_limits<float>::max());
  auto fits = [m](double x) {
    return !(std::fabs(x) <= std::numeric_limits<double>::max()) || std::fabs(x) <= m;
  };
  return fits(v.real()) && fits(v.imag()) ? Dtype::complex64 : Dtype::complex128;
}

Dtype complex_for(Dtype d) {
  if (d == Dtype::float32) return Dtype::complex64;
  if (d == Dtype::float64) return Dtype::complex128;
  detail::raise_in(SKEIN_HERE, "skein::complex_for", "Pass float32 or float64.",
                   "{} has no complex counterpart", name(d));
}

Dtype real_for(Dtype d) {
  if (d == Dtype::complex64) return Dtype::float32;
  if (d == Dtype::complex128) return Dtype::float64;
  detail::raise_in(SKEIN_HERE, "skein::real_for", "Pass complex64 or complex128.",
                   "{} is not a complex dtype", name(d));
}

void detail::raise_record_dtype(Dtype dtype, std::string_view call) {
  const auto* entry = detail::find_record(dtype);
  const std::string n = entry ? entry->cname : fmt::format("<unregistered value {}>", int(dtype));
  detail::raise_in(
      SKEIN_HERE, call,
      "Work on its numeric fields: extract_field (skein/records.hpp) gives a view of "
      "one, or write an ElementwiseKernel / ReductionKernel over the struct.",
      "record dtype '{}' is a struct, not a number: this call takes numeric dtypes only", n);
}

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
