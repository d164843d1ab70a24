// SPDX-License-Identifier: BSD-3-Clause
// The source put in front of every OpenCL kernel: grunnur's kernel toolbox, so that one kernel
// source also compiles for CUDA (skein/detail/cuda/prelude.hpp defines the same names there).
#pragma once

#include <string_view>

namespace skein::detail::opencl {

inline constexpr std::string_view prelude = R"SKEIN(
#define OPENCL

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define SKEIN_HAS_FLOAT64 1
#endif

#define KERNEL __kernel
#define WITHIN_KERNEL
// static: under C99 inline rules a plain `inline` function has no external definition, and a
// compiler that does not inline the call (NVIDIA's with -cl-opt-disable) then cannot link it.
#define INLINE static inline
#define GLOBAL_MEM __global
/* A pointer parameter that no other pointer of the kernel aliases. */
#define RESTRICT restrict
#define LOCAL_MEM __local
#define LOCAL_MEM_DYNAMIC __local
/* Dynamic local memory in one source for both backends (LocalMem in skein/program.hpp): the
   PARAM macro ends the kernel's parameter list, the DECL macro opens its body. */
#define LOCAL_MEM_DYNAMIC_PARAM(type, name) , __local type* name
#define LOCAL_MEM_DYNAMIC_DECL(type, name) typedef int skein_local_mem_dynamic_##name
#define LOCAL_MEM_ARG __local
#define CONSTANT_MEM __constant
#define CONSTANT_MEM_ARG __constant
#define LOCAL_BARRIER barrier(CLK_LOCAL_MEM_FENCE)
#define ALIGN(x) __attribute__((aligned(x)))

/* Fixed-size integers under their <stdint.h> names, as on CUDA (OpenCL's char is signed). */
typedef char int8_t;
typedef uchar uint8_t;
typedef short int16_t;
typedef ushort uint16_t;
typedef int int32_t;
typedef uint uint32_t;
typedef long int64_t;
typedef ulong uint64_t;

/* Ids as OpenCL gives them (grunnur's SIZE_T); VSIZE_T holds virtual sizes past 2^32 on every
   device, whatever its size_t. */
#define SIZE_T size_t
#define VSIZE_T uint64_t

/* Storage-only 16-bit floats: half arithmetic would need cl_khr_fp16, but vload_half and
   vstore_half are core. */
typedef struct ALIGN(2) { ushort bits; } skein_float16;
typedef struct ALIGN(2) { ushort bits; } skein_bfloat16;

WITHIN_KERNEL INLINE float skein_float16_to_float(skein_float16 h) {
  return vload_half(0, (const half*)&h.bits);
}
WITHIN_KERNEL INLINE skein_float16 skein_float16_from_float(float f) {
  skein_float16 h;
  vstore_half_rte(f, 0, (half*)&h.bits);
  return h;
}
#define skein_float_as_uint(x) as_uint(x)
#define skein_uint_as_float(x) as_float(x)

/* Complex numbers: one definition on both backends, aligned like float2 / double2. Structs rather
   than float2, whose operators would treat complex * real as a vector product. */
typedef struct ALIGN(8) { float re, im; } skein_complex64;

WITHIN_KERNEL INLINE skein_complex64 skein_make_complex64(float re, float im) {
  skein_complex64 c;
  c.re = re;
  c.im = im;
  return c;
}

#ifdef SKEIN_HAS_FLOAT64
typedef struct ALIGN(16) { double re, im; } skein_complex128;

WITHIN_KERNEL INLINE skein_complex128 skein_make_complex128(double re, double im) {
  skein_complex128 c;
  c.re = re;
  c.im = im;
  return c;
}
#endif

/* bfloat16 is the upper half of a float: the same code on both backends. */
WITHIN_KERNEL INLINE float skein_bfloat16_to_float(skein_bfloat16 h) {
  return skein_uint_as_float((uint32_t)h.bits << 16);
}
WITHIN_KERNEL INLINE skein_bfloat16 skein_bfloat16_from_float(float f) {
  uint32_t u = skein_float_as_uint(f);
  skein_bfloat16 h;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    h.bits = (ushort)((u >> 16) | 0x40u); /* NaN stays NaN after truncation */
  } else {
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    h.bits = (ushort)(u >> 16);
  }
  return h;
}
)SKEIN";

}  // namespace skein::detail::opencl
