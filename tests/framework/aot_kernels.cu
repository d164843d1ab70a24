// SPDX-License-Identifier: BSD-3-Clause
// Kernels compiled ahead of time by nvcc at build time (tests/CMakeLists.txt) into PTX, CUBINs and
// a fatbin, loaded by Program::from_file in interop_test.cpp. Plain CUDA: no Skein prelude.
extern "C" __global__ void scale_add(float* y, const float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Reverses each block's elements through dynamic shared memory (the launch's LocalMem).
extern "C" __global__ void reverse_blocks(float* y, const float* x) {
  extern __shared__ float tile[];
  const unsigned l = threadIdx.x, g = blockDim.x, i = blockIdx.x * g + l;
  tile[l] = x[i];
  __syncthreads();
  y[i] = tile[g - 1 - l];
}
