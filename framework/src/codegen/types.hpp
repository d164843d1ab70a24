// SPDX-License-Identifier: BSD-3-Clause
// The code-generation module (framework/src/codegen/, namespace skein::detail::codegen): what every
// kernel generator shares, below the kernel layers that use it (elementwise, reduction, stencil
// and fused kernels, and Array's copy kernel). It includes none of their headers, nor Array's:
// what needs an Array or an Operand is in kernel_operands.hpp, for the kernel layers only.
//
// This file: dtypes as generated C code sees them (type names, compute types, loads and stores,
// conversions), and the C text of an array parameter.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "skein/dtype.hpp"

namespace skein::detail::codegen {

// A dtype from a parameter's type name: NumPy's names and the C names of ctypes.hpp (float is
// float32, double float64, int int32, ...). std::nullopt for anything else (a placeholder).
std::optional<Dtype> dtype_from_type_name(std::string_view name);
// The type an element is computed in: float for float16 / bfloat16, else the dtype's ctype.
std::string compute_ctype(Dtype dtype);
Dtype compute_dtype(Dtype dtype);
// Elements per chunk of the vector paths for arrays of this itemsize: the fewest whose bytes are
// whole 16-byte words (16 / gcd(itemsize, 16): 16 / itemsize for every built-in dtype, 2 for a
// 40-byte record). A power of two.
std::size_t vector_width(std::size_t itemsize);
// C expressions: a stored element (storage type) as its compute type, and back.
std::string load_value(Dtype dtype, const std::string& stored);
std::string store_value(Dtype dtype, const std::string& computed);
// A compute value of `from` converted to the compute type of `to` (real -> complex sets a zero
// imaginary part; complex -> real is the caller's to refuse).
std::string convert_value(Dtype from, Dtype to, const std::string& value);
// The C function that makes a complex value of `dtype` (complex64, complex128) from its real and
// imaginary parts: "skein_make_complex64".
std::string make_complex(Dtype dtype);
// The kernel-side C type of a scalar parameter: uint16_t for float16/bfloat16 (bits), else ctype.
std::string scalar_param_ctype(Dtype dtype);

bool is_identifier(std::string_view s);

// Kernel parameter declarations and setup for arrays, by the names the generated code uses.
std::string array_param(
    const std::string& name);  // "GLOBAL_MEM char* _skein_b_NAME, const uint64_t _skein_o_NAME"
// "GLOBAL_MEM [const] T* _skein_p_NAME = (GLOBAL_MEM [const] T*)(_skein_b_NAME + _skein_o_NAME);"
std::string array_pointer(const std::string& name, const std::string& storage_type, bool is_const);

}  // namespace skein::detail::codegen
