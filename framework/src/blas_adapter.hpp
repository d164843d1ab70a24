// SPDX-License-Identifier: BSD-3-Clause
// The backend interface of BLAS (src/blas.cpp is the front end): one BlasAdapter per context,
// implemented over cuBLAS (cuda/blas.cpp) and CLBlast (opencl/blas.cpp).
//
// Everything here is column-major, as BLAS itself: the front end has already turned Skein's
// row-major arrays into column-major operands (swapping operands and flipping transposes), checked
// dtypes, shapes, devices, alignments and that every size, leading dimension and increment fits
// in an int. Adapters pass what they get to the library and turn its failures into Skein's typed
// errors; they are never called with a size of zero (the front end handles those itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "skein/detail/adapter.hpp"
#include "skein/dtype.hpp"

namespace skein::detail {

// Device memory of an operand: an allocation and a byte offset into it (a multiple of the
// itemsize, so that CLBlast's element offsets and cuBLAS's aligned pointers both work).
struct BlasMemory {
  BufferAdapter* buffer = nullptr;
  std::size_t offset = 0;
};

struct BlasVector {
  BlasMemory memory;
  std::int64_t inc = 1;  // elements between consecutive entries, >= 1
};

// A column-major matrix: column j starts `ld` elements after column j - 1.
struct BlasMatrix {
  BlasMemory memory;
  std::int64_t ld = 1;
  std::int64_t batch_stride = 0;  // elements between consecutive matrices (batched gemm only)
};

// Where dot and nrm2 put their result: a host value of the dtype (the call then blocks until it
// is known), or one element of device memory (the call only enqueues).
struct BlasResult {
  void* host = nullptr;
  BlasMemory device;
};

enum class BlasOp : std::uint8_t { n, t };

// C = alpha * op(A) * op(B) + beta * C with op(A) m x k, op(B) k x n, C m x n; `batch` matrices
// each, `batch_stride` apart, for the batched call. beta == 0: C is not read (it may hold NaN).
struct GemmArgs {
  BlasOp trans_a = BlasOp::n;
  BlasOp trans_b = BlasOp::n;
  std::size_t m = 0, n = 0, k = 0;
  double alpha = 1;
  BlasMatrix a, b;
  double beta = 0;
  BlasMatrix c;
  std::size_t batch = 1;
  bool allow_tf32 = false;  // CUDA float32: TF32 tensor-core math
};

// Each call enqueues on `queue` (a queue of the adapter's context) and returns without waiting,
// except dot and nrm2 with a host result. `dtype` is float32 or float64.
class BlasAdapter {
 public:
  virtual ~BlasAdapter() = default;
  virtual void dot(QueueAdapter& queue, Dtype dtype, std::size_t n, const BlasVector& x,
                   const BlasVector& y, const BlasResult& result) = 0;
  virtual void nrm2(QueueAdapter& queue, Dtype dtype, std::size_t n, const BlasVector& x,
                    const BlasResult& result) = 0;
  // y = alpha * x + y
  virtual void axpy(QueueAdapter& queue, Dtype dtype, std::size_t n, double alpha,
                    const BlasVector& x, const BlasVector& y) = 0;
  // y = x
  virtual void copy(QueueAdapter& queue, Dtype dtype, std::size_t n, const BlasVector& x,
                    const BlasVector& y) = 0;
  // x = alpha * x
  virtual void scal(QueueAdapter& queue, Dtype dtype, std::size_t n, double alpha,
                    const BlasVector& x) = 0;
  // y = alpha * op(A) * x + beta * y, A m x n. beta == 0: y is not read (it may hold NaN).
  virtual void gemv(QueueAdapter& queue, Dtype dtype, BlasOp trans, std::size_t m, std::size_t n,
                    double alpha, const BlasMatrix& a, const BlasVector& x, double beta,
                    const BlasVector& y) = 0;
  // A = alpha * x * y^T + A, A m x n.
  virtual void ger(QueueAdapter& queue, Dtype dtype, std::size_t m, std::size_t n, double alpha,
                   const BlasVector& x, const BlasVector& y, const BlasMatrix& a) = 0;
  virtual void gemm(QueueAdapter& queue, Dtype dtype, const GemmArgs& args) = 0;
  virtual void gemm_strided_batched(QueueAdapter& queue, Dtype dtype, const GemmArgs& args) = 0;
};

// Factories, one per backend (cuda/blas.cpp, opencl/blas.cpp). They throw ApiUnavailableError
// with the reason when the backend's BLAS library cannot be used.
std::shared_ptr<BlasAdapter> make_cuda_blas(const std::shared_ptr<ContextAdapter>& context);
std::shared_ptr<BlasAdapter> make_opencl_blas(const std::shared_ptr<ContextAdapter>& context);
// Empty when the backend's BLAS library can be used here, else why not.
std::string cuda_blas_unavailable_reason();
std::string opencl_blas_unavailable_reason();

}  // namespace skein::detail
