// SPDX-License-Identifier: BSD-3-Clause
// skein-bench's parts: the options, one measurement of an operation on one runtime (ops.cpp), the
// scaling run over growing sets of devices and ranks (scaling.cpp) and its SVG plot (svg_plot.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <skein/runtime.hpp>

namespace skein_bench {

struct Options {
  std::string what;  // axpy | sum | gemm (the operation; scaling: --op)
  std::size_t size = 0;
  std::string dtype = "float32";
  std::size_t devices_per_rank = 0;  // 0: the runtime's even share
  int repeat = 20, warmup = 3;
  std::string json_file;

  // The scaling mode.
  bool weak = false;                     // size per device instead of the same global size
  std::size_t max_devices_per_rank = 0;  // 0: the devices each rank gets by default
  std::string svg_file;
};

// One line of the table: Skein's figure and the reference's, measured in the same run.
struct Row {
  std::string what, unit, reference;
  double skein = 0, peer = 0;
  // The medians behind the figures (seconds; 0 where the figure is not a timed run of its own).
  double seconds = 0, reference_seconds = 0;
};

// What one measurement found, and where it ran.
struct Measurement {
  std::vector<Row> rows;  // the first is the operation's main figure
  std::string api;        // "CUDA", "OpenCL"
  std::string backend;    // the communicator's, e.g. "NCCL 2.21.5"
  std::string device;     // rank 0's first device
};

// Measures o.what on `size` elements (gemm: a size x size matrix) over every device of every rank
// of `runtime`, and checks the result (throws skein::RuntimeError when it is wrong). Every rank
// gets the same rows.
Measurement measure(const Options& o, std::size_t size, const skein::Runtime& runtime);

// The scaling run on MPI_COMM_WORLD (MPI initialised): see scaling.cpp. Returns the exit status.
int run_scaling(const Options& o);

}  // namespace skein_bench
