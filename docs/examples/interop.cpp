// SPDX-License-Identifier: BSD-3-Clause
// Skein inside an existing code that owns its device memory, its streams (command queues) and its
// kernels: Skein works on them in place. Each rank allocates one block per device and a stream
// per device with the backend's own API, fills the blocks with its own kernel (on CUDA compiled
// ahead of time by nvcc), and hands them to Skein for a DistArray, a sum, an all_reduce, an HDF5
// write and a DLPack round trip. Built by the `docs-examples` target (docs/CMakeLists.txt);
// quoted in docs/guide.md ("Using Skein from an existing code"). Run with
//   POCL_DEVICES="pthread pthread pthread pthread" mpirun -n 2 ./interop
#include <skein/skein.hpp>

#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <vector>

#if SKEIN_HAS_CUDA
#include <cuda_runtime.h>
#include <skein/cuda.hpp>
#endif
#if SKEIN_HAS_OPENCL
#include <skein/opencl.hpp>
#endif
#if SKEIN_HAS_DLPACK
#include <skein/dlpack.hpp>
#endif
#if SKEIN_HAS_HDF5
#include <skein/hdf5.hpp>
#endif

// What the application made with the backend's API, seen by Skein: a queue over its streams and
// one Buffer over each of its blocks. `release` gives back what the application still owns.
struct Native {
  skein::Queue queue;
  std::vector<skein::Buffer> blocks;
  std::function<void()> fill;     // runs the application's own kernel on every block
  std::function<void()> release;  // the streams / command queues, after Skein's last use
};

#if SKEIN_HAS_CUDA && defined(SKEIN_EXAMPLE_FATBIN)
Native cuda_side(const skein::Communicator& comm, const skein::BlockLayout& layout,
                 std::size_t cols) {
  const skein::Context& ctx = comm.context();
  std::vector<std::size_t> devices;
  std::vector<CUstream> streams;
  std::vector<skein::Buffer> blocks;
  for (std::size_t l = 0; l < comm.local_size(); ++l) {
    const std::size_t d = comm.device_idx(l);
    cudaSetDevice(static_cast<int>(skein::cuda::native_device(ctx.device(d))));
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    const auto member = static_cast<std::size_t>(comm.rank_of(l));
    const std::size_t bytes = layout.member_rows(member).size() * cols * sizeof(double);
    void* block = nullptr;
    if (cudaMalloc(&block, bytes > 0 ? bytes : 1) != cudaSuccess)
      throw std::runtime_error("cudaMalloc");
    devices.push_back(d);
    streams.push_back(reinterpret_cast<CUstream>(stream));
    // Shared ownership: Skein calls cudaFree once its last Buffer over the block is gone.
    blocks.push_back(skein::cuda::buffer_from_native(ctx, d, reinterpret_cast<CUdeviceptr>(block),
                                                     bytes, [block] { cudaFree(block); }));
  }
  skein::Queue queue = skein::cuda::queue_from_native(ctx, devices, streams);
  // The application's kernel, compiled by nvcc at build time (SKEIN_EXAMPLE_FATBIN: its path;
  // docs/examples/interop_kernels.cu).
  const skein::Program program = skein::Program::from_file(ctx, SKEIN_EXAMPLE_FATBIN);
  auto fill = [&comm, &layout, cols, queue, program, blocks] {
    for (std::size_t l = 0; l < blocks.size(); ++l) {
      const auto rows = layout.member_rows(static_cast<std::size_t>(comm.rank_of(l)));
      if (rows.empty()) continue;
      program.kernel("fill_rows")
          .prepare(queue, skein::LaunchSizes{(rows.size() * cols + 127) / 128 * 128},
                   skein::LaunchSizes{128})
          .on_devices(std::vector<std::size_t>{blocks[l].device_idx()}, blocks[l],
                      static_cast<long>(rows.begin), static_cast<int>(rows.size()),
                      static_cast<int>(cols));
    }
  };
  auto release = [streams] {
    for (CUstream s : streams) cudaStreamDestroy(reinterpret_cast<cudaStream_t>(s));
  };
  return Native{queue, blocks, fill, release};
}
#endif

