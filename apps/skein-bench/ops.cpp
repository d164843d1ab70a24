// SPDX-License-Identifier: BSD-3-Clause
// One measurement of an operation on one runtime, against its reference measured in the same run
// on the same devices (see main.cpp for what each operation and reference is).
#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <skein/detail/host_collectives.hpp>
#include <skein/detail/host_values.hpp>
#include <skein/dist_ops.hpp>
#include <span>
#include <skein/skein.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench.hpp"

#if SKEIN_HAS_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <skein/cuda.hpp>
#endif
#if SKEIN_HAS_CLBLAST
#include <clblast.h>

#include <skein/opencl.hpp>
#endif

namespace skein_bench {
namespace {

using skein::Array;
using skein::DistArray;
using skein::Dtype;

// The median over `repeat` runs of f (after `warmup` runs), each timed from a barrier to the end
// of every rank's work (the slowest rank's time).
double time_median(const skein::Runtime& runtime, const skein::Queue& queue, const Options& o,
                   const std::function<void()>& f) {
  for (int i = 0; i < o.warmup; ++i) f();
  queue.synchronize();
  std::vector<double> times;
  for (int i = 0; i < o.repeat; ++i) {
    MPI_Barrier(runtime.comm());
    const auto start = std::chrono::steady_clock::now();
    f();
    queue.synchronize();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, runtime.comm());
    times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Direct vendor BLAS on one block: the gemm reference.
class VendorGemm {
 public:
  VendorGemm(const skein::Queue& queue, std::size_t device_idx) : queue_(queue), dev_(device_idx) {
    api_ = queue.context().api().id();
#if SKEIN_HAS_CUDA
    if (api_ == skein::ApiId::cuda) {
      // The runtime uses the device's primary context, which is Skein's (contexts from devices).
      cudaSetDevice(static_cast<int>(skein::cuda::native_device(queue.context().device(dev_))));
      if (cublasCreate(&handle_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
      cublasSetStream(handle_, reinterpret_cast<cudaStream_t>(skein::cuda::native_stream(queue, dev_)));
    }
#endif
  }
  ~VendorGemm() {
#if SKEIN_HAS_CUDA
    if (handle_ != nullptr) cublasDestroy(handle_);
#endif
  }
  VendorGemm(const VendorGemm&) = delete;
  VendorGemm& operator=(const VendorGemm&) = delete;

  std::string name() const {
    return api_ == skein::ApiId::cuda ? "cuBLAS, called directly" : "CLBlast, called directly";
  }

  // C = A @ B for C-order A (m x k), B (k x n), C (m x n): column-major C^T = B^T A^T.
  void gemm(const Array& a, const Array& b, const Array& c) {
    const std::size_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    if (m == 0) return;
#if SKEIN_HAS_CUDA
    if (api_ == skein::ApiId::cuda) {
      auto ptr = [](const Array& x) {
        return reinterpret_cast<char*>(skein::cuda::native_pointer(x.data())) + x.offset();
      };
      const int M = static_cast<int>(n), N = static_cast<int>(m), K = static_cast<int>(k);
      if (a.dtype() == Dtype::float32) {
        const float one = 1, zero = 0;
        cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one,
                    reinterpret_cast<const float*>(ptr(b)), M, reinterpret_cast<const float*>(ptr(a)), K,
                    &zero, reinterpret_cast<float*>(ptr(c)), M);
      } else {
        const double one = 1, zero = 0;
        cublasDgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one,
                    reinterpret_cast<const double*>(ptr(b)), M, reinterpret_cast<const double*>(ptr(a)), K,
                    &zero, reinterpret_cast<double*>(ptr(c)), M);
      }
      return;
    }
#endif
#if SKEIN_HAS_CLBLAST
    if (api_ == skein::ApiId::opencl) {
      cl_command_queue q = skein::opencl::native_queue(queue_, dev_);
      auto mem = [](const Array& x) { return skein::opencl::native_mem(x.data()); };
      auto off = [](const Array& x) { return x.offset() / x.itemsize(); };
      if (a.dtype() == Dtype::float32) {
        clblast::Gemm<float>(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                             clblast::Transpose::kNo, m, n, k, 1.0f, mem(a), off(a), k, mem(b), off(b),
                             n, 0.0f, mem(c), off(c), n, &q, nullptr);
      } else {
        clblast::Gemm<double>(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                              clblast::Transpose::kNo, m, n, k, 1.0, mem(a), off(a), k, mem(b), off(b),
                              n, 0.0, mem(c), off(c), n, &q, nullptr);
      }
      return;
    }
#endif
    throw std::runtime_error("no vendor BLAS for this API in this build");
  }

 private:
  skein::Queue queue_;
  std::size_t dev_;
  skein::ApiId api_;
#if SKEIN_HAS_CUDA
  cublasHandle_t handle_ = nullptr;
#endif
};

// A wrong result makes every figure meaningless: it fails the run.
void check_result(const char* what, double got, double expected) {
  if (std::abs(got - expected) > 1e-3 * std::abs(expected)) {
    throw skein::RuntimeError(skein::ErrorInfo{
        .what = fmt::format("the {} result is wrong: the sum of its elements is {}, "
                            "expected {}",
                            what, got, expected),
        .call = fmt::format("skein-bench {} (result check)", what),
        .hint = "Run the test suite on these devices (skein-tests, skein-mpi-tests)."});
  }
}

}  // namespace

Measurement measure(const Options& o, std::size_t size, const skein::Runtime& runtime) {
  skein::Communicator comm(runtime);
  const skein::Queue queue(runtime.context());
  const Dtype dtype = o.dtype == "float64" ? Dtype::float64 : Dtype::float32;
  const double item = static_cast<double>(skein::itemsize(dtype));
  std::vector<Row> rows;

  const double n = static_cast<double>(size);
  if (o.what == "axpy" || o.what == "sum") {
    DistArray x(comm, queue, skein::BlockLayout::over(comm, {size}), dtype);
    DistArray y(comm, queue, x.layout(), dtype);
    DistArray z(comm, queue, x.layout(), dtype);
    skein::dist::fill(x, skein::Operand::typed(dtype, 1.0));
    skein::dist::fill(y, skein::Operand::typed(dtype, 2.0));
    const double copy = time_median(runtime, queue, o, [&] {
      for (std::size_t i = 0; i < x.local_size(); ++i) z.local(i).set(x.local(i));
    });
    const double copy_gbps = 2 * n * item / copy / 1e9;
    if (o.what == "axpy") {
      const auto a = skein::Operand::typed(dtype, 0.5);
      const double t = time_median(runtime, queue, o, [&] { skein::dist::axpy(a, x, y, z); });
      rows.push_back({"axpy z = a*x + y", "GB/s", "device-to-device copy", 3 * n * item / t / 1e9,
                      copy_gbps, t, copy});
      // Every element is 0.5 * 1 + 2.
      check_result("axpy", skein::dist::sum(z), 2.5 * n);
    } else {
      double total = 0;
      const double t = time_median(runtime, queue, o, [&] { total = skein::dist::sum(x); });
      rows.push_back({"sum of x", "GB/s", "device-to-device copy", n * item / t / 1e9, copy_gbps,
                      t, copy});
      // The device's part alone, on this rank's first device, timed between events on the device
      // as CuPy's figures are: the reduction kernels without the all_reduce and the host read.
      const Array block = x.local(0);
      const std::size_t dev = x.block(0).device_idx;
      Array result = skein::sum(queue, block);
      std::vector<double> ms;
      for (int i = 0; i < o.warmup + o.repeat; ++i) {
        const skein::Event start = queue.record_event(dev);
        skein::ReductionArgs args;
        args.out = result;
        skein::sum(queue, block, args);
        const skein::Event stop = queue.record_event(dev);
        stop.wait();
        if (i >= o.warmup) ms.push_back(stop.time_since(start));
      }
      std::sort(ms.begin(), ms.end());
      const double kernel_gbps = static_cast<double>(block.nbytes()) / (ms[ms.size() / 2] * 1e-3) / 1e9;
      rows.push_back({"sum, one device", "GB/s", "device-to-device copy", kernel_gbps,
                      copy_gbps / static_cast<double>(comm.size()), ms[ms.size() / 2] * 1e-3, 0});
      check_result("sum", total, n);
      // Where a distributed sum's time goes, each part timed as the whole call is (from a barrier
      // to the end of this rank's work, the slowest rank's time): the per-device reductions into
      // values kept on the devices; those into the values of the host's way (detail::HostValues:
      // on CUDA page-locked host memory the kernels write) and their read; those and the MPI
      // exchange (the host's way step by step, with the exchange's own part); the values read from
      // the devices by Array::get instead; the MPI exchange alone; and the all_reduce of the values
      // on the devices, then a read of the result, or with the result written by the all_reduce
      // into the host values (page-locked host memory on CUDA). dist::sum takes the all_reduce
      // over several ranks with NCCL (into the host values where they are mapped), the host's way
      // otherwise (dist_ops.cpp, combine_on_devices).
      std::vector<Array> values;
      for (std::size_t i = 0; i < x.local_size(); ++i) values.push_back(skein::sum(queue, x.local(i)));
      std::vector<std::size_t> devices;
      for (std::size_t i = 0; i < x.local_size(); ++i) devices.push_back(x.block(i).device_idx);
      auto reduce_into = [&](const std::vector<Array>& into) {
        for (std::size_t i = 0; i < x.local_size(); ++i) {
          skein::ReductionArgs args;
          args.out = into[i];
          skein::sum(queue, x.local(i), args);
        }
      };
      const std::size_t item_bytes = values.empty() ? 0 : values[0].nbytes();
      std::vector<std::byte> bytes(item_bytes), all_bytes(item_bytes * values.size());
      const double t_local = time_median(runtime, queue, o, [&] { reduce_into(values); });
      const double t_host = time_median(runtime, queue, o, [&] {
        skein::detail::HostValues host(queue, devices, values[0].dtype());
        reduce_into(host.arrays());
        host.read(all_bytes);
      });
      std::vector<double> exchange_part;  // this rank's time in the exchange of each call
      const double t_host_exchange = time_median(runtime, queue, o, [&] {
        skein::detail::HostValues host(queue, devices, values[0].dtype());
        reduce_into(host.arrays());
        host.read(all_bytes);
        const auto t0 = std::chrono::steady_clock::now();
        skein::detail::all_reduce_host(comm, all_bytes, 1, values[0].dtype(), skein::ReduceOp::sum,
                                       "skein-bench sum");
        exchange_part.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      });
      // The median over the timed calls (the first `warmup` were not), of the slowest rank's.
      exchange_part.erase(exchange_part.begin(), exchange_part.begin() + o.warmup);
      for (double& v : exchange_part) {
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, runtime.comm());
      }
      std::sort(exchange_part.begin(), exchange_part.end());
      const double t_exchange_part = exchange_part[exchange_part.size() / 2];
      const double t_reads = time_median(runtime, queue, o, [&] {
        reduce_into(values);
        for (const auto& v : values) v.get(std::span<std::byte>(bytes));
      });
      const double t_exchange = time_median(runtime, queue, o, [&] {
        double v = 1.0;
        skein::detail::all_reduce_host(comm, std::as_writable_bytes(std::span<double>(&v, 1)), 1,
                                       Dtype::float64, skein::ReduceOp::sum, "skein-bench sum");
      });
      const double t_former = time_median(runtime, queue, o, [&] {
        reduce_into(values);
        comm.all_reduce(queue, values, values, skein::ReduceOp::sum);
        values[0].get(std::span<std::byte>(bytes));
      });
      const double t_former_host = time_median(runtime, queue, o, [&] {
        reduce_into(values);
        skein::detail::HostValues host(queue, devices, values[0].dtype());
        comm.all_reduce(queue, values, host.arrays(), skein::ReduceOp::sum);
        host.read(all_bytes);
      });
      for (const auto& [what, s] : {std::pair{"sum: local reductions alone", t_local},
                                    std::pair{"sum: into host values, read", t_host},
                                    std::pair{"sum: those, then the MPI exchange", t_host_exchange},
                                    std::pair{"sum: ... of which the exchange", t_exchange_part},
                                    std::pair{"sum: into device values, Array::get", t_reads},
                                    std::pair{"sum: the MPI exchange alone", t_exchange},
                                    std::pair{"sum: all_reduce on devices, read", t_former},
                                    std::pair{"sum: all_reduce into host values, read", t_former_host}}) {
        rows.push_back({what, "us", "the whole dist::sum", s * 1e6, t * 1e6, s, t});
      }
    }
  } else {
    const std::size_t m = size;
    DistArray a(comm, queue, skein::BlockLayout::over(comm, {m, m}), dtype);
    DistArray c(comm, queue, a.layout(), dtype);
    skein::ReplicatedArray b(comm, queue, {m, m}, dtype);
    skein::dist::fill(a, skein::Operand::typed(dtype, 1.0));
    for (std::size_t i = 0; i < b.local_size(); ++i) skein::fill(queue, b.local(i), skein::Operand::typed(dtype, 0.5));
    std::vector<std::unique_ptr<VendorGemm>> vendor;
    for (std::size_t i = 0; i < a.local_size(); ++i) {
      vendor.push_back(std::make_unique<VendorGemm>(queue, a.block(i).device_idx));
    }
    const double flops = 2 * n * n * n;
    const double ref = time_median(runtime, queue, o, [&] {
      for (std::size_t i = 0; i < a.local_size(); ++i) vendor[i]->gemm(a.local(i), b.local(i), c.local(i));
    });
    const double t = time_median(runtime, queue, o, [&] { skein::dist::gemm(1.0, a, b, 0.0, c); });
    rows.push_back({"gemm C = A @ B", "TFLOP/s", vendor.front()->name(), flops / t / 1e12,
                    flops / ref / 1e12, t, ref});
    // Every element of C is 0.5 * m.
    check_result("gemm", skein::dist::sum(c), 0.5 * n * n * n);
  }
  return {std::move(rows), std::string(runtime.context().api().name()), comm.backend_description(),
          runtime.context().device(0).description()};
}

}  // namespace skein_bench
