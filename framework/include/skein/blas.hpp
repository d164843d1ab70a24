// SPDX-License-Identifier: BSD-3-Clause
// BLAS on one device (pygpu.blas): dot, nrm2, axpy, scal, gemv, ger, gemm and batched gemm over
// cuBLAS (CUDA) and CLBlast (OpenCL), for float32 and float64 arrays.
//
// Every call takes a Queue and arrays on one device of the queue's context (all the same device,
// one the queue has). The work is enqueued on the queue's stream / command queue of that device,
// after the work already there, and the call returns at once: only the overloads that return a
// host value (dot, nrm2) wait for their result. Arrays made with another queue of the context are
// fine; ordering between queues is the caller's business, as for kernels.
//
// Conventions: arrays are C-ordered and the results are NumPy's. gemm computes
//   C = alpha * op(A) @ op(B) + beta * C,   op(X) = X, or X.T with trans_x,
// for 2-D arrays exactly as NumPy would for the same shapes. BLAS itself is column-major; a
// row-major matrix is the transpose of the column-major one at the same address, so Skein
// computes C.T = op(B).T @ op(A).T instead (the standard swap), without copies.
//
// Which arrays are accepted, all used in place (never copied):
//  - matrices: 2-D arrays whose rows are contiguous, with a row stride of at least the row:
//    C-contiguous arrays and views of some of their columns (the row stride is BLAS's leading
//    dimension); or whose columns are contiguous: transposed views such as
//    `a.view(0, {n, m}, {itemsize, m * itemsize})` of an m x n array, used as such.
//  - batched gemm: 3-D arrays (batch, rows, cols) of such matrices, any batch stride that is a
//    multiple of the itemsize; inputs may have batch stride 0 (the same matrix for every batch).
//  - vectors: 1-D arrays with any positive stride that is a multiple of the itemsize. axpy and
//    scal also take contiguous arrays of any shape, as their flat vector of elements.
// Outputs must not overlap inputs (axpy's y may be the very array x). With beta == 0 the output
// (C, y) is not read, as in BLAS: it may hold anything, NaN included.
//
// Precision: float32 gemm runs in float32 on every backend. cuBLAS's default math mode is kept,
// so tensor-core TF32 is used only with GemmOptions::allow_tf32 (or when the environment sets
// NVIDIA_TF32_OVERRIDE=1, which CUDA applies behind the library's back).
//
// Errors: a wrong dtype (anything but float32 / float64, or operands that differ), shapes that do
// not fit together (the message gives them), a matrix with neither axis contiguous, arrays on
// other devices or contexts, overlapping outputs and sizes over 2^31 - 1 raise LogicError naming
// the call and the argument. BLAS that cannot be used here (an OpenCL build without CLBlast, no
// cuBLAS library found) raises ApiUnavailableError with the reason; see status().
//
// Threads: the functions may be called from several threads at once. CUDA: each device of a
// context has one cuBLAS handle (made on first use, under the context's lock) that a call holds
// a lock on while it enqueues, so calls on one device wait for each other on the host (dot and
// nrm2 with a host result until the value is there); OpenCL: Skein takes no lock around CLBlast
// and relies on its own thread safety. The work is enqueued on the queue given, whose rules apply.
#pragma once

#include <string>

#include "skein/api.hpp"
#include "skein/array.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein::blas {

struct Status {
  bool available = false;
  std::string reason{};  // why not, when unavailable
};
// Whether BLAS can be used with contexts of this API here (for CUDA this loads cuBLAS).
SKEIN_EXPORT Status status(ApiId api);

// x . y. The first overload waits and returns the value; the second writes it into `result`, a
// one-element array of the vectors' dtype, and does not wait.
SKEIN_EXPORT double dot(const Queue& queue, const Array& x, const Array& y);
SKEIN_EXPORT void dot(const Queue& queue, const Array& x, const Array& y, const Array& result);

// ||x||_2, as dot.
SKEIN_EXPORT double nrm2(const Queue& queue, const Array& x);
SKEIN_EXPORT void nrm2(const Queue& queue, const Array& x, const Array& result);

// y = alpha * x + y (x and y of the same shape).
SKEIN_EXPORT void axpy(const Queue& queue, double alpha, const Array& x, const Array& y);

// x = alpha * x.
SKEIN_EXPORT void scal(const Queue& queue, double alpha, const Array& x);

struct GemvOptions {
  bool trans_a = false;  // op(A) = A.T
};

// y = alpha * op(A) @ x + beta * y.
SKEIN_EXPORT void gemv(const Queue& queue, double alpha, const Array& a, const Array& x,
                       double beta, const Array& y, const GemvOptions& options = {});
// alpha * op(A) @ x as a new array on the operands' device.
SKEIN_EXPORT Array gemv(const Queue& queue, double alpha, const Array& a, const Array& x,
                        const GemvOptions& options = {});

// A = alpha * outer(x, y) + A.
SKEIN_EXPORT void ger(const Queue& queue, double alpha, const Array& x, const Array& y,
                      const Array& a);
// alpha * outer(x, y) as a new array.
SKEIN_EXPORT Array ger(const Queue& queue, double alpha, const Array& x, const Array& y);

struct GemmOptions {
  bool trans_a = false;  // op(A) = A.T
  bool trans_b = false;  // op(B) = B.T
  // CUDA, float32: let cuBLAS use TF32 tensor cores (inputs rounded to a 10-bit mantissa; several
  // times faster on recent GPUs). Ignored for float64 and on OpenCL.
  bool allow_tf32 = false;
};

// C = alpha * op(A) @ op(B) + beta * C for 2-D arrays.
SKEIN_EXPORT void gemm(const Queue& queue, double alpha, const Array& a, const Array& b,
                       double beta, const Array& c, const GemmOptions& options = {});
// alpha * op(A) @ op(B) as a new array.
SKEIN_EXPORT Array gemm(const Queue& queue, double alpha, const Array& a, const Array& b,
                        const GemmOptions& options = {});

// pygpu's gemmBatch_3d: the same for each i of 3-D arrays, C[i] = alpha * op(A[i]) @ op(B[i]) +
// beta * C[i], with op transposing the last two axes; one strided-batched library call.
SKEIN_EXPORT void gemm_batched(const Queue& queue, double alpha, const Array& a, const Array& b,
                               double beta, const Array& c, const GemmOptions& options = {});
SKEIN_EXPORT Array gemm_batched(const Queue& queue, double alpha, const Array& a, const Array& b,
                                const GemmOptions& options = {});

}  // namespace skein::blas