#if SKEIN_HAS_OPENCL
Native opencl_side(const skein::Communicator& comm, const skein::BlockLayout& layout,
                   std::size_t cols) {
  const skein::Context& ctx = comm.context();
  const cl_context raw = skein::opencl::native_context(ctx);
  std::vector<std::size_t> devices;
  std::vector<cl_command_queue> queues;
  std::vector<skein::Buffer> blocks;
  for (std::size_t l = 0; l < comm.local_size(); ++l) {
    const std::size_t d = comm.device_idx(l);
    cl_int err = CL_SUCCESS;
    queues.push_back(
        clCreateCommandQueue(raw, skein::opencl::native_device(ctx.device(d)), 0, &err));
    const auto member = static_cast<std::size_t>(comm.rank_of(l));
    const std::size_t bytes = layout.member_rows(member).size() * cols * sizeof(double);
    cl_mem block = clCreateBuffer(raw, CL_MEM_READ_WRITE, bytes > 0 ? bytes : 1, nullptr, &err);
    if (err != CL_SUCCESS) throw std::runtime_error("clCreateBuffer");
    devices.push_back(d);
    // Skein takes a reference of its own, so the application's can go now.
    blocks.push_back(skein::opencl::buffer_from_native(ctx, d, block, bytes));
    clReleaseMemObject(block);
  }
  skein::Queue queue = skein::opencl::queue_from_native(ctx, devices, queues);
  // The application's kernel, here as OpenCL C built by Skein (any cl_program binary would do:
  // skein::Program::from_binary).
  const skein::Program program(ctx, R"(
KERNEL void fill_rows(GLOBAL_MEM double* block, long first_row, int rows, int cols)
{
    const int i = get_global_id(0);
    if (i < rows * cols) block[i] = (double)((first_row + i / cols) * cols + i % cols);
}
)");
  auto fill = [&comm, &layout, cols, queue, program, blocks] {
    for (std::size_t l = 0; l < blocks.size(); ++l) {
      const auto rows = layout.member_rows(static_cast<std::size_t>(comm.rank_of(l)));
      if (rows.empty()) continue;
      program.kernel("fill_rows")
          .prepare(queue, skein::LaunchSizes{(rows.size() * cols + 63) / 64 * 64},
                   skein::LaunchSizes{64})
          .on_devices(std::vector<std::size_t>{blocks[l].device_idx()}, blocks[l],
                      static_cast<std::int64_t>(rows.begin), static_cast<std::int32_t>(rows.size()),
                      static_cast<std::int32_t>(cols));
    }
  };
  auto release = [queues] {
    for (cl_command_queue q : queues) clReleaseCommandQueue(q);
  };
  return Native{queue, blocks, fill, release};
}
#endif

int main(int argc, char** argv) try {
  skein::Runtime runtime(&argc, &argv);
  try {
    skein::Communicator comm(runtime);
    const std::size_t rows = 61, cols = 8;  // uneven blocks on purpose
    const auto layout = skein::BlockLayout::over(comm, {rows, cols});
    std::optional<Native> native;
#if SKEIN_HAS_CUDA && defined(SKEIN_EXAMPLE_FATBIN)
    if (comm.context().api().id() == skein::ApiId::cuda) native = cuda_side(comm, layout, cols);
#endif
#if SKEIN_HAS_OPENCL
    if (comm.context().api().id() == skein::ApiId::opencl) native = opencl_side(comm, layout, cols);
#endif
    if (!native) {
      std::cerr << "this example needs OpenCL devices, or CUDA devices and nvcc at build time\n";
      return 1;
    }
    bool ok = true;
    {
      // The application's kernel fills its blocks on its streams; Skein's work below is ordered
      // after it on the same streams, with no synchronisation in between.
      native->fill();
      skein::DistArray u(comm, native->queue, layout, skein::Dtype::float64, native->blocks);
      const double total = skein::dist::sum(u);  // 0 + 1 + ... + rows * cols - 1, on every rank
      const double n = rows * cols;
      ok = ok && total == n * (n - 1) / 2;

      // An all_reduce over the blocks' memory: each member's first element, summed.
      std::vector<skein::Array> firsts;
      for (std::size_t l = 0; l < u.local_size(); ++l)
        firsts.push_back(u.local(l).reshape({u.local(l).size()}).slice(0, 1));
      comm.all_reduce(native->queue, firsts, firsts, skein::ReduceOp::sum);
      double want = 0;
      for (std::size_t m = 0; m < layout.members(); ++m)
        want += static_cast<double>(layout.member_rows(m).begin * cols);
      for (const auto& f : firsts) ok = ok && f.get<double>().front() == want;

#if SKEIN_HAS_HDF5
      {
        auto file = skein::hdf5::File::create(comm, "interop.h5");
        file.write("u", u);
      }
#endif
#if SKEIN_HAS_DLPACK
      // A block out as a DLPack tensor (what PyTorch, CuPy or JAX take) and back, no copy.
      DLManagedTensor* tensor = skein::to_dlpack(u.local(0));
      const skein::Array back = skein::from_dlpack(native->queue, tensor);
      ok = ok && back.get<double>() == u.local(0).get<double>();
#endif
      native->queue.synchronize();
    }
    const auto release = native->release;
    native.reset();  // Skein's queue and buffers go first (the blocks' cudaFree runs here)
    release();
    if (runtime.rank() == 0) std::cout << (ok ? "ok" : "FAILED") << "\n";
    return ok ? 0 : 1;
  } catch (const skein::Error& e) {
    std::cerr << "rank " << runtime.rank() << ": " << e.what() << "\n";
    return 1;
  }
} catch (const skein::Error& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
