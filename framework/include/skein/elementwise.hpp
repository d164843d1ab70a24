// SPDX-License-Identifier: BSD-3-Clause
// Elementwise kernels on arrays (pygpu's elemwise, PyCUDA's and CuPy's ElementwiseKernel): the
// caller declares the parameters and writes the operation on one element, as in
//
//   skein::ElementwiseKernel axpy("T a, T x, T y", "T z", "z = a * x + y", {.name = "axpy"});
//   auto outs = axpy(queue, {2.0f, x, y});          // z allocated, returned in outs[0]
//   axpy(queue, {2.0f, x, y, y});                   // in place: y given as the output z
//
// Skein generates the kernel, compiles it through Program (so the disk cache applies) once per
// context and signature (dtypes, which arguments are scalars, layout class), keeps it in memory,
// and enqueues it on the arrays' device without waiting for it.
//
// Parameters (CuPy's syntax): comma-separated `TYPE NAME` or `raw TYPE NAME`.
//   TYPE   a dtype name (float32, int64, complex64, float16, ... as skein::name(Dtype)), a C name
//          of one (float, double, int8_t ... uint64_t, int, unsigned int, short, char: C sizes,
//          so `float` is float32), or a type placeholder: any other identifier (T, U, ...), bound
//          at call time to the dtype of the arrays (or else the scalars) given for it. Every array
//          bound to one placeholder must have the same dtype.
//   raw    the argument is a contiguous array seen whole: NAME is a pointer to its element 0
//          (GLOBAL_MEM, in storage type), indexed by the operation (`x[i]`, `x[n - 1 - i]`).
// In the operation, a non-raw NAME is the value of one element (inputs read-only; outputs
// write-only: assign every output, reading one gives an unspecified value), `i` is the element's
// flat index (C order) and `n` the number of elements; placeholders are C types. float16 and
// bfloat16 are storage-only (skein/ctypes.hpp): their elements appear in the operation as float
// and outputs are rounded to nearest even on store (a placeholder bound to them is `float`).
// Complex values are skein_complex64 / skein_complex128 structs: use the modules of
// skein/functions.hpp through ElementwiseOptions::globals.
//
// Arguments at call time: Operands, inputs first, then either all outputs or none (then outputs
// are allocated on the launching device, with the broadcast shape, and returned). An input
// parameter takes an array or a scalar (a scalar is broadcast; it is converted to the parameter's
// dtype). Arrays broadcast against each other as in NumPy (a dimension of 1, or missing on the
// left, is repeated); outputs must have the broadcast shape; raw arrays are not broadcast. Every
// array must be on one device (Array::device_idx()) of the queue's context; the kernel runs
// there, enqueued on the queue, asynchronously. An output may be an input array itself (in place:
// each element is read before it is written); outputs that overlap inputs at other positions give
// unspecified results.
//
// Speed: when every non-raw array is contiguous (also after merging dimensions) and a common
// starting element makes them all 16-byte aligned, the kernel reads and writes 16-byte vectors
// (4 float32 / 2 float64 per access), a few per thread in flight, in a grid-stride loop over a
// grid sized from the device (multiprocessors x resident blocks); the unaligned head and the tail
// are done element by element. Other layouts (strided views, broadcasting) use a general path
// that computes each element's address from the shape and strides.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "skein/array.hpp"
#include "skein/dtype.hpp"
#include "skein/export.hpp"
#include "skein/multi_device.hpp"
#include "skein/operand.hpp"
#include "skein/queue.hpp"
#include "skein/template.hpp"

