// SPDX-License-Identifier: BSD-3-Clause
// Python values as the arguments of Skein's generated kernels and array functions (skein::Operand):
// what functions.cpp, functions_blas.cpp and kernels_generated.cpp share. Kept inline and free of
// NumPy round trips, since a kernel call converts every argument on each call.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bindings.hpp"

namespace skein::python {

// Called by bind_functions and bind_kernels: the parts in files of their own.
void bind_math(py::module_& m);               // functions_math.cpp: ufuncs, operators, BLAS
void bind_generated_kernels(py::module_& m);  // kernels_generated.cpp: Elementwise-, Reduction-
void bind_stencil_kernels(py::module_& m);    // kernels_stencil.cpp: StencilKernel

// Skein's dtype of a NumPy scalar (numpy.float32(1), numpy.int8(3), ...) from its kind and size,
// or nothing for anything else (Python numbers included: they are not numpy.generic).
inline std::optional<Dtype> numpy_scalar_dtype(const py::handle& obj) {
  // The common case first: an exact NumPy scalar type (numpy.float32, numpy.int64, ...), found by
  // its type object in a table made once, without an attribute lookup.
  struct Entry {
    PyTypeObject* type;
    Dtype dtype;
  };
  static const std::vector<Entry> exact = [] {
    const py::module_ np = py::module_::import("numpy");
    std::vector<Entry> table;
    for (const Dtype dtype : all_dtypes) {
      if (dtype == Dtype::bfloat16) continue;  // NumPy has none
      // Leaked on purpose: the module outlives every call, and a type object's reference kept
      // past the interpreter's end must not be released by a static destructor.
      const py::object type = np.attr(std::string(name(dtype)).c_str());
      table.push_back({reinterpret_cast<PyTypeObject*>(type.inc_ref().ptr()), dtype});
    }
    return table;
  }();
  for (const Entry& e : exact) {
    if (Py_TYPE(obj.ptr()) == e.type) return e.dtype;
  }
  static const py::object generic = py::module_::import("numpy").attr("generic");
  if (!PyObject_IsInstance(obj.ptr(), generic.ptr())) return std::nullopt;
  const py::dtype dt = py::reinterpret_steal<py::dtype>(
      PyObject_GetAttrString(obj.ptr(), "dtype"));  // a new reference
  if (!dt) throw py::error_already_set();
  const char kind = dt.kind();
  const auto size = static_cast<std::size_t>(dt.itemsize());
  switch (kind) {
    case 'f':
      if (size == 2) return Dtype::float16;
      if (size == 4) return Dtype::float32;
      if (size == 8) return Dtype::float64;
      break;
    case 'c':
      if (size == 8) return Dtype::complex64;
      if (size == 16) return Dtype::complex128;
      break;
    case 'i':
    case 'u': {
      const bool is_signed = kind == 'i';
      if (size == 1) return is_signed ? Dtype::int8 : Dtype::uint8;
      if (size == 2) return is_signed ? Dtype::int16 : Dtype::uint16;
      if (size == 4) return is_signed ? Dtype::int32 : Dtype::uint32;
      if (size == 8) return is_signed ? Dtype::int64 : Dtype::uint64;
      break;
    }
    default: break;
  }
  return std::nullopt;
}

// How an error names an argument: "a", "the other operand", or "argument 3" (text and index). The
// text is made only when an error needs it: a kernel call converts every argument on every call.
struct OperandName {
  OperandName(std::string_view text) : text(text) {}  // NOLINT(google-explicit-constructor)
  OperandName(const char* text) : text(text) {}       // NOLINT(google-explicit-constructor)
  // A temporary's text (kernels_args.cpp's where()): it lives until to_operand returns.
  OperandName(const std::string& text) : text(text) {}  // NOLINT(google-explicit-constructor)
  OperandName(std::string_view text, std::size_t index) : text(text), index(index) {}
  std::string str() const {
    return index ? std::string(text) + " " + std::to_string(*index) : std::string(text);
  }
  std::string_view text;
  std::optional<std::size_t> index;
};

// A Python value as an Operand: a skein.Array; a Python int, float or complex (weak in promotion,
// as NumPy 2 treats Python scalars); a NumPy scalar (strong: its dtype promotes like an array's).
// Anything else (bool included: Skein has no bool dtype) is a LogicError naming `call` and `name`.
inline Operand to_operand(const py::handle& obj, const char* call, const OperandName& name) {
  // An Array first, the argument kernels take most, recognised by its Python type: pybind11's
  // caster alone would, for every other value, look up an attribute of the value's type that is
  // not there (its foreign-module check), which made a float argument cost 0.7 us.
  static PyTypeObject* const array_type =
      reinterpret_cast<PyTypeObject*>(py::type::of<Array>().ptr());
  if (Py_TYPE(obj.ptr()) == array_type) {
    // Exactly skein.Array: its instance holds one C++ value, reached without a type lookup.
    auto* inst = reinterpret_cast<py::detail::instance*>(obj.ptr());
    return Operand(*static_cast<const Array*>(inst->get_value_and_holder().value_ptr()));
  }
  if (PyObject_TypeCheck(obj.ptr(), array_type)) {  // a Python subclass: pybind11's caster
    py::detail::make_caster<Array> array_caster;
    if (array_caster.load(obj, /*convert=*/false)) {
      return Operand(py::detail::cast_op<const Array&>(array_caster));
    }
  }
  if (PyBool_Check(obj.ptr()) || PyObject_IsInstance(obj.ptr(), (PyObject*)&PyBool_Type)) {
    raise_argument(call, name.str() + " is a bool; Skein has no bool dtype",
                   "Pass 0 or 1, or a NumPy scalar such as numpy.uint8(1).");
  }
  if (PyLong_CheckExact(obj.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow == 0) return Operand(static_cast<std::int64_t>(v));
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(obj.ptr());
      if (!PyErr_Occurred()) return Operand(static_cast<std::uint64_t>(u));
      PyErr_Clear();
    }
    raise_argument(call,
                   name.str() + " (" + py::str(obj).cast<std::string>() + ") does not fit 64 bits",
                   "Pass a value within int64 or uint64.");
  }
  if (PyFloat_CheckExact(obj.ptr())) return Operand(PyFloat_AS_DOUBLE(obj.ptr()));
  if (PyComplex_CheckExact(obj.ptr())) {
    return Operand(
        std::complex<double>(PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr())));
  }
  if (const auto dtype = numpy_scalar_dtype(obj)) {
    if (is_complex(*dtype)) {
      return Operand::typed(*dtype, py::cast<std::complex<double>>(obj));
    }
    if (is_integer(*dtype)) {
      if (*dtype == Dtype::uint64) {
        // Values above INT64_MAX exist only as uint64: keep them exact (weak, as a C++ unsigned
        // value is; uint64 scalars are rare enough in kernels for this to be harmless).
        return Operand(py::cast<std::uint64_t>(obj));
      }
      return Operand::typed_int(*dtype, py::cast<std::int64_t>(obj));
    }
    return Operand::typed(*dtype, py::cast<double>(obj));
  }
  // Other Python numbers (subclasses of int or float, numbers with __index__ / __float__).
  if (PyLong_Check(obj.ptr())) return Operand(py::cast<std::int64_t>(obj));
  if (PyFloat_Check(obj.ptr())) return Operand(py::cast<double>(obj));
  raise_argument(call,
                 name.str() + " is a " + std::string(Py_TYPE(obj.ptr())->tp_name) +
                     ", not a skein.Array or a number",
                 "Pass a skein.Array (Array.from_host(queue, host) for a NumPy array), a Python "
                 "number or a NumPy scalar.");
}

// The positional arguments args[first:] of a kernel call as Operands (appended to `out`).
inline void to_operands(const py::args& args, std::size_t first, std::vector<Operand>& out,
                        const char* call) {
  out.reserve(args.size() - first);
  for (std::size_t i = first; i < args.size(); ++i) {
    out.push_back(to_operand(args[i], call, OperandName("argument", i - first)));
  }
}

// An optional output array: None or a skein.Array.
inline std::optional<Array> to_out(const py::handle& obj, const char* call) {
  if (obj.is_none()) return std::nullopt;
  if (!py::isinstance<Array>(obj)) {
    raise_argument(
        call,
        "out must be a skein.Array or None; got a " + std::string(Py_TYPE(obj.ptr())->tp_name),
        "Pass out=Array.empty(queue, shape, dtype), or leave it out for a new array.");
  }
  return py::cast<Array>(obj);
}

}  // namespace skein::python
