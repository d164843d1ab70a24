// SPDX-License-Identifier: BSD-3-Clause
// cuBLAS for the CUDA backend: one cublasHandle_t per device of a context, made on first use
// with the device's Skein context current, and bound to the queue's stream before each call.
//
// cuBLAS is loaded with dlopen on first use, like the driver (driver.cpp), not linked: a Skein
// binary then starts where cuBLAS is not installed, and programs that never call BLAS do not pay
// for loading libcublas and libcublasLt (hundreds of MB, over a second on a cold start) or run
// their initialisers. The toolkit's headers fix the interface; the library found at run time must
// have the same major version (libcublas.so.<CUBLAS_VER_MAJOR>).
//
// cuBLAS runs on the CUDA runtime, which works in whatever driver context is current on the
// thread. Every call here makes the device's Skein context current (CudaContextScope), so the
// handle's workspace and kernels live in the context that owns the arrays and the stream.
#include <cublas_v2.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>
#include <type_traits>

#include "adapters.hpp"
#include "blas_adapter.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/log.hpp"

// Two levels, so that the argument is macro-expanded first: "cublasSgemm_v2", not "cublasSgemm".
#define SKEIN_CUBLAS_STR2(x) #x
#define SKEIN_CUBLAS_STR(x) SKEIN_CUBLAS_STR2(x)