namespace skein {
namespace detail {
struct ImplAccess;
}  // namespace detail

// How many work groups an elementwise launch runs (ElementwiseOptions::groups).
enum class LaunchGroups {
  // As many as fit at once on the device, each looping over its share of the range (grid-stride):
  // the fewest groups. A kernel of another queue starts only where a launch leaves room
  // (ElementwiseOptions::spare_compute_units) or once it ends.
  resident,
  // One per chunk of the range (the group's items times the elements each item takes): the groups
  // end throughout the launch, so that a kernel of a queue of higher priority (a collective's,
  // enqueued meanwhile) starts as soon as a compute unit has room for it.
  per_chunk,
};

struct ElementwiseOptions {
  // The kernel's name (a C identifier, not an OpenCL C built-in function's such as distance or
  // dot: LogicError), in the generated source and in error messages.
  std::string name = "elementwise";
  // Source put before the kernel: helper functions, types, #defines (rendered with `globals`).
  std::string preamble{};
  // Names for the operation and the preamble, rendered as templates (skein/template.hpp):
  // e.g. {"mul", functions::mul({Dtype::complex64, Dtype::complex64})} and `${mul}(a, x)`.
  RenderGlobals globals{};
  // ProgramOptions::fast_math for the generated program.
  bool fast_math = false;
  // false: no FP contraction in the operation (a * b + c is never fused into an FMA), so that it
  // gives the same bits as uncontracted arithmetic elsewhere (a FusedKernel's deterministic mode,
  // the host).
  bool fp_contract = true;
  // The groups of this many compute units (CUDA: multiprocessors) fewer than fit at once: a launch
  // runs at most as many groups as fit at once on the device, each looping over its share
  // (grid-stride), and with k spare units it runs the groups of k units fewer (never fewer than
  // one unit's; at most all units but one are left). 0, the default: every unit. The device
  // places the groups itself, likely spread over every unit (leaving room on many rather than
  // whole free units): on 2 x H200 a one-group kernel of another queue ran alongside such a launch,
  // NCCL's all_reduce did not (it did beside LaunchGroups::per_chunk; tools/nccl-overlap-probe.py).
  // A memory-bound kernel loses little bandwidth to one or two spare units. Only with groups =
  // LaunchGroups::resident (LogicError otherwise).
  std::size_t spare_compute_units = 0;
  // How many groups a launch runs: as many as fit at once (the default), or one per chunk of the
  // range. NCCL's all_reduce between two ranks, on a queue of high priority, ran alongside an
  // update launched per_chunk and not alongside one of resident groups, spare units or not
  // (docs/performance.md); one rank's devices combining through peer access ran alongside both.
  LaunchGroups groups = LaunchGroups::resident;
};

// A cheap handle: copies share the kernel and its compiled programs.
// Speed of repeated calls: a call that gives every output keeps its plan (the compiled program,
// the grid and the layout's arguments; up to 8 per kernel), and a later call whose arguments have
// the same kinds, dtypes, devices, shapes, strides and 16-byte alignment reuses it: only the
// buffers and the scalars' values are packed again; on CUDA the launch goes through a one-kernel
// graph, and the call costs the host less than a raw cuLaunchKernel (docs/performance.md). Every
// check a call makes still holds on that path.
// Threads: a kernel and its copies may be called from several threads at once, as may the
// built-in operations (axpy, scale, fill, copy, astype, binary, compare, unary), whose kernels the
// whole process shares: the compiled programs are kept in a locked cache, the build count is
// atomic, and on OpenCL the launches of one compiled kernel take turns on the host (each sets its
// arguments on one cl_kernel). The elementwise test ThreadsShareOneKernel runs this on every
// backend.
class SKEIN_EXPORT ElementwiseKernel {
 public:
  // LogicError for a malformed parameter list, a duplicated or reserved name (i, n, and names
  // starting with `_skein`), or no output.
  ElementwiseKernel(std::string_view in_params, std::string_view out_params, std::string operation,
                    ElementwiseOptions options = {});

  // Runs on the device of the array arguments (all on one device of the queue's context),
  // enqueued on `queue`; returns the outputs (given or allocated), in declaration order.
  // LogicError for a wrong number of arguments, an array of the wrong dtype for a declared type,
  // placeholders bound to different dtypes, shapes that do not broadcast, arrays of another
  // context or on different devices, a scalar for an output or a raw parameter; CompileError
  // (with the generated source) when the operation does not compile.
  std::vector<Array> operator()(const Queue& queue, std::span<const Operand> args) const;
  std::vector<Array> operator()(const Queue& queue, std::initializer_list<Operand> args) const {
    return (*this)(queue, std::span<const Operand>(args.begin(), args.size()));
  }

  // One argument list per device of the queue, each on its own device, all enqueued before the
  // call returns (each device's kernel resolved and compiled first, then every launch): the way
  // a distributed array runs one operation on its per-device pieces. Returns each device's outputs.
  MultiDevice<std::vector<Array>> per_device(const Queue& queue,
                                             const MultiDevice<std::vector<Operand>>& args) const;

