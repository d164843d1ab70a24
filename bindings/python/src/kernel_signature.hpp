// SPDX-License-Identifier: BSD-3-Clause
// What kernels.cpp and kernels_args.cpp share: a kernel's parameters as its source declares them,
// the Python-side Kernel and PreparedKernel, and the packing of Python arguments into launch
// arguments.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace skein::python {

// One kernel parameter: a pointer (GLOBAL_MEM T* x), or a scalar of a known dtype, or a scalar of
// a type the parser does not know (a struct: then only NumPy scalars of its size are taken).
struct KernelParam {
  std::string name;
  bool pointer = false;
  std::optional<Dtype> dtype;
};

// The parameters of kernel `name` in a program's source (`KERNEL void name(...)`, `__kernel`,
// `__global__`), with the OpenCL rewrite (_skein_base_x, _skein_off_x: one pointer) and dynamic
// local memory (LOCAL_MEM_DYNAMIC_PARAM, no argument) taken into account; nothing when the source
// does not declare it (a program from a binary).
std::optional<std::vector<KernelParam>> parse_kernel_signature(const std::string& source,
                                                               const std::string& name);

// The bytes of one scalar argument.
using ScalarSlot = std::array<std::byte, 16>;

// Python arguments as the launch arguments for one device: lists give one value per device
// (indexed by device_idx); scalars are written into `slots` (one per argument). LogicError, before
// anything is launched, for a wrong count, an array where a scalar is declared or the reverse, an
// array of another device, or a value the parameter's type cannot hold.
std::vector<detail::KernelArg> pack_kernel_args(
    const std::optional<std::vector<KernelParam>>& signature, const std::string& kernel,
    const py::args& args, std::size_t device_idx, std::span<ScalarSlot> slots);

// A packed argument passed through the C++ variadic launch calls (found by ADL there).
struct RawArg {
  detail::KernelArg arg;
};
inline detail::KernelArg make_kernel_arg(const RawArg& a) { return a.arg; }

struct PyKernel {
  PyKernel(Kernel k, std::optional<std::vector<KernelParam>> sig)
      : kernel(std::move(k)), signature(std::move(sig)) {}
  Kernel kernel;
  std::optional<std::vector<KernelParam>> signature;

  const PreparedKernel& prepared_for(const Queue& q, const py::handle& global,
                                     const py::handle& local, std::size_t local_mem);

 private:
  struct Last {
    Queue queue;
    WorkSize global;
    std::optional<WorkSize> local;
    std::size_t local_mem;
    PreparedKernel prepared;
  };
  std::optional<Last> last;
};

// Packs the arguments for every device of the prepared kernel first, then launches on each.
void launch_prepared(const PyKernel& kernel, const PreparedKernel& prepared, const py::args& args);

// What Kernel.prepare returns (holding its kernel, whose signature it uses).
struct PyPreparedKernel {
  std::shared_ptr<PyKernel> kernel;
  PreparedKernel prepared;
  void launch(const py::args& args) const { launch_prepared(*kernel, prepared, args); }
};

// skein.In, skein.Out, skein.InOut (PyCUDA's argument handlers): a NumPy array whose memory a
// launch copies to a device temporary before the kernel (In, InOut) and back after it (Out,
// InOut); see skein::In in <skein/program.hpp>. The array is held, contiguous (In: copied to a
// contiguous one when it is not; Out, InOut: LogicError unless contiguous and writable).
struct HostArg {
  py::array array;
  detail::KernelArg::Kind kind = detail::KernelArg::Kind::host_in;
};

// The launch with its device time (kernels_launch.cpp): PreparedKernel::timed_call from Python.
TimedLaunch timed_launch(const PyKernel& kernel, const PreparedKernel& prepared,
                         const py::args& args);
// kernels_launch.cpp: skein.In / Out / InOut, skein.KernelAttribute, skein.SharedConfig,
// skein.TimedLaunch, and Kernel's and PreparedKernel's methods for them (prepare_items,
// prepare_grid, num_args, preferred_local_size_multiple, get_attribute, set_attribute,
// set_cache_config, set_shared_config, timed_call, items).
void bind_kernel_launch(py::module_& m, py::class_<PyKernel, std::shared_ptr<PyKernel>>& kernel,
                        py::class_<PyPreparedKernel>& prepared);

// A Python dict of render globals (str, int, float, lists, Snippet, Module).
RenderGlobals to_render_globals(const py::handle& obj);

}  // namespace skein::python
