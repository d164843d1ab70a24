// SPDX-License-Identifier: BSD-3-Clause
// Record (struct) dtypes: a StructType (skein/ctypes.hpp) registered as a Dtype, so that arrays,
// transfers, views and kernels take elements of that struct (pygpu's register_dtype, NumPy's
// structured arrays); the fields of such arrays as views (grunnur's extract_field), the leaves of
// a struct (flatten_dtype), their C paths (c_path), and values of any dtype as C constants
// (c_constant).
//
// What takes a record dtype: Array (empty, zeros, the Array constructor over a buffer, set/get of
// bytes, set(Array) and copy_rect, fill_zero, slice, view, reshape, transpose), skein::copy between
// arrays of the same record dtype, Program (every registered record's C type is defined after the
// prelude, by record_definition; with ProgramOptions::no_prelude the source defines what it uses),
// ElementwiseKernel and ReductionKernel (a parameter declared with the record's name; the
// generated source defines the C types of the records it uses). What refuses it with a LogicError
// naming the dtype and the call: visit_dtype, arithmetic and promotion (result_type,
// promote_types, the built-in elementwise operations and reductions), conversions of scalars
// (Operand::bytes_as), copies to another dtype, host-typed get<T>/set<T>, every collective of a
// Communicator (broadcast and send included), HDF5 files, and a dist grid's constant boundary
// values. The C and Fortran APIs have no record dtypes (skein_dtype lists the built-in ones only:
// skein_dtype_size gives 0 and skein_dtype_name "unknown dtype" for any other value).
#pragma once

#include <complex>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "skein/array.hpp"
#include "skein/ctypes.hpp"
#include "skein/dtype.hpp"
#include "skein/export.hpp"
#include "skein/operand.hpp"

namespace skein {

// pygpu's register_dtype(dtype, cname): a Dtype for arrays of `type`, named `cname` in kernel
// source (ctype(), name() and dtype_from_name() give and take it). Registering an equal
// StructType under the same cname again returns the same Dtype. LogicError for an empty struct,
// a cname that is not a C identifier, is a built-in dtype's name or C type, or is taken by a
// different struct (register it under another name), and when 192 records are registered.
// Registrations last for the process. Threads: any (the registry is locked).
// A StructType field of a record dtype (StructType{{"p", point}}) is kept as that record's
// StructType, nested: it is written inline by ctype_struct and flattened by flatten_dtype.
SKEIN_EXPORT Dtype register_dtype(const StructType& type, std::string cname);

// The StructType of a record dtype. LogicError for a built-in dtype. Threads: any.
SKEIN_EXPORT const StructType& record_type(Dtype dtype);

// Every registered record dtype, in registration order. Threads: any.
SKEIN_EXPORT std::vector<Dtype> record_dtypes();

// The C definition of a record's type under its cname (ctype_struct), in an #ifndef guard so that
// a source may hold it more than once. LogicError for a built-in dtype.
SKEIN_EXPORT std::string record_definition(Dtype dtype);
// The definitions of the distinct record dtypes among `dtypes` (built-in ones are skipped), in
// the order they first appear; "" when there are none.
SKEIN_EXPORT std::string record_definitions(std::span<const Dtype> dtypes);

// A path to a part of a struct: field names and array indices (grunnur's path), e.g.
// {"a", "b", 2} for a.b[2].
using FieldPath = std::vector<std::variant<std::string, std::size_t>>;

// One leaf of a flattened struct: its path, its dtype (built in) and its byte offset in the
// struct.
struct FlatField {
  FieldPath path;
  Dtype dtype;
  std::size_t offset = 0;
};

// grunnur's flatten_dtype: every scalar leaf of a (possibly nested) struct, array fields
// unrolled element by element, in memory order of declaration.
SKEIN_EXPORT std::vector<FlatField> flatten_dtype(const StructType& type);
// The same for a record dtype (LogicError for a built-in one).
SKEIN_EXPORT std::vector<FlatField> flatten_dtype(Dtype dtype);

// grunnur's c_path: the C expression suffix of a path, "a.b[2]" for {"a", "b", 2}. LogicError
// for an empty path or one starting with an index.
SKEIN_EXPORT std::string c_path(const FieldPath& path);

// grunnur's extract_field: a view (no copy) of one part of every element of an array of a record
// dtype. The view has the array's shape and strides, the part's dtype and the array's offset plus
// the part's; a path ending at an array field (no index) adds a last dimension of its length.
// A part that is a nested struct gets the record dtype registered for that StructType (the first
// registered, or a new one named "<cname>_<path with '_'>"). get() and set() of the view read and
// write that field of the array's elements. LogicError for an array of a built-in dtype, an
// unknown field name, an index on a field that is not an array or out of its range.
SKEIN_EXPORT Array extract_field(const Array& array, const FieldPath& path);

// grunnur's c_constant: one element of `dtype` stored in `element` (itemsize(dtype) bytes) as C
// source: an integer as a decimal literal (int64/uint64 with a cast to their C type, unsigned
// ones with a `u` suffix), a float through skein::literal ("1.5f", "0.25"), float16/bfloat16 as
// the brace initializer of their bits ({15360}), a complex as skein_make_complex64(re, im) (its
// braces {re, im} inside a record), a record as a brace initializer of its fields in order,
// nested arrays and structs in braces: `${point} p = ${c_constant(...)}` initialises a struct.
// LogicError for a size mismatch, infinities and NaN (no portable C literal).
SKEIN_EXPORT std::string c_constant(std::span<const std::byte> element, Dtype dtype);
// A number converted to `dtype` as Operand::bytes_as converts it (LogicError where it does not
// fit, or for a record dtype), then written as above.
SKEIN_EXPORT std::string c_constant(const Operand& value, Dtype dtype);
// A number in its own dtype (a weak Python-like scalar: int64, float64, complex128).
SKEIN_EXPORT std::string c_constant(const Operand& value);

}  // namespace skein
