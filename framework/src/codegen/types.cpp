// SPDX-License-Identifier: BSD-3-Clause
#include "codegen/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "record_registry.hpp"
#include "skein/ctypes.hpp"

namespace skein::detail::codegen {

std::optional<Dtype> dtype_from_type_name(std::string_view text) {
  for (Dtype d : all_dtypes) {
    if (name(d) == text) return d;
  }
  static const std::pair<std::string_view, Dtype> c_names[] = {
      {"float", Dtype::float32},
      {"double", Dtype::float64},
      {"int8_t", Dtype::int8},
      {"int16_t", Dtype::int16},
      {"int32_t", Dtype::int32},
      {"int64_t", Dtype::int64},
      {"uint8_t", Dtype::uint8},
      {"uint16_t", Dtype::uint16},
      {"uint32_t", Dtype::uint32},
      {"uint64_t", Dtype::uint64},
      {"signed char", Dtype::int8},
      {"unsigned char", Dtype::uint8},
      {"short", Dtype::int16},
      {"unsigned short", Dtype::uint16},
      {"int", Dtype::int32},
      {"unsigned int", Dtype::uint32},
      {"unsigned", Dtype::uint32},
      {"long long", Dtype::int64},
      {"unsigned long long", Dtype::uint64},
      {"skein_float16", Dtype::float16},
      {"skein_bfloat16", Dtype::bfloat16},
      {"skein_complex64", Dtype::complex64},
      {"skein_complex128", Dtype::complex128},
  };
  for (const auto& [n, d] : c_names) {
    if (n == text) return d;
  }
  return record_by_name(text);
}

namespace {

bool is_half(Dtype d) { return d == Dtype::float16 || d == Dtype::bfloat16; }

Dtype real_of(Dtype d) {
  if (d == Dtype::complex64) return Dtype::float32;
  if (d == Dtype::complex128) return Dtype::float64;
  return d;
}

}  // namespace

std::size_t vector_width(std::size_t itemsize) { return 16 / std::gcd(itemsize, std::size_t{16}); }

Dtype compute_dtype(Dtype d) { return is_half(d) ? Dtype::float32 : d; }

std::string compute_ctype(Dtype d) { return ctype(compute_dtype(d)); }

std::string load_value(Dtype d, const std::string& stored) {
  if (d == Dtype::float16) return "skein_float16_to_float(" + stored + ")";
  if (d == Dtype::bfloat16) return "skein_bfloat16_to_float(" + stored + ")";
  return stored;
}

std::string store_value(Dtype d, const std::string& computed) {
  if (d == Dtype::float16) return "skein_float16_from_float(" + computed + ")";
  if (d == Dtype::bfloat16) return "skein_bfloat16_from_float(" + computed + ")";
  return computed;
}

std::string convert_value(Dtype from, Dtype to, const std::string& v) {
  from = compute_dtype(from);
  to = compute_dtype(to);
  if (from == to) return v;
  if (is_complex(to)) {
    const std::string make = make_complex(to);
    const std::string r = ctype(real_of(to));
    if (is_complex(from)) return fmt::format("{}(({}){}.re, ({}){}.im)", make, r, v, r, v);
    return fmt::format("{}(({}){}, ({})0)", make, r, v, r);
  }
  if (is_complex(from)) return fmt::format("(({}){}.re)", ctype(to), v);
  return fmt::format("(({})({}))", ctype(to), v);
}

std::string make_complex(Dtype d) { return "skein_make_" + ctype(d).substr(6); }

std::string scalar_param_ctype(Dtype d) { return is_half(d) ? "uint16_t" : ctype(d); }

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

std::string array_param(const std::string& name) {
  return fmt::format("GLOBAL_MEM char* _skein_b_{0}, const uint64_t _skein_o_{0}", name);
}

std::string array_pointer(const std::string& name, const std::string& storage_type, bool is_const) {
  const char* c = is_const ? "const " : "";
  return fmt::format(
      "GLOBAL_MEM {0}{1}* _skein_p_{2} = (GLOBAL_MEM {0}{1}*)(_skein_b_{2} + _skein_o_{2});", c,
      storage_type, name);
}

}  // namespace skein::detail::codegen
