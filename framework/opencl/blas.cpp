// SPDX-License-Identifier: BSD-3-Clause
// CLBlast for the OpenCL backend. CLBlast has no handle: each routine takes the command queue and
// cl_mem objects with element offsets, so the adapter only holds the context. CLBlast compiles
// its kernels for a device on first use of a routine and precision (seconds on a CPU device) and
// keeps them for the process.
//
// Built only with CLBlast (SKEIN_HAS_CLBLAST); without it the factory raises ApiUnavailableError
// saying how to get it, so that the rest of the OpenCL backend works as before.
#include "blas_adapter.hpp"
#include "skein/detail/errors.hpp"
#include "skein/config.hpp"

#if SKEIN_HAS_CLBLAST

#include <clblast.h>
#include <fmt/format.h>

#include "adapters.hpp"
#include "check.hpp"

namespace skein::detail::opencl {

namespace {

const char* clblast_status_name(clblast::StatusCode status) {
  using S = clblast::StatusCode;
  switch (status) {
#define SKEIN_CLBLAST_CASE(c) \
  case S::c: return #c;
    SKEIN_CLBLAST_CASE(kNotImplemented)
    SKEIN_CLBLAST_CASE(kInvalidMatrixA)
    SKEIN_CLBLAST_CASE(kInvalidMatrixB)
    SKEIN_CLBLAST_CASE(kInvalidMatrixC)
    SKEIN_CLBLAST_CASE(kInvalidVectorX)
    SKEIN_CLBLAST_CASE(kInvalidVectorY)
    SKEIN_CLBLAST_CASE(kInvalidDimension)
    SKEIN_CLBLAST_CASE(kInvalidLeadDimA)
    SKEIN_CLBLAST_CASE(kInvalidLeadDimB)
    SKEIN_CLBLAST_CASE(kInvalidLeadDimC)
    SKEIN_CLBLAST_CASE(kInvalidIncrementX)
    SKEIN_CLBLAST_CASE(kInvalidIncrementY)
    SKEIN_CLBLAST_CASE(kInsufficientMemoryA)
    SKEIN_CLBLAST_CASE(kInsufficientMemoryB)
    SKEIN_CLBLAST_CASE(kInsufficientMemoryC)
    SKEIN_CLBLAST_CASE(kInsufficientMemoryX)
    SKEIN_CLBLAST_CASE(kInsufficientMemoryY)
    SKEIN_CLBLAST_CASE(kInsufficientMemoryTemp)
    SKEIN_CLBLAST_CASE(kInvalidBatchCount)
    SKEIN_CLBLAST_CASE(kInvalidOverrideKernel)
    SKEIN_CLBLAST_CASE(kMissingOverrideParameter)
    SKEIN_CLBLAST_CASE(kInvalidLocalMemUsage)
    SKEIN_CLBLAST_CASE(kNoHalfPrecision)
    SKEIN_CLBLAST_CASE(kNoDoublePrecision)
    SKEIN_CLBLAST_CASE(kInvalidVectorScalar)
    SKEIN_CLBLAST_CASE(kInsufficientMemoryScalar)
    SKEIN_CLBLAST_CASE(kDatabaseError)
    SKEIN_CLBLAST_CASE(kUnknownError)
    SKEIN_CLBLAST_CASE(kUnexpectedError)
#undef SKEIN_CLBLAST_CASE
    default:
      // The other codes are OpenCL's own, passed through.
      return error_name(static_cast<cl_int>(status));
  }
}

[[noreturn]] void throw_clblast_error(clblast::StatusCode status, std::string call,
                                      std::string device, std::string location) {
  using S = clblast::StatusCode;
  ErrorInfo info{.what = "failed",
                 .call = std::move(call),
                 .code_name = clblast_status_name(status),
                 .code = static_cast<long long>(status),
                 .has_code = true,
                 .device = std::move(device),
                 .location = std::move(location)};
  switch (status) {
    case S::kTempBufferAllocFailure:
    case S::kOpenCLOutOfResources:
    case S::kOpenCLOutOfHostMemory:
    case S::kInsufficientMemoryTemp:
      info.hint =
          "CLBlast ran out of device or host memory: free device memory (drop unused "
          "buffers and arrays) or use smaller sizes.";
      throw MemoryError(info, 0, 0);
    case S::kNoDoublePrecision:
      info.hint = "This device has no float64: use float32, or a device with double precision.";
      throw LogicError(info);
    case S::kOpenCLCompilerNotAvailable:
    case S::kOpenCLBuildProgramFailure:
    case S::kInvalidLocalMemUsage:
    case S::kDatabaseError:
      info.hint =
          "CLBlast could not build its kernels for this device; check the OpenCL "
          "driver (clinfo) and CLBlast's support for the device.";
      throw RuntimeError(info);
    case S::kNotImplemented:
      info.hint = "CLBlast does not implement this for the device.";
      throw RuntimeError(info);
    case S::kInvalidMatrixA:
    case S::kInvalidMatrixB:
    case S::kInvalidMatrixC:
    case S::kInvalidVectorX:
    case S::kInvalidVectorY:
    case S::kInvalidDimension:
    case S::kInvalidLeadDimA:
    case S::kInvalidLeadDimB:
    case S::kInvalidLeadDimC:
    case S::kInvalidIncrementX:
    case S::kInvalidIncrementY:
    case S::kInsufficientMemoryA:
    case S::kInsufficientMemoryB:
    case S::kInsufficientMemoryC:
    case S::kInsufficientMemoryX:
    case S::kInsufficientMemoryY:
    case S::kInvalidBatchCount:
    case S::kInvalidVectorScalar:
    case S::kInsufficientMemoryScalar:
    case S::kInvalidValue:
    case S::kInvalidMemObject:
    case S::kInvalidCommandQueue:
      info.hint =
          "Skein checks the arguments before calling CLBlast, so this is a bug in Skein: "
          "please report it with this message.";
      throw LogicError(info);
    default:
      info.hint = "See CLBlast's documentation of this routine and status code.";
      throw RuntimeError(info);
  }
}

}  // namespace

}  // namespace skein::detail::opencl

