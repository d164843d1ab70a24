// SPDX-License-Identifier: BSD-3-Clause
// Arithmetic over real and complex dtypes as modules, because kernel C has no complex operators
// (and OpenCL no overloading): each factory returns a Module defining one
// `WITHIN_KERNEL INLINE` function named by the module's prefix, called in a kernel as
// `${mul}(a, b)` with `mul` bound to functions::mul(...) in the render globals.
//
// Supported dtypes: integers, float32, float64, complex64, complex128 (float16 and bfloat16 are
// storage-only: only cast() takes them). Mixed inputs promote like NumPy (result_type); an
// explicit `out` sets the return type instead, and inputs are converted to it (a real input to
// its real part type, so complex * real scales both parts and never multiplies by a zero
// imaginary part). Dropping an imaginary part is never implicit: those combinations, and
// functions that do not apply to a dtype, throw LogicError naming the function and dtypes.
// Each call returns a new module; bind one module per function in the globals and use it as
// often as needed.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "skein/dtype.hpp"
#include "skein/export.hpp"
#include "skein/template.hpp"

namespace skein {

// NumPy's promotion of dtypes (int32 + float32 -> float64, complex64 + float64 -> complex128,
// int64 + uint64 -> float64). Throws LogicError for an empty list, float16 or bfloat16.
SKEIN_EXPORT Dtype result_type(std::span<const Dtype> dtypes);
inline Dtype result_type(std::initializer_list<Dtype> dtypes) {
  return result_type(std::span<const Dtype>(dtypes.begin(), dtypes.size()));
}

namespace functions {

// out f(in0 a0, in1 a1, ...): the sum / product of one or more values.
SKEIN_EXPORT Module add(const std::vector<Dtype>& in, std::optional<Dtype> out = std::nullopt);
SKEIN_EXPORT Module mul(const std::vector<Dtype>& in, std::optional<Dtype> out = std::nullopt);

// out f(dividend a, divisor b): a / b. Integers divide like C (truncating).
SKEIN_EXPORT Module div(Dtype dividend, Dtype divisor, std::optional<Dtype> out = std::nullopt);

// dtype f(dtype a): the complex conjugate; a real value unchanged.
SKEIN_EXPORT Module conj(Dtype dtype);

// dtype f(dtype a): e^a, for a float or complex dtype.
SKEIN_EXPORT Module exp(Dtype dtype);

// out f(base a, exponent n): a^n. `exponent` defaults to `base` (to its real part type for a
// complex base) and `out` to `base`; the base is converted to `out` first. An integer exponent
// is applied by repeated squaring (exact for integers; a negative one gives 1/a^|n| for floats
// and complex, and for integers 0 unless a is 1 or -1); a float exponent uses pow (or polar form
// for a complex base). Complex exponents are not supported; a float exponent with an integer
// `out` throws LogicError.
SKEIN_EXPORT Module pow(Dtype base, std::optional<Dtype> exponent = std::nullopt,
                        std::optional<Dtype> out = std::nullopt);

// complex f(float rho, float theta): rho * e^(i theta), complex of the float's precision.
SKEIN_EXPORT Module polar(Dtype dtype);
// complex f(float theta): e^(i theta) = (cos theta, sin theta).
SKEIN_EXPORT Module polar_unit(Dtype dtype);

// f(a): |a|^2 (re^2 + im^2 as the real part type for complex, a * a for reals).
SKEIN_EXPORT Module norm(Dtype dtype);

// to f(from a): the value converted; real -> complex sets a zero imaginary part, float16 and
// bfloat16 convert through float32. complex -> real throws LogicError (take .re explicitly).
SKEIN_EXPORT Module cast(Dtype from, Dtype to);

}  // namespace functions
}  // namespace skein
