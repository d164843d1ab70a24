// SPDX-License-Identifier: BSD-3-Clause
// What the distributed layer's binding files (collectives.cpp, dist*.cpp, io.cpp) share: reduce
// operations from Python, lists of arrays, scalar operands, and host arrays of collective calls.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace skein::python {

// ReduceOp from a skein.ReduceOp or a name: 'sum', 'prod', 'min', 'max', 'avg' (LogicError naming
// `call` otherwise).
ReduceOp to_reduce_op(const py::handle& obj, const char* call);

// One skein.Array, or a sequence of them (one per local device), as a vector.
std::vector<Array> to_arrays(const py::handle& obj, const char* call);

// A Python or NumPy scalar as a kernel operand: a Python int, float or complex is weak in type
// promotion (as C++ scalars and NEP 50's Python scalars are); a NumPy scalar keeps its dtype.
Operand to_scalar_operand(const py::handle& obj, const char* call);

// The host array a root rank passes to a collective scatter (the whole global array): its bytes
// when it has `dtype` and `shape` (made C-contiguous into `keep`), else a span of the wrong size
// and `problem` saying what was wrong. A wrong argument seen on one rank must not be raised there
// alone (the other ranks would wait in the collective): the wrong size makes the C++ call raise on
// every rank, and the root then raises `problem` instead (see rethrow_root_problem).
std::span<const std::byte> root_host_bytes(const py::handle& host, Dtype dtype, const Shape& shape,
                                           py::array& keep, std::string& problem, const char* call);
// Runs `f` (a collective call given root_host_bytes' span); when it raises LogicError and this
// rank had a `problem`, raises that instead, naming `call`.
template <class F>
void with_root_problem(const std::string& problem, const char* call, F&& f) {
  try {
    f();
  } catch (const LogicError&) {
    if (problem.empty()) throw;
    raise_argument(call, problem,
                   "On the root rank pass a NumPy array of the global shape and the array's dtype "
                   "(numpy.asarray(host, dtype=array.dtype)); other ranks may pass None.");
  }
}

// A NumPy array of `dtype` and `shape` holding `bytes` (a copy).
py::array to_host_array(const std::vector<std::byte>& bytes, Dtype dtype, const Shape& shape);

}  // namespace skein::python
