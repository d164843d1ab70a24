// SPDX-License-Identifier: BSD-3-Clause
// C types of dtypes and struct types in kernel source, with the same name and layout on both
// backends.
//
// The type names are defined by the backend prelude (which Skein puts in front of every kernel
// source), so one kernel source compiles unchanged for CUDA and OpenCL:
//
//   Dtype       ctype              size  align  defined as (CUDA / OpenCL)
//   int8        int8_t             1     1      signed char / char (OpenCL's char is signed)
//   int16       int16_t            2     2      short / short
//   int32       int32_t            4     4      int / int
//   int64       int64_t            8     8      long long / long
//   uint8..64   uint8_t..uint64_t                the unsigned counterparts (ulong on OpenCL)
//   float32     float              4     4      built in
//   float64     double             8     8      built in (OpenCL: needs cl_khr_fp64)
//   float16     skein_float16      2     2      struct { unsigned short bits; }
//   bfloat16    skein_bfloat16     2     2      struct { unsigned short bits; }
//   complex64   skein_complex64    8     8      struct { float re, im; }, aligned to 8
//   complex128  skein_complex128   16    16     struct { double re, im; }, aligned to 16
//
// The <stdint.h> names are used because they say the size; the prelude defines them itself (no
// system header is available to NVRTC or OpenCL). float16 and bfloat16 are storage-only: OpenCL
// has no half arithmetic without cl_khr_fp16, and CUDA's needs cuda_fp16.h. Kernels convert with
// the prelude's skein_float16_to_float / skein_float16_from_float (and the bfloat16 pair), or
// functions::cast. Complex values are built with skein_make_complex64(re, im) /
// skein_make_complex128(re, im) and operated on with the modules of skein/functions.hpp.
//
// Complex alignment is the whole size (like CUDA's float2/double2), so an array element loads in
// one access. Host std::complex<float> has alignment 4: arrays of it match (same size), but a
// host C++ struct with a complex member may lay out differently from a StructType; build host
// data from StructType::offsets() in that case.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "skein/dtype.hpp"
#include "skein/export.hpp"
#include "skein/template.hpp"

namespace skein {

// The kernel-side C type name of a dtype (table above); a record dtype's is its cname
// (skein/records.hpp). LogicError for an unknown value.
SKEIN_EXPORT std::string ctype(Dtype dtype);

// Alignment of a dtype in kernel code and in StructType layouts: its size, for every built-in
// dtype; a record dtype's is its StructType's alignment().
SKEIN_EXPORT std::size_t alignment_of(Dtype dtype);

class StructType;

// One field: a dtype or a nested struct, a scalar (count == 0) or an array of `count` elements.
struct SKEIN_EXPORT StructField {
  StructField(std::string name, Dtype dtype, std::size_t count = 0);
  StructField(std::string name, const StructType& type, std::size_t count = 0);

  std::string name;
  std::variant<Dtype, std::shared_ptr<const StructType>> type;
  std::size_t count = 0;

  bool is_struct() const noexcept { return type.index() == 1; }
};

// A C struct laid out like a C compiler (and NumPy's aligned dtypes) does: each field at the next
// multiple of its alignment, the struct's alignment the largest of its fields' (or more, after
// align()), the size a multiple of the alignment. ctype_struct() writes a definition that has
// this layout on both backends.
class SKEIN_EXPORT StructType {
 public:
  StructType() = default;
  // StructType{{"a", Dtype::int8}, {"b", Dtype::float64}, {"v", Dtype::float32, 4}}
  StructType(std::initializer_list<StructField> fields);

  // Appends a field. Throws LogicError for a name that is not a C identifier or is taken.
  StructType& add(std::string name, Dtype dtype, std::size_t count = 0);
  StructType& add(std::string name, const StructType& type, std::size_t count = 0);

  const std::vector<StructField>& fields() const noexcept { return fields_; }
  std::vector<std::size_t> offsets() const;
  std::size_t itemsize() const;
  std::size_t alignment() const;

  friend SKEIN_EXPORT bool operator==(const StructType& a, const StructType& b);
  friend SKEIN_EXPORT StructType align(const StructType& type, std::size_t alignment);

 private:
  void push(StructField field);

  std::vector<StructField> fields_;
  std::size_t min_alignment_ = 1;
};

// A copy whose alignment is at least `alignment` (a power of two), so its size is padded to a
// multiple of it: e.g. to make array elements start on 16-byte boundaries.
SKEIN_EXPORT StructType align(const StructType& type, std::size_t alignment);

// The C definition `typedef struct ALIGN(n) { ... } name;` with the layout of `type` (nested
// structs are written inline). ALIGN is the prelude's alignment macro. With ignore_alignment
// (grunnur's option) no ALIGN is written: the compiler lays the fields out naturally, which
// differs from `type` where align() raised an alignment (the struct is then smaller; its fields'
// own alignments still apply, so it is not packed). Throws LogicError for an empty struct or a
// name that is not a C identifier.
SKEIN_EXPORT std::string ctype_struct(const StructType& type, std::string_view name,
                                      bool ignore_alignment = false);

// A module defining the struct under its prefix: `${point} p;` in a kernel. Equal struct types
// (with the same name) give the same module, so every use within a render names one C type
// (structural typing, as grunnur's).
SKEIN_EXPORT Module ctype_module(const StructType& type, std::string name = "struct");

}  // namespace skein