  // The source that a call with these arguments compiles (for reading and debugging).
  std::string source(const Queue& queue, std::span<const Operand> args) const;

  const std::string& name() const;
  // How many programs this kernel (and its copies) has generated and compiled: one per context
  // and signature; later calls with the same signature reuse the program kept in memory. The
  // memory cache holds a context only while something else does too.
  std::size_t programs_built() const;

  struct Impl;

 private:
  friend struct detail::ImplAccess;
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  std::shared_ptr<Impl> impl_;
};

// --- Built-in elementwise operations ------------------------------------------------------------
// Each enqueues one generated kernel on the arrays' device. Inputs are arrays or scalars; dtypes
// promote with result_type() unless stated; `out`, when given, must have the broadcast shape and
// the result dtype (otherwise a new contiguous array is returned). Returned: the output.

// out = a * x + y (BLAS axpy with a separate output; pass y as out to update it in place).
SKEIN_EXPORT Array axpy(const Queue& queue, const Operand& a, const Operand& x, const Operand& y,
                        const std::optional<Array>& out = std::nullopt);
// out = a * x.
SKEIN_EXPORT Array scale(const Queue& queue, const Operand& a, const Operand& x,
                         const std::optional<Array>& out = std::nullopt);
// Every element of `out` set to `value` (converted to out's dtype: floats truncated for integer
// arrays, as NumPy's fill; a complex value for a real array is a LogicError). Strided views too.
SKEIN_EXPORT void fill(const Queue& queue, const Array& out, const Operand& value);
// dst = src, converting to dst's dtype (as astype); any layouts, src broadcast to dst's shape.
SKEIN_EXPORT void copy(const Queue& queue, const Operand& src, const Array& dst);
// A new contiguous array of `dtype` with x's values (NumPy's astype with casting='unsafe', except
// that complex -> real raises LogicError instead of dropping the imaginary part). Integers wrap,
// floats are truncated toward zero when converted to integers (out of range: unspecified, as in
// NumPy), float16/bfloat16 round to nearest even from float32 (float64 goes through float32, so
// a value halfway between two float16 values after that first rounding can round differently
// from NumPy's direct conversion).
SKEIN_EXPORT Array astype(const Queue& queue, const Array& x, Dtype dtype);

enum class BinaryOp { add, subtract, multiply, divide, maximum, minimum };
// NumPy's ufuncs: divide is true division (integers -> float64 as NumPy); integer add, subtract
// and multiply wrap around; maximum / minimum propagate NaN. Complex: add, subtract, multiply,
// divide only.
SKEIN_EXPORT Array binary(const Queue& queue, BinaryOp op, const Operand& a, const Operand& b,
                          const std::optional<Array>& out = std::nullopt);

enum class CompareOp { equal, not_equal, less, less_equal, greater, greater_equal };
// 1 where the comparison holds, else 0, as uint8 (Skein has no bool dtype). Inputs are compared
// in their promoted dtype; NaN compares as in C (and NumPy). Complex: equal and not_equal only.
SKEIN_EXPORT Array compare(const Queue& queue, CompareOp op, const Operand& a, const Operand& b,
                           const std::optional<Array>& out = std::nullopt);

enum class UnaryOp {
  negative,
  absolute,
  square,
  sqrt,
  exp,
  log,
  sin,
  cos,
  tanh,
  floor,
  ceil,
  conjugate
};
// NumPy's ufuncs. Float functions (sqrt ... ceil) of integers give NumPy's float type: int8 and
// uint8 -> float16, int16 and uint16 -> float32, wider -> float64 (floor and ceil of integers
// too, as NumPy before 2.3 did). absolute of complex gives the real dtype (|z| without overflow);
// complex inputs take negative, absolute, square, exp and conjugate (others: LogicError).
// absolute and negative of the most negative integer wrap, as in NumPy.
SKEIN_EXPORT Array unary(const Queue& queue, UnaryOp op, const Operand& x,
                         const std::optional<Array>& out = std::nullopt);

SKEIN_EXPORT std::string_view name(BinaryOp op);
SKEIN_EXPORT std::string_view name(CompareOp op);
SKEIN_EXPORT std::string_view name(UnaryOp op);

}  // namespace skein