namespace skein::detail {

namespace {

// Every cuBLAS function Skein calls. cublas_v2.h maps most names to versioned entry points
// (cublasSgemm -> cublasSgemm_v2); the member names go through the same macros, so
// `cublas().cublasSgemm` is the pointer to cublasSgemm_v2, which is the symbol looked up.
#define SKEIN_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate)                 \
  X(cublasDestroy)                \
  X(cublasSetStream)              \
  X(cublasSetPointerMode)         \
  X(cublasSetMathMode)            \
  X(cublasGetStatusName)          \
  X(cublasGetStatusString)        \
  X(cublasSdot)                   \
  X(cublasDdot)                   \
  X(cublasSnrm2)                  \
  X(cublasDnrm2)                  \
  X(cublasSaxpy)                  \
  X(cublasDaxpy)                  \
  X(cublasScopy)                  \
  X(cublasDcopy)                  \
  X(cublasSscal)                  \
  X(cublasDscal)                  \
  X(cublasSgemv)                  \
  X(cublasDgemv)                  \
  X(cublasSger)                   \
  X(cublasDger)                   \
  X(cublasSgemm)                  \
  X(cublasDgemm)                  \
  X(cublasSgemmStridedBatched)    \
  X(cublasDgemmStridedBatched)

// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` is declared here, not an expression
#define SKEIN_CUBLAS_DECLARE(name) decltype(&::name) name = nullptr;
struct Cublas {
  SKEIN_CUBLAS_FUNCTIONS(SKEIN_CUBLAS_DECLARE)
};
#undef SKEIN_CUBLAS_DECLARE

struct CublasLibrary {
  Cublas functions;
  std::string unavailable_reason;  // empty when loaded
};

CublasLibrary load_cublas() {
  CublasLibrary lib;
  const std::string soname = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
  // RTLD_LOCAL: nothing of ours needs its symbols in the global namespace. Never closed: the
  // handles' destructors may run at exit.
  void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why;
  if (library == nullptr) {
    const char* error = dlerror();
    why = error ? error : "unknown error";
  }
#ifdef SKEIN_CUBLAS_DIR
  // The toolkit Skein was built with, for machines where it is not on the library path.
  if (library == nullptr && SKEIN_CUBLAS_DIR[0] != '\0') {
    library = dlopen((std::string(SKEIN_CUBLAS_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (library == nullptr) {
    lib.unavailable_reason = fmt::format(
        "cuBLAS is not installed or not on the library path ({} not found: {}); install the "
        "cuBLAS of CUDA {} or add its directory to LD_LIBRARY_PATH",
        soname, why, CUBLAS_VER_MAJOR);
    return lib;
  }
  std::string missing;
#define SKEIN_CUBLAS_RESOLVE(name)                                                            \
  lib.functions.name =                                                                        \
      reinterpret_cast<decltype(lib.functions.name)>(dlsym(library, SKEIN_CUBLAS_STR(name))); \
  if (lib.functions.name == nullptr) {                                                        \
    missing += missing.empty() ? "" : ", ";                                                   \
    missing += SKEIN_CUBLAS_STR(name);                                                        \
  }
  SKEIN_CUBLAS_FUNCTIONS(SKEIN_CUBLAS_RESOLVE)
#undef SKEIN_CUBLAS_RESOLVE
  if (!missing.empty()) {
    lib.unavailable_reason = fmt::format(
        "{} was found but lacks {} (a cuBLAS older than the CUDA {} headers Skein was "
        "built with?)",
        soname, missing, CUBLAS_VER_MAJOR);
  }
  return lib;
}

const CublasLibrary& cublas_library() {
  static const CublasLibrary lib = load_cublas();  // thread-safe, once
  return lib;
}

// Only after cublas_library() reported the library usable (a CudaBlas exists only then).
const Cublas& cublas() { return cublas_library().functions; }

std::string status_name(cublasStatus_t status) {
  const char* name = cublas().cublasGetStatusName ? cublas().cublasGetStatusName(status) : nullptr;
  return name ? name : fmt::format("cublasStatus_t {}", static_cast<int>(status));
}

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, std::string device,
                                     std::string location) {
  const char* text =
      cublas().cublasGetStatusString ? cublas().cublasGetStatusString(status) : nullptr;
  ErrorInfo info{.what = text ? text : "cuBLAS call failed",
                 .call = call,
                 .code_name = status_name(status),
                 .code = static_cast<long long>(status),
                 .has_code = true,
                 .device = std::move(device),
                 .location = std::move(location)};
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      info.hint =
          "cuBLAS could not allocate its workspace: free device memory (drop unused "
          "buffers and arrays).";
      throw MemoryError(info, 0, 0);
    case CUBLAS_STATUS_INVALID_VALUE:
      info.hint =
          "Skein checks the arguments before calling cuBLAS, so this is a bug in Skein: "
          "please report it with this message.";
      throw LogicError(info);
    case CUBLAS_STATUS_EXECUTION_FAILED:
      info.hint =
          "A cuBLAS kernel failed to launch or run; an earlier asynchronous error may be "
          "the cause. Run the program under `compute-sanitizer` to find it.";
      throw LaunchError(info);
    case CUBLAS_STATUS_NOT_INITIALIZED:
      info.hint =
          "cuBLAS could not initialise on this device: check the driver (nvidia-smi) "
          "and that it supports this cuBLAS.";
      throw RuntimeError(info);
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_SUPPORTED:
      info.hint =
          "This device or cuBLAS does not support the operation (TF32 needs an Ampere "
          "or newer GPU).";
      throw RuntimeError(info);
    default:
      info.hint = "See the cuBLAS documentation of this call and status.";
      throw RuntimeError(info);
  }
}

}  // namespace

}  // namespace skein::detail

// SKEIN_CUBLAS_CHECK(cublasSgemm, (handle, ...), device) calls cublasSgemm_v2 through the loaded
// table; the device expression is evaluated only on failure.
#define SKEIN_CUBLAS_CHECK(function, arguments, device)                                           \
  do {                                                                                            \
    const cublasStatus_t skein_cublas_status_ = ::skein::detail::cublas().function arguments;     \
    if (skein_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]] {                             \
      ::skein::detail::throw_cublas_error(skein_cublas_status_, #function, (device), SKEIN_HERE); \
    }                                                                                             \
  } while (false)

namespace skein::detail {

namespace {

template <class T>
T* address(const BlasMemory& memory) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(memory.buffer->native() + memory.offset));
}

cublasOperation_t cublas_op(BlasOp op) { return op == BlasOp::t ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The front end checked that these fit.
int as_int(std::size_t v) { return static_cast<int>(v); }
int as_int(std::int64_t v) { return static_cast<int>(v); }

class CudaBlas final : public BlasAdapter {
 public:
  explicit CudaBlas(std::shared_ptr<CudaContextAdapter> context) : context_(std::move(context)) {
    for (std::size_t i = 0; i < context_->devices().size(); ++i) {
      handles_.push_back(std::make_unique<Handle>());
    }
  }

  ~CudaBlas() override {
    for (std::size_t d = 0; d < handles_.size(); ++d) {
      if (handles_[d]->handle == nullptr) continue;
      // Not entered when the driver is already torn down at exit: nothing is left to free then.
      CudaContextScope scope(context_->context(d), CudaContextScope::NoThrow{});
      if (!scope.entered()) continue;
      const cublasStatus_t status = cublas().cublasDestroy(handles_[d]->handle);
      if (status != CUBLAS_STATUS_SUCCESS) {
        detail::log(LogLevel::error, LogScope::rank,
                    "cublasDestroy failed while releasing resources of {}: {}",
                    context_->description(d), status_name(status));
      }
    }
  }

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
  struct Handle {
    std::mutex mutex;  // a handle must not be used from two threads at once
    cublasHandle_t handle = nullptr;
  };

  const std::string& device(std::size_t device_idx) const {
    return context_->description(device_idx);
  }

  void create(Handle& h, std::size_t d) {
    SKEIN_CUBLAS_CHECK(cublasCreate, (&h.handle), device(d));
    // What everything later relies on: the runtime took the context the scope made current.
    CUcontext current = nullptr;
    const CUresult result = cu().cuCtxGetCurrent(&current);
    if (result != CUDA_SUCCESS || current != context_->context(d)) {
      cublas().cublasDestroy(h.handle);
      h.handle = nullptr;
      raise<RuntimeError>(ErrorInfo{
          .what = "cuBLAS did not create its handle in Skein's CUDA context",
          .call = "cublasCreate",
          .device = device(d),
          .hint = "Another library may have changed the current CUDA context; please report "
                  "this with the libraries the program uses.",
          .location = SKEIN_HERE});
    }
    // No TF32 unless a call asks for it (gemm sets the mode it needs each time).
    SKEIN_CUBLAS_CHECK(cublasSetMathMode, (h.handle, CUBLAS_DEFAULT_MATH), device(d));
  }

  // Runs f(handle, device description) with the device's context current and the handle on the
  // queue's stream in `mode` (where alpha, beta and results live).
  template <class F>
  void run(QueueAdapter& queue, cublasPointerMode_t mode, F&& f) {
    const std::size_t d = queue.device_idx();
    Handle& h = *handles_[d];
    std::lock_guard lock(h.mutex);
    CudaContextScope scope(context_->context(d), device(d));
    if (h.handle == nullptr) create(h, d);
    SKEIN_CUBLAS_CHECK(cublasSetStream, (h.handle, reinterpret_cast<cudaStream_t>(queue.native())),
                       device(d));
    SKEIN_CUBLAS_CHECK(cublasSetPointerMode, (h.handle, mode), device(d));
    f(h.handle, device(d));
  }

  static cublasPointerMode_t mode_of(const BlasResult& result) {
    return result.host ? CUBLAS_POINTER_MODE_HOST : CUBLAS_POINTER_MODE_DEVICE;
  }

  template <class T>
  void dot_t(QueueAdapter& queue, std::size_t n, const BlasVector& x, const BlasVector& y,
             const BlasResult& result) {
    // Host mode: cuBLAS waits for the result. Device mode: it only enqueues.
    T* out = result.host ? static_cast<T*>(result.host) : address<T>(result.device);
    run(queue, mode_of(result), [&](cublasHandle_t h, const std::string& dev) {
      if constexpr (std::is_same_v<T, float>) {
        SKEIN_CUBLAS_CHECK(cublasSdot,
                           (h, as_int(n), address<T>(x.memory), as_int(x.inc), address<T>(y.memory),
                            as_int(y.inc), out),
                           dev);
      } else {
        SKEIN_CUBLAS_CHECK(cublasDdot,
                           (h, as_int(n), address<T>(x.memory), as_int(x.inc), address<T>(y.memory),
                            as_int(y.inc), out),
                           dev);
      }
    });
  }

  template <class T>
  void nrm2_t(QueueAdapter& queue, std::size_t n, const BlasVector& x, const BlasResult& result) {
    T* out = result.host ? static_cast<T*>(result.host) : address<T>(result.device);
    run(queue, mode_of(result), [&](cublasHandle_t h, const std::string& dev) {
      if constexpr (std::is_same_v<T, float>) {
        SKEIN_CUBLAS_CHECK(cublasSnrm2, (h, as_int(n), address<T>(x.memory), as_int(x.inc), out),
                           dev);
      } else {
        SKEIN_CUBLAS_CHECK(cublasDnrm2, (h, as_int(n), address<T>(x.memory), as_int(x.inc), out),
                           dev);
      }
    });
  }

  template <class T>
  void axpy_t(QueueAdapter& queue, std::size_t n, double alpha, const BlasVector& x,
              const BlasVector& y) {
    const T a = static_cast<T>(alpha);
    run(queue, CUBLAS_POINTER_MODE_HOST, [&](cublasHandle_t h, const std::string& dev) {
      if constexpr (std::is_same_v<T, float>) {
        SKEIN_CUBLAS_CHECK(cublasSaxpy,
                           (h, as_int(n), &a, address<T>(x.memory), as_int(x.inc),
                            address<T>(y.memory), as_int(y.inc)),
                           dev);
      } else {
        SKEIN_CUBLAS_CHECK(cublasDaxpy,
                           (h, as_int(n), &a, address<T>(x.memory), as_int(x.inc),
                            address<T>(y.memory), as_int(y.inc)),
                           dev);
      }
    });
  }

  template <class T>
  void copy_t(QueueAdapter& queue, std::size_t n, const BlasVector& x, const BlasVector& y) {
    run(queue, CUBLAS_POINTER_MODE_HOST, [&](cublasHandle_t h, const std::string& dev) {
      if constexpr (std::is_same_v<T, float>) {
        SKEIN_CUBLAS_CHECK(cublasScopy,
                           (h, as_int(n), address<T>(x.memory), as_int(x.inc), address<T>(y.memory),
                            as_int(y.inc)),
                           dev);
      } else {
        SKEIN_CUBLAS_CHECK(cublasDcopy,
                           (h, as_int(n), address<T>(x.memory), as_int(x.inc), address<T>(y.memory),
                            as_int(y.inc)),
                           dev);
      }
    });
  }

  template <class T>
  void scal_t(QueueAdapter& queue, std::size_t n, double alpha, const BlasVector& x) {
    const T a = static_cast<T>(alpha);
    run(queue, CUBLAS_POINTER_MODE_HOST, [&](cublasHandle_t h, const std::string& dev) {
      if constexpr (std::is_same_v<T, float>) {
        SKEIN_CUBLAS_CHECK(cublasSscal, (h, as_int(n), &a, address<T>(x.memory), as_int(x.inc)),
                           dev);
      } else {
        SKEIN_CUBLAS_CHECK(cublasDscal, (h, as_int(n), &a, address<T>(x.memory), as_int(x.inc)),
                           dev);
      }
    });
  }

  template <class T>
  void gemv_t(QueueAdapter& queue, BlasOp trans, std::size_t m, std::size_t n, double alpha,
              const BlasMatrix& a, const BlasVector& x, double beta, const BlasVector& y) {
    const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
    run(queue, CUBLAS_POINTER_MODE_HOST, [&](cublasHandle_t h, const std::string& dev) {
      if constexpr (std::is_same_v<T, float>) {
        SKEIN_CUBLAS_CHECK(
            cublasSgemv,
            (h, cublas_op(trans), as_int(m), as_int(n), &al, address<T>(a.memory), as_int(a.ld),
             address<T>(x.memory), as_int(x.inc), &be, address<T>(y.memory), as_int(y.inc)),
            dev);
      } else {
        SKEIN_CUBLAS_CHECK(
            cublasDgemv,
            (h, cublas_op(trans), as_int(m), as_int(n), &al, address<T>(a.memory), as_int(a.ld),
             address<T>(x.memory), as_int(x.inc), &be, address<T>(y.memory), as_int(y.inc)),
            dev);
      }
    });
  }

  template <class T>
  void ger_t(QueueAdapter& queue, std::size_t m, std::size_t n, double alpha, const BlasVector& x,
             const BlasVector& y, const BlasMatrix& a) {
    const T al = static_cast<T>(alpha);
    run(queue, CUBLAS_POINTER_MODE_HOST, [&](cublasHandle_t h, const std::string& dev) {
      if constexpr (std::is_same_v<T, float>) {
        SKEIN_CUBLAS_CHECK(
            cublasSger,
            (h, as_int(m), as_int(n), &al, address<T>(x.memory), as_int(x.inc),
             address<T>(y.memory), as_int(y.inc), address<T>(a.memory), as_int(a.ld)),
            dev);
      } else {
        SKEIN_CUBLAS_CHECK(
            cublasDger,
            (h, as_int(m), as_int(n), &al, address<T>(x.memory), as_int(x.inc),
             address<T>(y.memory), as_int(y.inc), address<T>(a.memory), as_int(a.ld)),
            dev);
      }
    });
  }

  template <class T>
  void gemm_t(QueueAdapter& queue, const GemmArgs& g, bool batched) {
    const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
    const cublasOperation_t ta = cublas_op(g.trans_a), tb = cublas_op(g.trans_b);
    const int m = as_int(g.m), n = as_int(g.n), k = as_int(g.k);
    const T* a = address<T>(g.a.memory);
    const T* b = address<T>(g.b.memory);
    T* c = address<T>(g.c.memory);
    const int lda = as_int(g.a.ld), ldb = as_int(g.b.ld), ldc = as_int(g.c.ld);
    run(queue, CUBLAS_POINTER_MODE_HOST, [&](cublasHandle_t h, const std::string& dev) {
      // The default math mode computes float32 in float32; TF32 only when asked for.
      const bool tf32 = std::is_same_v<T, float> && g.allow_tf32;
      SKEIN_CUBLAS_CHECK(cublasSetMathMode,
                         (h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH), dev);
      if (batched) {
        const auto sa = static_cast<long long>(g.a.batch_stride);
        const auto sb = static_cast<long long>(g.b.batch_stride);
        const auto sc = static_cast<long long>(g.c.batch_stride);
        const int count = as_int(g.batch);
        if constexpr (std::is_same_v<T, float>) {
          SKEIN_CUBLAS_CHECK(
              cublasSgemmStridedBatched,
              (h, ta, tb, m, n, k, &alpha, a, lda, sa, b, ldb, sb, &beta, c, ldc, sc, count), dev);
        } else {
          SKEIN_CUBLAS_CHECK(
              cublasDgemmStridedBatched,
              (h, ta, tb, m, n, k, &alpha, a, lda, sa, b, ldb, sb, &beta, c, ldc, sc, count), dev);
        }
      } else if constexpr (std::is_same_v<T, float>) {
        SKEIN_CUBLAS_CHECK(cublasSgemm, (h, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc),
                           dev);
      } else {
        SKEIN_CUBLAS_CHECK(cublasDgemm, (h, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc),
                           dev);
      }
    });
  }

  std::shared_ptr<CudaContextAdapter> context_;
  std::vector<std::unique_ptr<Handle>> handles_;  // per device, made on first use
};

}  // namespace

std::string cuda_blas_unavailable_reason() { return cublas_library().unavailable_reason; }

std::shared_ptr<BlasAdapter> make_cuda_blas(const std::shared_ptr<ContextAdapter>& context) {
  const std::string& reason = cublas_library().unavailable_reason;
  if (!reason.empty()) {
    raise<ApiUnavailableError>(ErrorInfo{.what = "BLAS on CUDA is not available: " + reason,
                                         .call = "skein::blas",
                                         .location = SKEIN_HERE});
  }
  auto cuda = std::dynamic_pointer_cast<CudaContextAdapter>(context);
  if (!cuda) {
    raise<LogicError>(ErrorInfo{.what = "the context is not a CUDA context",
                                .call = "skein::blas",
                                .hint = "This is a bug in Skein: please report it.",
                                .location = SKEIN_HERE});
  }
  return std::make_shared<CudaBlas>(std::move(cuda));
}

}  // namespace skein::detail
