// SPDX-License-Identifier: BSD-3-Clause
// The extension module skein._skein: what its source files share. Each file binds one part of
// the API in its bind_* function, called in this order by module.cpp (a class must be registered
// before a signature that names it is documented, so the runtime objects and arrays come first).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "skein/skein.hpp"

#include "skein/elementwise.hpp"

namespace py = pybind11;

namespace skein::python {

void bind_errors(py::module_& m);         // errors.cpp: skein.Error and its subclasses
void bind_dtypes(py::module_& m);         // dtypes.cpp: skein.dtype(), skein.bfloat16
void bind_platforms(py::module_& m);      // platforms.cpp: API, Platform, Device, DeviceParameters
void bind_contexts(py::module_& m);       // contexts.cpp: Context, Queue, Event, Buffer
void bind_array(py::module_& m);          // array.cpp: Array
void bind_memory(py::module_& m);         // memory.cpp: memory pools, allocators
void bind_functions(py::module_& m);      // functions.cpp: sum, dot, concatenate, take, ...
void bind_kernels(py::module_& m);        // kernels.cpp: Program, Kernel, StaticKernel, ...
void bind_context_tools(py::module_& m);  // context_tools.cpp: default context, caches
void bind_interop(py::module_& m);        // interop.cpp: DLPack, __cuda_array_interface__
void bind_collectives(py::module_& m);    // collectives.cpp: Runtime, Communicator
void bind_dist(py::module_& m);           // dist.cpp: DistArray, grids, dist operations
void bind_io(py::module_& m);             // io.cpp: HDF5 files, checkpoints
void bind_records(py::module_& m);        // records.cpp: register_dtype, extract_field, ...

// A DeviceFilter from the keyword arguments of Context.from_criteria and make_default_context
// (platform_include_masks, ..., include_pure_parallel_devices; a mask is a string or a list of
// strings); an unknown keyword raises skein.LogicError naming `call` (contexts.cpp).
DeviceFilter device_filter(const py::kwargs& kwargs, const char* call);

// Skein's element type for a NumPy dtype, a NumPy scalar type (numpy.float32), a Python type
// (float: float64, int: int64, complex: complex128), a skein.Dtype, or a name ("float32",
// "bfloat16"). Raises skein.LogicError naming `call` and what was given for anything else (bool,
// strings, objects, structured dtypes that skein.register_dtype did not register).
Dtype to_dtype(const py::handle& obj, const char* call);
// The NumPy dtype of a Skein element type. bfloat16, which NumPy lacks, is skein.bfloat16: a
// uint16 dtype (its bits) tagged with metadata {"skein": "bfloat16"} that to_dtype recognises.
py::dtype to_numpy(Dtype dtype);
// records.cpp: the record dtype of a NumPy structured dtype (nullopt for one without fields;
// skein.LogicError naming `call` for one not registered), and the NumPy dtype of a record.
std::optional<Dtype> record_from_numpy(const py::dtype& dt, const char* call);
py::dtype record_to_numpy(Dtype dtype);
// A shape from an int or a sequence of ints (negative values refused, naming `call`).
Shape to_shape(const py::handle& obj, const char* call);
// The shape of a reshape of an array of `size` elements: as to_shape, but one extent may be -1
// (NumPy's: the size the others leave).
Shape to_new_shape(const py::handle& obj, std::size_t size, const char* call);
// A tuple of Python ints from a shape or strides.
py::tuple to_tuple(const std::vector<std::size_t>& values);
// Order::C or Order::F from 'C' or 'F' (anything else refused, naming `call`).
Order to_order(const std::string& order, const char* call);
// An optional device index from None or an int (negative refused, naming `call`).
std::optional<std::size_t> to_device_idx(const py::handle& obj, const char* call);

// Raises skein.LogicError (through skein::LogicError, so the message has Skein's form) for a wrong
// argument at the Python boundary: `call` is the Python call, `what` what was wrong, `hint` what
// to do.
[[noreturn]] void raise_argument(const std::string& call, const std::string& what,
                                 const std::string& hint);

// skein.ElementwiseKernel: the kernel and its parameter counts (kernels_generated.cpp binds it;
// skein.dist.elementwise takes it too).
struct PyElementwise {
  ElementwiseKernel kernel;
  std::size_t outputs;
  std::size_t inputs;
};

}  // namespace skein::python
