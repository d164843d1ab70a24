// SPDX-License-Identifier: BSD-3-Clause
// skein::c_constant (skein/records.hpp): a value of any dtype, records included, as C source.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "skein/detail/errors.hpp"
#include "skein/records.hpp"
#include "skein/template.hpp"

namespace skein {

namespace {

constexpr const char* kConstantCall = "skein::c_constant";

template <class T>
T load_at(std::span<const std::byte> bytes, std::size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

// One scalar of a built-in dtype at `at`; `inner`: within a record's initializer (complex as
// braces, no function call).
std::string scalar_constant(std::span<const std::byte> b, std::size_t at, Dtype d, bool inner) {
  switch (d) {
    case Dtype::int8: return fmt::format("{}", load_at<std::int8_t>(b, at));
    case Dtype::int16: return fmt::format("{}", load_at<std::int16_t>(b, at));
    case Dtype::int32: {
      const auto v = load_at<std::int32_t>(b, at);
      return v == std::numeric_limits<std::int32_t>::min() ? "(-2147483647 - 1)"
                                                           : fmt::format("{}", v);
    }
    case Dtype::int64: {
      const auto v = load_at<std::int64_t>(b, at);
      if (v == std::numeric_limits<std::int64_t>::min()) {
        return "((int64_t)(-9223372036854775807 - 1))";
      }
      return fmt::format("((int64_t){})", v);
    }
    case Dtype::uint8: return fmt::format("{}u", load_at<std::uint8_t>(b, at));
    case Dtype::uint16: return fmt::format("{}u", load_at<std::uint16_t>(b, at));
    case Dtype::uint32: return fmt::format("{}u", load_at<std::uint32_t>(b, at));
    case Dtype::uint64: return fmt::format("((uint64_t){}u)", load_at<std::uint64_t>(b, at));
    case Dtype::float16:
    case Dtype::bfloat16: return fmt::format("{{{}}}", load_at<std::uint16_t>(b, at));
    case Dtype::float32: return literal(load_at<float>(b, at));
    case Dtype::float64: return literal(load_at<double>(b, at));
    case Dtype::complex64:
    case Dtype::complex128: {
      const bool single = d == Dtype::complex64;
      const std::string re =
          single ? literal(load_at<float>(b, at)) : literal(load_at<double>(b, at));
      const std::string im =
          single ? literal(load_at<float>(b, at + 4)) : literal(load_at<double>(b, at + 8));
      if (inner) return fmt::format("{{{}, {}}}", re, im);
      return fmt::format("skein_make_{}({}, {})", single ? "complex64" : "complex128", re, im);
    }
  }
  detail::raise_in(SKEIN_HERE, kConstantCall, {}, "invalid dtype value {}", int(d));
}

std::string record_constant(std::span<const std::byte> b, std::size_t at, const StructType& type) {
  std::string out = "{";
  const auto offsets = type.offsets();
  for (std::size_t k = 0; k < type.fields().size(); ++k) {
    const auto& f = type.fields()[k];
    const std::size_t size =
        f.is_struct() ? std::get<1>(f.type)->itemsize() : itemsize(std::get<0>(f.type));
    auto one = [&](std::size_t pos) {
      return f.is_struct() ? record_constant(b, pos, *std::get<1>(f.type))
                           : scalar_constant(b, pos, std::get<0>(f.type), true);
    };
    out += k ? ", " : "";
    if (f.count) {
      out += "{";
      for (std::size_t i = 0; i < f.count; ++i) {
        out += (i ? ", " : "") + one(at + offsets[k] + i * size);
      }
      out += "}";
    } else {
      out += one(at + offsets[k]);
    }
  }
  return out + "}";
}

}  // namespace

std::string c_constant(std::span<const std::byte> element, Dtype dtype) {
  if (element.size() != itemsize(dtype)) {
    detail::raise_in(SKEIN_HERE, kConstantCall, "Pass exactly one element's bytes.",
                     "{} bytes given for one {} element of {} bytes", element.size(), name(dtype),
                     itemsize(dtype));
  }
  if (is_record(dtype)) return record_constant(element, 0, record_type(dtype));
  return scalar_constant(element, 0, dtype, false);
}

std::string c_constant(const Operand& value, Dtype dtype) {
  if (is_record(dtype)) detail::raise_record_dtype(dtype, kConstantCall);
  const auto bytes = value.bytes_as(dtype, kConstantCall);
  return c_constant(std::span<const std::byte>(bytes), dtype);
}

std::string c_constant(const Operand& value) {
  if (value.is_array()) {
    detail::raise_in(SKEIN_HERE, kConstantCall, "Pass a scalar.", "an array has no C constant");
  }
  return c_constant(value, value.dtype());
}

}  // namespace skein