// SKEIN_CLBLAST_CHECK(Gemm, (...), device) calls clblast::Gemm<T> for the T in scope and throws
// the matching Skein error, naming "clblast::Gemm<float>"; the device expression is evaluated only
// on failure.
// `routine` is a template's name and `arguments` its parenthesised call: no parentheses to add.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define SKEIN_CLBLAST_CHECK(routine, arguments, device)                                            \
  do {                                                                                             \
    const ::clblast::StatusCode skein_clblast_status_ = ::clblast::routine<T> arguments;           \
    if (skein_clblast_status_ != ::clblast::StatusCode::kSuccess) [[unlikely]] {                   \
      ::skein::detail::opencl::throw_clblast_error(                                                \
          skein_clblast_status_,                                                                   \
          std::string("clblast::" #routine) + (sizeof(T) == 4 ? "<float>" : "<double>"), (device), \
          SKEIN_HERE);                                                                             \
    }                                                                                              \
  } while (false)
// NOLINTEND(bugprone-macro-parentheses)

namespace skein::detail::opencl {

namespace {

cl_mem mem_of(const BlasMemory& memory) { return static_cast<OclBuffer*>(memory.buffer)->mem(); }

// CLBlast takes offsets and strides in elements.
template <class T>
std::size_t elements(const BlasMemory& memory) {
  return memory.offset / sizeof(T);
}

std::size_t as_size(std::int64_t v) { return static_cast<std::size_t>(v); }

clblast::Transpose clblast_op(BlasOp op) {
  return op == BlasOp::t ? clblast::Transpose::kYes : clblast::Transpose::kNo;
}

// A scratch buffer released when the scope ends; OpenCL keeps it alive for the commands already
// enqueued that use it.
class ScratchBuffer {
 public:
  ScratchBuffer(cl_context context, std::size_t size, const std::string& device) {
    cl_int err = CL_SUCCESS;
    mem_ = clCreateBuffer(context, CL_MEM_READ_WRITE, size, nullptr, &err);
    SKEIN_CL_CHECK(err, device);
  }
  ~ScratchBuffer() { clReleaseMemObject(mem_); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  cl_mem get() const { return mem_; }

 private:
  cl_mem mem_ = nullptr;
};

class OclBlas final : public BlasAdapter {
 public:
  explicit OclBlas(std::shared_ptr<OclContext> context) : context_(std::move(context)) {}

  void dot(QueueAdapter& queue, Dtype dtype, std::size_t n, const BlasVector& x,
           const BlasVector& y, const BlasResult& result) override {
    if (dtype == Dtype::float32) return dot_t<float>(queue, n, x, y, result);
    dot_t<double>(queue, n, x, y, result);
  }

  void nrm2(QueueAdapter& queue, Dtype dtype, std::size_t n, const BlasVector& x,
            const BlasResult& result) override {
    if (dtype == Dtype::float32) return nrm2_t<float>(queue, n, x, result);
    nrm2_t<double>(queue, n, x, result);
  }

  void axpy(QueueAdapter& queue, Dtype dtype, std::size_t n, double alpha, const BlasVector& x,
            const BlasVector& y) override {
    if (dtype == Dtype::float32) return axpy_t<float>(queue, n, alpha, x, y);
    axpy_t<double>(queue, n, alpha, x, y);
  }

  void copy(QueueAdapter& queue, Dtype dtype, std::size_t n, const BlasVector& x,
            const BlasVector& y) override {
    if (dtype == Dtype::float32) return copy_t<float>(queue, n, x, y);
    copy_t<double>(queue, n, x, y);
  }

  void scal(QueueAdapter& queue, Dtype dtype, std::size_t n, double alpha,
            const BlasVector& x) override {
    if (dtype == Dtype::float32) return scal_t<float>(queue, n, alpha, x);
    scal_t<double>(queue, n, alpha, x);
  }

  void gemv(QueueAdapter& queue, Dtype dtype, BlasOp trans, std::size_t m, std::size_t n,
            double alpha, const BlasMatrix& a, const BlasVector& x, double beta,
            const BlasVector& y) override {
    if (dtype == Dtype::float32) return gemv_t<float>(queue, trans, m, n, alpha, a, x, beta, y);
    gemv_t<double>(queue, trans, m, n, alpha, a, x, beta, y);
  }

  void ger(QueueAdapter& queue, Dtype dtype, std::size_t m, std::size_t n, double alpha,
           const BlasVector& x, const BlasVector& y, const BlasMatrix& a) override {
    if (dtype == Dtype::float32) return ger_t<float>(queue, m, n, alpha, x, y, a);
    ger_t<double>(queue, m, n, alpha, x, y, a);
  }

  void gemm(QueueAdapter& queue, Dtype dtype, const GemmArgs& args) override {
    if (dtype == Dtype::float32) return gemm_t<float>(queue, args, false);
    gemm_t<double>(queue, args, false);
  }

  void gemm_strided_batched(QueueAdapter& queue, Dtype dtype, const GemmArgs& args) override {
    if (dtype == Dtype::float32) return gemm_t<float>(queue, args, true);
    gemm_t<double>(queue, args, true);
  }

 private:
  std::string device(const QueueAdapter& queue) const {
    return context_->describe_device(queue.device_idx());
  }

  // dot and nrm2 always write to device memory: a host result goes through a scratch element,
  // read back with a blocking read (which also waits for the routine).
  template <class T, class Routine>
  void with_result(QueueAdapter& queue, const BlasResult& result, Routine&& routine) {
    cl_command_queue q = static_cast<OclQueue&>(queue).get();
    if (result.host == nullptr) {
      routine(q, mem_of(result.device), elements<T>(result.device));
      return;
    }
    ScratchBuffer scratch(context_->get(), sizeof(T), device(queue));
    routine(q, scratch.get(), std::size_t{0});
    SKEIN_CL_CHECK(clEnqueueReadBuffer(q, scratch.get(), CL_TRUE, 0, sizeof(T), result.host, 0,
                                       nullptr, nullptr),
                   device(queue));
  }

  template <class T>
  void dot_t(QueueAdapter& queue, std::size_t n, const BlasVector& x, const BlasVector& y,
             const BlasResult& result) {
    with_result<T>(queue, result, [&](cl_command_queue q, cl_mem out, std::size_t out_offset) {
      SKEIN_CLBLAST_CHECK(
          Dot,
          (n, out, out_offset, mem_of(x.memory), elements<T>(x.memory), as_size(x.inc),
           mem_of(y.memory), elements<T>(y.memory), as_size(y.inc), &q, nullptr),
          device(queue));
    });
  }

  template <class T>
  void nrm2_t(QueueAdapter& queue, std::size_t n, const BlasVector& x, const BlasResult& result) {
    with_result<T>(queue, result, [&](cl_command_queue q, cl_mem out, std::size_t out_offset) {
      SKEIN_CLBLAST_CHECK(Nrm2,
                          (n, out, out_offset, mem_of(x.memory), elements<T>(x.memory),
                           as_size(x.inc), &q, nullptr),
                          device(queue));
    });
  }

  template <class T>
  void axpy_t(QueueAdapter& queue, std::size_t n, double alpha, const BlasVector& x,
              const BlasVector& y) {
    cl_command_queue q = static_cast<OclQueue&>(queue).get();
    SKEIN_CLBLAST_CHECK(
        Axpy,
        (n, static_cast<T>(alpha), mem_of(x.memory), elements<T>(x.memory), as_size(x.inc),
         mem_of(y.memory), elements<T>(y.memory), as_size(y.inc), &q, nullptr),
        device(queue));
  }

  template <class T>
  void copy_t(QueueAdapter& queue, std::size_t n, const BlasVector& x, const BlasVector& y) {
    cl_command_queue q = static_cast<OclQueue&>(queue).get();
    SKEIN_CLBLAST_CHECK(Copy,
                        (n, mem_of(x.memory), elements<T>(x.memory), as_size(x.inc),
                         mem_of(y.memory), elements<T>(y.memory), as_size(y.inc), &q, nullptr),
                        device(queue));
  }

  template <class T>
  void scal_t(QueueAdapter& queue, std::size_t n, double alpha, const BlasVector& x) {
    cl_command_queue q = static_cast<OclQueue&>(queue).get();
    SKEIN_CLBLAST_CHECK(Scal,
                        (n, static_cast<T>(alpha), mem_of(x.memory), elements<T>(x.memory),
                         as_size(x.inc), &q, nullptr),
                        device(queue));
  }

  // Zeros n elements of y. CLBlast's gemv computes beta * y even for beta == 0, so NaNs in y
  // would survive; BLAS promises that y is not read then.
  template <class T>
  void clear(QueueAdapter& queue, std::size_t n, const BlasVector& y) {
    cl_command_queue q = static_cast<OclQueue&>(queue).get();
    const cl_uchar zero = 0;
    if (y.inc == 1) {
      SKEIN_CL_CHECK(clEnqueueFillBuffer(q, mem_of(y.memory), &zero, sizeof(zero), y.memory.offset,
                                         n * sizeof(T), 0, nullptr, nullptr),
                     device(queue));
      return;
    }
    ScratchBuffer zeros(context_->get(), n * sizeof(T), device(queue));
    SKEIN_CL_CHECK(clEnqueueFillBuffer(q, zeros.get(), &zero, sizeof(zero), 0, n * sizeof(T), 0,
                                       nullptr, nullptr),
                   device(queue));
    SKEIN_CLBLAST_CHECK(Copy,
                        (n, zeros.get(), 0, 1, mem_of(y.memory), elements<T>(y.memory),
                         as_size(y.inc), &q, nullptr),
                        device(queue));
  }

  template <class T>
  void gemv_t(QueueAdapter& queue, BlasOp trans, std::size_t m, std::size_t n, double alpha,
              const BlasMatrix& a, const BlasVector& x, double beta, const BlasVector& y) {
    if (beta == 0) clear<T>(queue, trans == BlasOp::n ? m : n, y);
    cl_command_queue q = static_cast<OclQueue&>(queue).get();
    SKEIN_CLBLAST_CHECK(Gemv,
                        (clblast::Layout::kColMajor, clblast_op(trans), m, n, static_cast<T>(alpha),
                         mem_of(a.memory), elements<T>(a.memory), as_size(a.ld), mem_of(x.memory),
                         elements<T>(x.memory), as_size(x.inc), static_cast<T>(beta),
                         mem_of(y.memory), elements<T>(y.memory), as_size(y.inc), &q, nullptr),
                        device(queue));
  }

  template <class T>
  void ger_t(QueueAdapter& queue, std::size_t m, std::size_t n, double alpha, const BlasVector& x,
             const BlasVector& y, const BlasMatrix& a) {
    cl_command_queue q = static_cast<OclQueue&>(queue).get();
    SKEIN_CLBLAST_CHECK(
        Ger,
        (clblast::Layout::kColMajor, m, n, static_cast<T>(alpha), mem_of(x.memory),
         elements<T>(x.memory), as_size(x.inc), mem_of(y.memory), elements<T>(y.memory),
         as_size(y.inc), mem_of(a.memory), elements<T>(a.memory), as_size(a.ld), &q, nullptr),
        device(queue));
  }

  // CLBlast's gemm kernels store alpha * AB alone when beta == 0, so C is not read (tested with
  // NaN in C on the direct and the indirect kernel).
  template <class T>
  void gemm_t(QueueAdapter& queue, const GemmArgs& g, bool batched) {
    cl_command_queue q = static_cast<OclQueue&>(queue).get();
    if (batched) {
      SKEIN_CLBLAST_CHECK(
          GemmStridedBatched,
          (clblast::Layout::kColMajor, clblast_op(g.trans_a), clblast_op(g.trans_b), g.m, g.n, g.k,
           static_cast<T>(g.alpha), mem_of(g.a.memory), elements<T>(g.a.memory), as_size(g.a.ld),
           as_size(g.a.batch_stride), mem_of(g.b.memory), elements<T>(g.b.memory), as_size(g.b.ld),
           as_size(g.b.batch_stride), static_cast<T>(g.beta), mem_of(g.c.memory),
           elements<T>(g.c.memory), as_size(g.c.ld), as_size(g.c.batch_stride), g.batch, &q,
           nullptr),
          device(queue));
      return;
    }
    SKEIN_CLBLAST_CHECK(
        Gemm,
        (clblast::Layout::kColMajor, clblast_op(g.trans_a), clblast_op(g.trans_b), g.m, g.n, g.k,
         static_cast<T>(g.alpha), mem_of(g.a.memory), elements<T>(g.a.memory), as_size(g.a.ld),
         mem_of(g.b.memory), elements<T>(g.b.memory), as_size(g.b.ld), static_cast<T>(g.beta),
         mem_of(g.c.memory), elements<T>(g.c.memory), as_size(g.c.ld), &q, nullptr, nullptr),
        device(queue));
  }

  std::shared_ptr<OclContext> context_;
};

}  // namespace

}  // namespace skein::detail::opencl

namespace skein::detail {

std::string opencl_blas_unavailable_reason() { return {}; }

std::shared_ptr<BlasAdapter> make_opencl_blas(const std::shared_ptr<ContextAdapter>& context) {
  auto ocl = std::dynamic_pointer_cast<opencl::OclContext>(context);
  if (!ocl) {
    raise<LogicError>(ErrorInfo{.what = "the context is not an OpenCL context",
                                .call = "skein::blas",
                                .hint = "This is a bug in Skein: please report it.",
                                .location = SKEIN_HERE});
  }
  return std::make_shared<opencl::OclBlas>(std::move(ocl));
}

}  // namespace skein::detail

#else  // !SKEIN_HAS_CLBLAST

namespace skein::detail {

namespace {
constexpr const char* kNoClblast =
    "Skein was built without CLBlast, which BLAS on OpenCL needs. Install CLBlast (Debian: "
    "libclblast-dev) and reconfigure Skein (SKEIN_WITH_CLBLAST=AUTO finds it; =ON insists), or "
    "use BLAS on a CUDA context";
}  // namespace

std::string opencl_blas_unavailable_reason() { return kNoClblast; }

std::shared_ptr<BlasAdapter> make_opencl_blas(const std::shared_ptr<ContextAdapter>&) {
  raise<ApiUnavailableError>(
      ErrorInfo{.what = std::string("BLAS on OpenCL is not available: ") + kNoClblast,
                .call = "skein::blas",
                .location = SKEIN_HERE});
}

}  // namespace skein::detail

#endif  // SKEIN_HAS_CLBLAST
