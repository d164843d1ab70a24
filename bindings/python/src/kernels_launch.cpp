// SPDX-License-Identifier: BSD-3-Clause
// Launch sizes and conveniences of the seeds on skein.Kernel and skein.PreparedKernel: pygpu's
// n= (prepare_items), preflsize and numargs; PyCUDA's grid and block (prepare_grid), function
// attributes and configurations, argument handlers (skein.In, Out, InOut) and timed calls.
#include <string>
#include <utility>
#include <vector>

#include "kernel_signature.hpp"

namespace skein::python {

namespace {

WorkSize launch_work_size(const py::handle& obj, const char* call) {
  const Shape s = to_shape(obj, call);
  if (s.empty() || s.size() > 3) {
    raise_argument(call, "a launch size has 1 to 3 dimensions; got " + to_string(s),
                   "Give an int or a tuple of 1 to 3 ints.");
  }
  return WorkSize(std::span<const std::size_t>(s));
}

py::tuple work_size_tuple(const WorkSize& w) {
  std::vector<std::size_t> v;
  for (unsigned d = 0; d < w.dims(); ++d) v.push_back(w[d]);
  return to_tuple(v);
}

HostArg make_host_arg(const py::handle& obj, detail::KernelArg::Kind kind, const char* call) {
  // A NumPy array, whose dtype says what the kernel reads (a list would become float64 or int64
  // unseen).
  if (!py::isinstance<py::array>(obj)) {
    raise_argument(call, std::string("a ") + Py_TYPE(obj.ptr())->tp_name + " was given",
                   "Pass a NumPy array of the dtype the kernel's pointer parameter points to.");
  }
  if (kind == detail::KernelArg::Kind::host_in) {
    // Read only: made contiguous (a copy when it is not).
    const py::module_ np = py::module_::import("numpy");
    return HostArg{np.attr("ascontiguousarray")(obj).cast<py::array>(), kind};
  }
  auto array = py::reinterpret_borrow<py::array>(obj);
  const int flags = py::detail::array_proxy(array.ptr())->flags;
  const bool contiguous = (flags & (py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ |
                                    py::detail::npy_api::NPY_ARRAY_F_CONTIGUOUS_)) != 0;
  if (!contiguous || !array.writeable()) {
    raise_argument(call,
                   std::string("the array is ") + (contiguous ? "read-only" : "not contiguous"),
                   "Pass a contiguous, writable NumPy array (numpy.empty, or a copy with "
                   "numpy.ascontiguousarray), and read the results from it.");
  }
  return HostArg{std::move(array), kind};
}

std::optional<LaunchSizes> optional_local(const py::object& local, const char* call) {
  if (local.is_none()) return std::nullopt;
  return LaunchSizes(launch_work_size(local, call));
}

// The launch's device time as PyCUDA's prepared_timed_call gives it: a callable that waits and
// returns seconds.
void bind_timing(py::module_& m, py::class_<PyPreparedKernel>& prepared) {
  py::class_<TimedLaunch>(m, "TimedLaunch",
                          "The device time of one launch (PyCUDA's prepared_timed_call): call it "
                          "for the seconds, which waits for the kernel.")
      .def(
          "__call__", [](const TimedLaunch& t) { return t.seconds(); },
          "The seconds the kernel took: the longest over its devices.")
      .def(
          "seconds",
          [](const TimedLaunch& t, const py::object& device_idx) {
            return device_idx.is_none() ? t.seconds() : t.seconds(device_idx.cast<std::size_t>());
          },
          py::arg("device_idx") = py::none(),
          "The seconds on one device (LogicError for a device it did not run on), or the longest.")
      .def_property_readonly("device_idxs", &TimedLaunch::device_idxs);
  prepared
      .def(
          "timed_call",
          [](const PyPreparedKernel& p, const py::args& args) {
            return timed_launch(*p.kernel, p.prepared, args);
          },
          "Launches as __call__ does, between timed events: returns a skein.TimedLaunch, a "
          "callable giving the kernel's device time in seconds (PyCUDA's prepared_timed_call).")
      .def(
          "global_size",
          [](const PyPreparedKernel& p, std::size_t d) {
            return work_size_tuple(p.prepared.global_size(d));
          },
          py::arg("device_idx") = 0,
          "The work items launched (what get_global_size() reports in the kernel).")
      .def(
          "local_size",
          [](const PyPreparedKernel& p, std::size_t d) {
            return work_size_tuple(p.prepared.local_size(d));
          },
          py::arg("device_idx") = 0)
      .def(
          "items",
          [](const PyPreparedKernel& p, std::size_t d) {
            return work_size_tuple(p.prepared.items(d));
          },
          py::arg("device_idx") = 0, "The work items asked for (prepare_items' n).");
}

void bind_kernel_settings(py::class_<PyKernel, std::shared_ptr<PyKernel>>& kernel) {
  kernel
      .def_property_readonly(
          "num_args", [](const PyKernel& k) { return k.kernel.num_args(); },
          "The number of arguments a launch passes (pygpu's numargs).")
      .def(
          "preferred_local_size_multiple",
          [](const PyKernel& k, std::size_t d) {
            return k.kernel.preferred_local_size_multiple(d);
          },
          py::arg("device_idx") = 0,
          "Local sizes should be multiples of this (pygpu's preflsize): OpenCL's preferred work "
          "group size multiple, CUDA's warp size.")
      .def(
          "get_attribute",
          [](const PyKernel& k, KernelAttribute a, std::size_t d) {
            return k.kernel.get_attribute(d, a);
          },
          py::arg("attribute"), py::arg("device_idx") = 0,
          "PyCUDA's Function.get_attribute (skein.KernelAttribute); LogicError on OpenCL for "
          "those it does not report.")
      .def_property_readonly(
          "num_regs",
          [](const PyKernel& k) { return k.kernel.get_attribute(0, KernelAttribute::num_regs); },
          "PyCUDA's Function.num_regs: get_attribute(KernelAttribute.num_regs) on device 0 "
          "(CUDA; LogicError on OpenCL).")
      .def_property_readonly(
          "shared_size_bytes",
          [](const PyKernel& k) {
            return k.kernel.get_attribute(0, KernelAttribute::shared_size_bytes);
          },
          "PyCUDA's Function.shared_size_bytes: static local memory per group, device 0.")
      .def_property_readonly(
          "local_size_bytes",
          [](const PyKernel& k) {
            return k.kernel.get_attribute(0, KernelAttribute::local_size_bytes);
          },
          "PyCUDA's Function.local_size_bytes: local (spill) memory per work item, device 0.")
      .def(
          "set_attribute",
          [](const PyKernel& k, KernelAttribute a, std::int64_t v) {
            k.kernel.set_attribute(a, v);
          },
          py::arg("attribute"), py::arg("value"),
          "PyCUDA's Function.set_attribute, on every device of the program (CUDA: "
          "max_dynamic_shared_size_bytes, preferred_shared_memory_carveout; LogicError on "
          "OpenCL).")
      .def(
          "set_cache_config",
          [](const PyKernel& k, CacheConfig c) { k.kernel.set_cache_config(c); }, py::arg("config"),
          "PyCUDA's Function.set_cache_config (CUDA; LogicError on OpenCL).")
      .def(
          "set_shared_config",
          [](const PyKernel& k, SharedConfig c) { k.kernel.set_shared_config(c); },
          py::arg("config"), "PyCUDA's Function.set_shared_config (CUDA; LogicError on OpenCL).");
}

}  // namespace

TimedLaunch timed_launch(const PyKernel& kernel, const PreparedKernel& prepared,
                         const py::args& args) {
  const auto& devices = prepared.device_idxs();
  const Queue& queue = prepared.queue();
  std::vector<Event> starts, ends;
  for (std::size_t d : devices) starts.push_back(queue.record_event(d));
  launch_prepared(kernel, prepared, args);
  for (std::size_t d : devices) ends.push_back(queue.record_event(d));
  return TimedLaunch(devices, std::move(starts), std::move(ends));
}

void bind_kernel_launch(py::module_& m, py::class_<PyKernel, std::shared_ptr<PyKernel>>& kernel,
                        py::class_<PyPreparedKernel>& prepared) {
  using Kind = detail::KernelArg::Kind;
  py::class_<HostArg>(m, "HostArg", "Host memory given to a kernel launch (skein.In, Out, InOut).")
      .def_readonly("array", &HostArg::array);
  m.def(
      "In", [](const py::handle& a) { return make_host_arg(a, Kind::host_in, "skein.In"); },
      py::arg("array"),
      "PyCUDA's In: the launch copies the array to a device temporary before the kernel.");
  m.def(
      "Out", [](const py::handle& a) { return make_host_arg(a, Kind::host_out, "skein.Out"); },
      py::arg("array"),
      "PyCUDA's Out: the launch copies a device temporary into the array after the kernel.");
  m.def(
      "InOut",
      [](const py::handle& a) { return make_host_arg(a, Kind::host_inout, "skein.InOut"); },
      py::arg("array"), "PyCUDA's InOut: copied in before the kernel and back after it.");

  py::enum_<KernelAttribute>(m, "KernelAttribute", "PyCUDA's function_attribute.")
      .value("max_threads_per_block", KernelAttribute::max_threads_per_block)
      .value("shared_size_bytes", KernelAttribute::shared_size_bytes)
      .value("const_size_bytes", KernelAttribute::const_size_bytes)
      .value("local_size_bytes", KernelAttribute::local_size_bytes)
      .value("num_regs", KernelAttribute::num_regs)
      .value("ptx_version", KernelAttribute::ptx_version)
      .value("binary_version", KernelAttribute::binary_version)
      .value("cache_mode_ca", KernelAttribute::cache_mode_ca)
      .value("max_dynamic_shared_size_bytes", KernelAttribute::max_dynamic_shared_size_bytes)
      .value("preferred_shared_memory_carveout", KernelAttribute::preferred_shared_memory_carveout);
  py::enum_<SharedConfig>(m, "SharedConfig", "PyCUDA's shared_config.")
      .value("default_bank_size", SharedConfig::default_bank_size)
      .value("four_byte_bank_size", SharedConfig::four_byte_bank_size)
      .value("eight_byte_bank_size", SharedConfig::eight_byte_bank_size);
  // skein.CacheConfig may be bound beside the context's driver controls: bound once.
  if (!py::detail::get_type_info(typeid(CacheConfig))) {
    py::enum_<CacheConfig>(m, "CacheConfig", "PyCUDA's func_cache.")
        .value("prefer_none", CacheConfig::prefer_none)
        .value("prefer_shared", CacheConfig::prefer_shared)
        .value("prefer_l1", CacheConfig::prefer_l1)
        .value("prefer_equal", CacheConfig::prefer_equal);
  }

  kernel
      .def(
          "prepare_items",
          [](const std::shared_ptr<PyKernel>& k, const Queue& q, const py::object& n,
             const py::object& local, std::size_t local_mem) {
            auto p = k->kernel.prepare_items(q, launch_work_size(n, "Kernel.prepare_items"),
                                             optional_local(local, "Kernel.prepare_items"),
                                             LocalMem{local_mem});
            return PyPreparedKernel{k, std::move(p)};
          },
          py::arg("queue"), py::arg("n"), py::arg("local_size") = py::none(),
          py::arg("local_mem") = 0,
          "pygpu's kernel(args, n=n): a launch over at least n work items (an int or a tuple), "
          "rounded up to whole work groups; the kernel must skip the work items past n. The "
          "local size is chosen (a multiple of preferred_local_size_multiple) when not given.")
      .def(
          "prepare_grid",
          [](const std::shared_ptr<PyKernel>& k, const Queue& q, const py::object& grid,
             const py::object& block, std::size_t local_mem) {
            auto p = k->kernel.prepare_grid(q, launch_work_size(grid, "Kernel.prepare_grid"),
                                            launch_work_size(block, "Kernel.prepare_grid"),
                                            LocalMem{local_mem});
            return PyPreparedKernel{k, std::move(p)};
          },
          py::arg("queue"), py::arg("grid"), py::arg("block"), py::arg("local_mem") = 0,
          "PyCUDA's function(args, grid=grid, block=block): grid work groups of block work "
          "items.");
  bind_kernel_settings(kernel);
  bind_timing(m, prepared);
}

}  // namespace skein::python
