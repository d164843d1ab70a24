// SPDX-License-Identifier: BSD-3-Clause
// The source put in front of every CUDA kernel: grunnur's kernel toolbox, so that one kernel
// source also compiles for OpenCL (skein/detail/opencl/prelude.hpp defines the same names there).
// NVRTC compiles without system headers, so nothing here includes any.
#pragma once

#include <string_view>

namespace skein::detail::cuda {

inline constexpr std::string_view prelude = R"SKEIN(
#define CUDA

#define KERNEL extern "C" __global__
#define WITHIN_KERNEL __device__
#define INLINE __forceinline__
#define GLOBAL_MEM
/* A pointer parameter that no other pointer of the kernel aliases. */
#define RESTRICT __restrict__
#define LOCAL_MEM __shared__
#define LOCAL_MEM_DYNAMIC extern __shared__
/* Dynamic local memory in one source for both backends (LocalMem in skein/program.hpp): the
   PARAM macro ends the kernel's parameter list, the DECL macro opens its body. One untyped
   extern array for every kernel, so that kernels of one program may use different types. */
#define LOCAL_MEM_DYNAMIC_PARAM(type, name)
#define LOCAL_MEM_DYNAMIC_DECL(type, name) \
  extern __shared__ __align__(16) unsigned char skein_local_mem_dynamic[]; \
  type* const name = (type*)skein_local_mem_dynamic
#define LOCAL_MEM_ARG
#define CONSTANT_MEM __constant__
#define CONSTANT_MEM_ARG
#define LOCAL_BARRIER __syncthreads()
#define ALIGN(x) __align__(x)

/* Fixed-size integers under their <stdint.h> names ("long" is 32-bit on Windows, so not used). */
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;

/* Ids as the hardware gives them (grunnur's SIZE_T); VSIZE_T holds virtual sizes past 2^32. */
#define SIZE_T unsigned int
#define VSIZE_T uint64_t

/* OpenCL's work-item functions; dimension 0 is x. Past the third dimension, like OpenCL: id 0,
   size 1. */
WITHIN_KERNEL INLINE SIZE_T get_local_id(unsigned int dim) {
  return dim == 0 ? threadIdx.x : dim == 1 ? threadIdx.y : dim == 2 ? threadIdx.z : 0;
}
WITHIN_KERNEL INLINE SIZE_T get_group_id(unsigned int dim) {
  return dim == 0 ? blockIdx.x : dim == 1 ? blockIdx.y : dim == 2 ? blockIdx.z : 0;
}
WITHIN_KERNEL INLINE SIZE_T get_local_size(unsigned int dim) {
  return dim == 0 ? blockDim.x : dim == 1 ? blockDim.y : dim == 2 ? blockDim.z : 1;
}
WITHIN_KERNEL INLINE SIZE_T get_num_groups(unsigned int dim) {
  return dim == 0 ? gridDim.x : dim == 1 ? gridDim.y : dim == 2 ? gridDim.z : 1;
}
WITHIN_KERNEL INLINE SIZE_T get_global_id(unsigned int dim) {
  return get_group_id(dim) * get_local_size(dim) + get_local_id(dim);
}
WITHIN_KERNEL INLINE SIZE_T get_global_size(unsigned int dim) {
  return get_num_groups(dim) * get_local_size(dim);
}

/* Storage-only 16-bit floats (cuda_fp16.h is not assumed); PTX converts in one instruction. */
typedef struct ALIGN(2) { unsigned short bits; } skein_float16;
typedef struct ALIGN(2) { unsigned short bits; } skein_bfloat16;

WITHIN_KERNEL INLINE float skein_float16_to_float(skein_float16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
WITHIN_KERNEL INLINE skein_float16 skein_float16_from_float(float f) {
  skein_float16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}
#define skein_float_as_uint(x) __float_as_uint(x)
#define skein_uint_as_float(x) __uint_as_float(x)
/* OpenCL C's INFINITY and NAN (float; they convert to double exactly): NVRTC has no math headers. */
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif

/* Complex numbers: one definition on both backends, aligned like float2 / double2. */
typedef struct ALIGN(8) { float re, im; } skein_complex64;
typedef struct ALIGN(16) { double re, im; } skein_complex128;
#define SKEIN_HAS_FLOAT64 1

WITHIN_KERNEL INLINE skein_complex64 skein_make_complex64(float re, float im) {
  skein_complex64 c;
  c.re = re;
  c.im = im;
  return c;
}
WITHIN_KERNEL INLINE skein_complex128 skein_make_complex128(double re, double im) {
  skein_complex128 c;
  c.re = re;
  c.im = im;
  return c;
}

/* bfloat16 is the upper half of a float: the same code on both backends. */
WITHIN_KERNEL INLINE float skein_bfloat16_to_float(skein_bfloat16 h) {
  return skein_uint_as_float((uint32_t)h.bits << 16);
}
WITHIN_KERNEL INLINE skein_bfloat16 skein_bfloat16_from_float(float f) {
  uint32_t u = skein_float_as_uint(f);
  skein_bfloat16 h;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    h.bits = (unsigned short)((u >> 16) | 0x40u); /* NaN stays NaN after truncation */
  } else {
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    h.bits = (unsigned short)(u >> 16);
  }
  return h;
}
)SKEIN";

}  // namespace skein::detail::cuda
