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
      if (cublasCreate(&handle_) != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error("cublasCreate failed");
      cublasSetStream(handle_,
                      reinterpret_cast<cudaStream_t>(skein::cuda::native_stream(queue, dev_)));
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
                    reinterpret_cast<const float*>(ptr(b)), M,
                    reinterpret_cast<const float*>(ptr(a)), K, &zero,
                    reinterpret_cast<float*>(ptr(c)), M);
      } else {
        const double one = 1, zero = 0;
        cublasDgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one,
                    reinterpret_cast<const double*>(ptr(b)), M,
                    reinterpret_cast<const double*>(ptr(a)), K, &zero,
                    reinterpret_cast<double*>(ptr(c)), M);
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
                             clblast::Transpose::kNo, m, n, k, 1.0f, mem(a), off(a), k, mem(b),
                             off(b), n, 0.0f, mem(c), off(c), n, &q, nullptr);
      } else {
        clblast::Gemm<double>(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                              clblast::Transpose::kNo, m, n, k, 1.0, mem(a), off(a), k, mem(b),
                              off(b), n, 0.0, mem(c), off(c), n, &q, nullptr);
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

// What every measurement of one size works with.
struct Bench {
  const Options& o;
  const skein::Runtime& runtime;
  skein::Communicator& comm;
  const skein::Queue& queue;
  Dtype dtype;
  std::size_t size;

  double item() const { return static_cast<double>(skein::itemsize(dtype)); }
  // The median of f's time, timed as time_median() says.
  double time(const std::function<void()>& f) const { return time_median(runtime, queue, o, f); }
};

// The vectors of axpy and sum: x = 1, y = 2, and z for the result.
struct Vectors {
  DistArray x, y, z;
};

Vectors make_vectors(const Bench& b) {
  DistArray x(b.comm, b.queue, skein::BlockLayout::over(b.comm, {b.size}), b.dtype);
  DistArray y(b.comm, b.queue, x.layout(), b.dtype);
  DistArray z(b.comm, b.queue, x.layout(), b.dtype);
  skein::dist::fill(x, skein::Operand::typed(b.dtype, 1.0));
  skein::dist::fill(y, skein::Operand::typed(b.dtype, 2.0));
  return {std::move(x), std::move(y), std::move(z)};
}

void measure_axpy(const Bench& b, const Vectors& v, double copy, std::vector<Row>& rows) {
  const double n = static_cast<double>(b.size);
  const auto a = skein::Operand::typed(b.dtype, 0.5);
  const double t = b.time([&] { skein::dist::axpy(a, v.x, v.y, v.z); });
  rows.push_back({"axpy z = a*x + y", "GB/s", "device-to-device copy", 3 * n * b.item() / t / 1e9,
                  2 * n * b.item() / copy / 1e9, t, copy});
  // Every element is 0.5 * 1 + 2.
  check_result("axpy", skein::dist::sum(v.z), 2.5 * n);
}

// The device's part of a sum alone, on this rank's first device, timed between events on the
// device as CuPy's figures are: the reduction kernels without the all_reduce and the host read.
void measure_sum_on_one_device(const Bench& b, const DistArray& x, double copy_gbps,
                               std::vector<Row>& rows) {
  const Array block = x.local(0);
  const std::size_t dev = x.block(0).device_idx;
  Array result = skein::sum(b.queue, block);
  std::vector<double> ms;
  for (int i = 0; i < b.o.warmup + b.o.repeat; ++i) {
    const skein::Event start = b.queue.record_event(dev);
    skein::ReductionArgs args;
    args.out = result;
    skein::sum(b.queue, block, args);
    const skein::Event stop = b.queue.record_event(dev);
    stop.wait();
    if (i >= b.o.warmup) ms.push_back(stop.time_since(start));
  }
  std::sort(ms.begin(), ms.end());
  const double kernel_gbps = static_cast<double>(block.nbytes()) / (ms[ms.size() / 2] * 1e-3) / 1e9;
  rows.push_back({"sum, one device", "GB/s", "device-to-device copy", kernel_gbps,
                  copy_gbps / static_cast<double>(b.comm.size()), ms[ms.size() / 2] * 1e-3, 0});
}

// Where a distributed sum's time goes, each part timed as the whole call is (from a barrier to the
// end of this rank's work, the slowest rank's time): the per-device reductions into values kept on
// the devices; those into the values of the host's way (detail::HostValues: on CUDA page-locked
// host memory the kernels write) and their read; those and the MPI exchange (the host's way step
// by step, with the exchange's own part); the values read from the devices by Array::get instead;
// the MPI exchange alone; and the all_reduce of the values on the devices, then a read of the
// result, or with the result written by the all_reduce into the host values (page-locked host
// memory on CUDA). dist::sum takes the all_reduce over several ranks with NCCL (into the host
// values where they are mapped), the host's way otherwise (dist_ops.cpp, combine_on_devices).
// `t` is the whole dist::sum's time.
void measure_sum_parts(const Bench& b, const DistArray& x, double t, std::vector<Row>& rows) {
  const skein::Queue& queue = b.queue;
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
  const double t_local = b.time([&] { reduce_into(values); });
  const double t_host = b.time([&] {
    skein::detail::HostValues host(queue, devices, values[0].dtype());
    reduce_into(host.arrays());
    host.read(all_bytes);
  });
  std::vector<double> exchange_part;  // this rank's time in the exchange of each call
  const double t_host_exchange = b.time([&] {
    skein::detail::HostValues host(queue, devices, values[0].dtype());
    reduce_into(host.arrays());
    host.read(all_bytes);
    const auto t0 = std::chrono::steady_clock::now();
    skein::detail::all_reduce_host(b.comm, all_bytes, 1, values[0].dtype(), skein::ReduceOp::sum,
                                   "skein-bench sum");
    exchange_part.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  });
  // The median over the timed calls (the first `warmup` were not), of the slowest rank's.
  exchange_part.erase(exchange_part.begin(), exchange_part.begin() + b.o.warmup);
  for (double& v : exchange_part) {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, b.runtime.comm());
  }
  std::sort(exchange_part.begin(), exchange_part.end());
  const double t_exchange_part = exchange_part[exchange_part.size() / 2];
  const double t_reads = b.time([&] {
    reduce_into(values);
    for (const auto& v : values) v.get(std::span<std::byte>(bytes));
  });
  const double t_exchange = b.time([&] {
    double v = 1.0;
    skein::detail::all_reduce_host(b.comm, std::as_writable_bytes(std::span<double>(&v, 1)), 1,
                                   Dtype::float64, skein::ReduceOp::sum, "skein-bench sum");
  });
  const double t_former = b.time([&] {
    reduce_into(values);
    b.comm.all_reduce(queue, values, values, skein::ReduceOp::sum);
    values[0].get(std::span<std::byte>(bytes));
  });
  const double t_former_host = b.time([&] {
    reduce_into(values);
    skein::detail::HostValues host(queue, devices, values[0].dtype());
    b.comm.all_reduce(queue, values, host.arrays(), skein::ReduceOp::sum);
    host.read(all_bytes);
  });
  for (const auto& [what, s] :
       {std::pair{"sum: local reductions alone", t_local},
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

void measure_sum(const Bench& b, const Vectors& v, double copy, std::vector<Row>& rows) {
  const double n = static_cast<double>(b.size);
  const double copy_gbps = 2 * n * b.item() / copy / 1e9;
  double total = 0;
  const double t = b.time([&] { total = skein::dist::sum(v.x); });
  rows.push_back(
      {"sum of x", "GB/s", "device-to-device copy", n * b.item() / t / 1e9, copy_gbps, t, copy});
  measure_sum_on_one_device(b, v.x, copy_gbps, rows);
  check_result("sum", total, n);
  measure_sum_parts(b, v.x, t, rows);
}

// C = A @ B for size x size matrices, A split by rows and B on every device, against the vendor's
// gemm called directly on every block.
void measure_gemm(const Bench& b, std::vector<Row>& rows) {
  const std::size_t m = b.size;
  const double n = static_cast<double>(b.size);
  DistArray a(b.comm, b.queue, skein::BlockLayout::over(b.comm, {m, m}), b.dtype);
  DistArray c(b.comm, b.queue, a.layout(), b.dtype);
  skein::ReplicatedArray rb(b.comm, b.queue, {m, m}, b.dtype);
  skein::dist::fill(a, skein::Operand::typed(b.dtype, 1.0));
  for (std::size_t i = 0; i < rb.local_size(); ++i)
    skein::fill(b.queue, rb.local(i), skein::Operand::typed(b.dtype, 0.5));
  std::vector<std::unique_ptr<VendorGemm>> vendor;
  for (std::size_t i = 0; i < a.local_size(); ++i) {
    vendor.push_back(std::make_unique<VendorGemm>(b.queue, a.block(i).device_idx));
  }
  const double flops = 2 * n * n * n;
  const double ref = b.time([&] {
    for (std::size_t i = 0; i < a.local_size(); ++i)
      vendor[i]->gemm(a.local(i), rb.local(i), c.local(i));
  });
  const double t = b.time([&] { skein::dist::gemm(1.0, a, rb, 0.0, c); });
  rows.push_back({"gemm C = A @ B", "TFLOP/s", vendor.front()->name(), flops / t / 1e12,
                  flops / ref / 1e12, t, ref});
  // Every element of C is 0.5 * m.
  check_result("gemm", skein::dist::sum(c), 0.5 * n * n * n);
}

}  // namespace

Measurement measure(const Options& o, std::size_t size, const skein::Runtime& runtime) {
  skein::Communicator comm(runtime);
  const skein::Queue queue(runtime.context());
  const Dtype dtype = o.dtype == "float64" ? Dtype::float64 : Dtype::float32;
  const Bench bench{o, runtime, comm, queue, dtype, size};
  std::vector<Row> rows;
  if (o.what == "axpy" || o.what == "sum") {
    const Vectors v = make_vectors(bench);
    // The reference: a device-to-device copy of x, block by block.
    const double copy = bench.time([&] {
      for (std::size_t i = 0; i < v.x.local_size(); ++i) v.z.local(i).set(v.x.local(i));
    });
    if (o.what == "axpy") {
      measure_axpy(bench, v, copy, rows);
    } else {
      measure_sum(bench, v, copy, rows);
    }
  } else {
    measure_gemm(bench, rows);
  }
  return {std::move(rows), std::string(runtime.context().api().name()), comm.backend_description(),
          runtime.context().device(0).description()};
}

}  // namespace skein_bench
