// SPDX-License-Identifier: BSD-3-Clause
// Whether compute-sanitizer's memcheck knows managed memory allocated with CU_MEM_ATTACH_HOST:
// a plain driver program (no Skein) allocates x (CU_MEM_ATTACH_GLOBAL) and y (the attachment
// given, default CU_MEM_ATTACH_HOST), and a kernel writes y[i] = 3 x[i] + 1 on a device with
// concurrent managed access, where the attachment does not restrict the device. It exits 0 when
// every y[i] is right, 1 when not, 2 when the device lacks concurrent managed access.
//
// Under `compute-sanitizer --tool memcheck`, CUDA 13.0 with driver 580 on an H200 reports every
// write to a CU_MEM_ATTACH_HOST allocation as out of bounds (and kills the kernel), and none with
// CU_MEM_ATTACH_GLOBAL; run alone, both give the right y. tools/gpu-check.sh's memcheck step runs
// this first and leaves out the one Skein test that writes such memory from a kernel
// (Memory.ManagedBufferIsSharedByKernelsCopiesArraysAndTheHost) only while memcheck still
// reports the plain program.
//
//   g++ -std=c++20 tools/memcheck-attach-host.cpp -I/usr/local/cuda/include
//       -L/usr/local/cuda/lib64 -lcuda -lnvrtc -o memcheck-attach-host      (one line)
//   compute-sanitizer --tool memcheck --error-exitcode 99 ./memcheck-attach-host [1|2]
#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(call)                                                             \
  do {                                                                          \
    const CUresult r = (call);                                                  \
    if (r != CUDA_SUCCESS) {                                                    \
      const char* name = "?";                                                   \
      cuGetErrorName(r, &name);                                                 \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #call, name, __LINE__); \
      std::exit(3);                                                             \
    }                                                                           \
  } while (0)

namespace {
const char* kSource = R"(
extern "C" __global__ void affine(int* y, const int* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3 * x[i] + 1;
}
)";
}  // namespace

int main(int argc, char** argv) {
  const unsigned attach = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : CU_MEM_ATTACH_HOST;
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  int concurrent = 0, major = 0, minor = 0;
  CHECK(cuDeviceGetAttribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, device));
  CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  if (!concurrent) {
    std::printf("device 0 has no concurrent managed access\n");
    return 2;
  }
  CUcontext context;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, kSource, "affine.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return 3;
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
  const char* options[] = {arch.c_str()};
  if (nvrtcCompileProgram(program, 1, options) != NVRTC_SUCCESS) return 3;
  std::size_t size = 0;
  nvrtcGetCUBINSize(program, &size);
  std::vector<char> cubin(size);
  nvrtcGetCUBIN(program, cubin.data());
  nvrtcDestroyProgram(&program);
  CUmodule module;
  CUfunction affine;
  CHECK(cuModuleLoadData(&module, cubin.data()));
  CHECK(cuModuleGetFunction(&affine, module, "affine"));

  int n = 100003;
  CUdeviceptr x, y;
  CHECK(cuMemAllocManaged(&x, sizeof(int) * n, CU_MEM_ATTACH_GLOBAL));
  CHECK(cuMemAllocManaged(&y, sizeof(int) * n, attach));
  int* hx = reinterpret_cast<int*>(x);
  int* hy = reinterpret_cast<int*>(y);
  for (int i = 0; i < n; ++i) hx[i] = i;
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  void* args[] = {&y, &x, &n};
  CHECK(cuLaunchKernel(affine, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  CHECK(cuStreamSynchronize(stream));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += hy[i] != 3 * i + 1;
  std::printf("y attached with %u (%s): %d of %d values wrong\n", attach,
              attach == CU_MEM_ATTACH_HOST ? "CU_MEM_ATTACH_HOST" : "CU_MEM_ATTACH_GLOBAL", wrong,
              n);
  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(x));
  CHECK(cuMemFree(y));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return wrong != 0;
}
