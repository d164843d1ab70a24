// SPDX-License-Identifier: BSD-3-Clause
// The application's own kernel, compiled ahead of time by nvcc (docs/CMakeLists.txt:
// nvcc -fatbin) and loaded by docs/examples/interop.cpp with skein::Program::from_file.
// extern "C": the name stays "fill_rows" in the module.
extern "C" __global__ void fill_rows(double* block, long first_row, int rows, int cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) block[i] = static_cast<double>((first_row + i / cols) * cols + i % cols);
}
