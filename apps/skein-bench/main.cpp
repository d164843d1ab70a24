// skein-bench: Skein's array kernels on distributed arrays against their reference, measured in
// the same run, under mpirun:
//
//   mpirun -np 4 skein-bench axpy --size 268435456 --dtype float32
//   mpirun -np 1 skein-bench gemm --size 16384 --devices-per-rank 4
//
//   axpy   z = a * x + y over x, y, z split across every device; GB/s counts 3 arrays (bytes read
//          and written). Reference: a device-to-device copy of the same blocks (2 arrays).
//   sum    the sum of x to one value on every rank (per device, then all_reduce); GB/s counts the
//          bytes read. Reference: the same device-to-device copy.
//   gemm   C = A @ B, A and C split by rows, B on every device; TFLOP/s = 2 n^3 / time.
//          Reference: cuBLAS (CUDA) or CLBlast (OpenCL) called directly on the same blocks.
//
// Each figure is the median of --repeat timed runs after warm-up; a run is timed on the host from
// a barrier to the end of the slowest rank's work. Rank 0 prints the table (and --json FILE).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <skein/dist_ops.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#if SKEIN_HAS_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <skein/cuda.hpp>
#endif
#if SKEIN_HAS_CLBLAST
#include <clblast.h>

#include <skein/opencl.hpp>
#endif

namespace {

using skein::Array;
using skein::DistArray;
using skein::Dtype;

struct Options {
  std::string what;
  std::size_t size = 0;
  std::string dtype = "float32";
  std::size_t devices_per_rank = 0;
  int repeat = 20, warmup = 3;
  std::string json_file;
};

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

struct Row {
  std::string what, unit, reference;
  double skein = 0, peer = 0;
};

int bench(const Options& o, const skein::Runtime& runtime) {
  skein::Communicator comm(runtime);
  const skein::Queue queue(runtime.context());
  const Dtype dtype = o.dtype == "float64" ? Dtype::float64 : Dtype::float32;
  const double item = static_cast<double>(skein::itemsize(dtype));
  const bool printer = runtime.rank() == 0;
  std::vector<Row> rows;

  const double n = static_cast<double>(o.size);
  if (o.what == "axpy" || o.what == "sum") {
    DistArray x(comm, queue, skein::BlockLayout::over(comm, {o.size}), dtype);
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
                      copy_gbps});
      // The result, checked: every element is 0.5 * 1 + 2.
      const double total = skein::dist::sum(z);
      if (std::abs(total - 2.5 * n) > 1e-3 * 2.5 * n) {
        if (printer) std::fprintf(stderr, "skein-bench: axpy result wrong (sum %g, expected %g)\n", total, 2.5 * n);
        return 1;
      }
    } else {
      double total = 0;
      const double t = time_median(runtime, queue, o, [&] { total = skein::dist::sum(x); });
      rows.push_back({"sum of x", "GB/s", "device-to-device copy", n * item / t / 1e9, copy_gbps});
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
                      copy_gbps / static_cast<double>(comm.size())});
      if (std::abs(total - n) > 1e-3 * n) {
        if (printer) std::fprintf(stderr, "skein-bench: sum wrong (%g, expected %g)\n", total, n);
        return 1;
      }
    }
  } else {
    const std::size_t m = o.size;
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
                    flops / ref / 1e12});
    // Every element of C is 0.5 * m.
    const double total = skein::dist::sum(c);
    if (std::abs(total - 0.5 * n * n * n) > 1e-3 * 0.5 * n * n * n) {
      if (printer) std::fprintf(stderr, "skein-bench: gemm result wrong\n");
      return 1;
    }
  }

  if (printer) {
    std::printf("# skein-bench %s: size %zu, %s, %zu device(s) on %d rank(s) (%s, %s), median of %d\n",
                o.what.c_str(), o.size, o.dtype.c_str(), comm.size(), runtime.size(),
                std::string(runtime.context().api().name()).c_str(),
                comm.backend_description().c_str(), o.repeat);
    std::printf("# %-20s %12s %12s %8s  %s\n", "what", "skein", "reference", "ratio", "reference is");
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) {
      std::printf("  %-20s %12.1f %12.1f %8.3f  %s (%s)\n", r.what.c_str(), r.skein, r.peer,
                  r.skein / r.peer, r.reference.c_str(), r.unit.c_str());
      out.push_back({{"what", r.what}, {"unit", r.unit}, {"skein", r.skein}, {"reference", r.peer},
                     {"ratio", r.skein / r.peer}, {"reference_is", r.reference}});
    }
    if (!o.json_file.empty()) {
      std::ofstream(o.json_file) << nlohmann::json{{"tool", "skein-bench"},
                                                   {"benchmark", o.what},
                                                   {"size", o.size},
                                                   {"dtype", o.dtype},
                                                   {"devices", comm.size()},
                                                   {"ranks", runtime.size()},
                                                   {"rows", out}}
                                        .dump(2)
                                 << "\n";
    }
  }
  return 0;
}

int run(const Options& o, int* argc, char*** argv) {
  skein::PlacementOptions placement;
  if (o.devices_per_rank > 0) placement.devices_per_rank = o.devices_per_rank;
  skein::Runtime runtime(argc, argv, placement);
  try {
    return bench(o, runtime);
  } catch (const std::exception& e) {
    // One rank failing must end the job, not leave the others waiting in a collective.
    std::fprintf(stderr, "skein-bench: rank %d: %s\n", runtime.rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(runtime.comm(), 1);
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Skein's array kernels on distributed arrays against their reference in the same "
               "run (run under mpirun)"};
  Options o;
  app.require_subcommand(1);
  for (const char* name : {"axpy", "sum", "gemm"}) {
    auto* sub = app.add_subcommand(name, std::string(name) == "gemm"
                                             ? "C = A @ B against cuBLAS / CLBlast called directly"
                                             : std::string(name) + " against a device copy");
    sub->add_option("--size", o.size, std::string(name) == "gemm" ? "Matrix side" : "Elements")
        ->required()
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
    sub->add_option("--dtype", o.dtype)->check(CLI::IsMember({"float32", "float64"}));
    sub->add_option("--devices-per-rank", o.devices_per_rank,
                    "Devices each rank drives (default: an even share)");
    sub->add_option("--repeat", o.repeat, "Timed runs (the median is reported)")
        ->check(CLI::Range(1, 100000));
    sub->add_option("--warmup", o.warmup)->check(CLI::Range(0, 100000));
    sub->add_option("--json", o.json_file, "Also write the table to this JSON file (rank 0)");
  }
  CLI11_PARSE(app, argc, argv);
  o.what = app.get_subcommands().front()->get_name();
  try {
    return run(o, &argc, &argv);
  } catch (const std::exception& e) {
    // The runtime itself failed (placement, MPI): every rank sees that on its own.
    std::fprintf(stderr, "skein-bench: %s\n", e.what());
    return 1;
  }
}
