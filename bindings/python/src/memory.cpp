// SPDX-License-Identifier: BSD-3-Clause
// Memory pools (PyCUDA's DeviceMemoryPool): skein.DeviceMemoryPool, its statistics and limits, the
// queue's own pool (temporaries_pool), and Array.empty / Array.zeros with allocator=pool.
#include <string>

#include "bindings.hpp"

namespace skein::python {

namespace {

Allocator to_allocator(const py::handle& obj, const char* call) {
  if (py::isinstance<DeviceMemoryPool>(obj))
    return py::cast<const DeviceMemoryPool&>(obj).allocator();
  raise_argument(call,
                 "allocator must be a skein.DeviceMemoryPool; got a " +
                     std::string(Py_TYPE(obj.ptr())->tp_name),
                 "Pass allocator=skein.DeviceMemoryPool(context), or leave it out.");
}

// Array.empty and Array.zeros with allocator=: an overload added after array.cpp's, tried when
// that one does not take the call (it has no allocator parameter).
void add_allocator_overloads() {
  auto cls = py::reinterpret_borrow<py::object>(py::type::of<Array>());
  for (const bool zeros : {false, true}) {
    const char* attr = zeros ? "zeros" : "empty";
    const char* call = zeros ? "Array.zeros" : "Array.empty";
    cls.attr(attr) = py::staticmethod(py::cpp_function(
        [zeros, call](const Queue& q, const py::object& shape, const py::object& dtype,
                      const py::object& device_idx, const std::string& order,
                      const py::object& allocator) {
          const Allocator alloc = to_allocator(allocator, call);
          const auto idx = to_device_idx(device_idx, call);
          if (zeros) {
            return Array::zeros(q, to_shape(shape, call), to_dtype(dtype, call),
                                to_order(order, call), idx, alloc);
          }
          return Array::empty(q, to_shape(shape, call), to_dtype(dtype, call),
                              to_order(order, call), idx, alloc);
        },
        py::name(attr), py::scope(cls), py::sibling(py::getattr(cls, attr, py::none())),
        py::arg("queue"), py::arg("shape"), py::arg("dtype"), py::arg("device_idx") = py::none(),
        py::arg("order") = "C", py::kw_only(), py::arg("allocator"),
        "The same with memory from `allocator` (a skein.DeviceMemoryPool)."));
  }
}

}  // namespace

void bind_memory(py::module_& m) {
  py::class_<MemoryPoolStatistics>(m, "MemoryPoolStatistics", "A pool's counts at one instant.")
      .def_readonly("held_blocks", &MemoryPoolStatistics::held_blocks)
      .def_readonly("active_blocks", &MemoryPoolStatistics::active_blocks)
      .def_readonly("held_bytes", &MemoryPoolStatistics::held_bytes)
      .def_readonly("active_bytes", &MemoryPoolStatistics::active_bytes)
      .def_readonly("managed_bytes", &MemoryPoolStatistics::managed_bytes)
      .def("__eq__",
           [](const MemoryPoolStatistics& a, const MemoryPoolStatistics& b) { return a == b; })
      .def("__repr__", [](const MemoryPoolStatistics& s) {
        return "<skein.MemoryPoolStatistics held_blocks=" + std::to_string(s.held_blocks) +
               " active_blocks=" + std::to_string(s.active_blocks) +
               " held_bytes=" + std::to_string(s.held_bytes) +
               " active_bytes=" + std::to_string(s.active_bytes) +
               " managed_bytes=" + std::to_string(s.managed_bytes) + ">";
      });

  py::class_<DeviceMemoryPool>(
      m, "DeviceMemoryPool",
      "A pool of device memory for the devices of one context (PyCUDA's DeviceMemoryPool): "
      "memory given back is held for later requests of a similar size.")
      .def(py::init<const Context&>(), py::arg("context"))
      .def_property_readonly("context", &DeviceMemoryPool::context)
      .def("allocate", &DeviceMemoryPool::allocate, py::arg("device_idx"), py::arg("nbytes"),
           "A Buffer of `nbytes` on device `device_idx` (a held block of its bin when there is "
           "one).")
      .def(
          "empty",
          [](const DeviceMemoryPool& p, const Queue& q, const py::object& shape,
             const py::object& dtype, const py::object& device_idx) {
            return Array::empty(q, to_shape(shape, "DeviceMemoryPool.empty"),
                                to_dtype(dtype, "DeviceMemoryPool.empty"), Order::C,
                                to_device_idx(device_idx, "DeviceMemoryPool.empty"), p.allocator());
          },
          py::arg("queue"), py::arg("shape"), py::arg("dtype"), py::arg("device_idx") = py::none(),
          "Array.empty(queue, shape, dtype, allocator=pool).")
      .def_property_readonly("statistics", &DeviceMemoryPool::statistics)
      .def_property_readonly("held_blocks", &DeviceMemoryPool::held_blocks)
      .def_property_readonly("active_blocks", &DeviceMemoryPool::active_blocks)
      .def_property_readonly("held_bytes", &DeviceMemoryPool::held_bytes)
      .def_property_readonly("active_bytes", &DeviceMemoryPool::active_bytes)
      .def(
          "managed_bytes",
          [](const DeviceMemoryPool& p, const std::optional<std::size_t>& d) {
            return d ? p.managed_bytes(*d) : p.managed_bytes();
          },
          py::arg("device_idx") = py::none(),
          "Bytes of the blocks allocated and not freed (on one device, or all).")
      .def(
          "free_held",
          [](const DeviceMemoryPool& p, const std::optional<std::size_t>& d) {
            if (d) {
              p.free_held(*d);
            } else {
              p.free_held();
            }
          },
          py::arg("device_idx") = py::none(), "Frees the held blocks (of one device, or all).")
      .def("stop_holding", &DeviceMemoryPool::stop_holding,
           "From now on blocks given back are freed at once; frees the held ones.")
      .def("set_limit", &DeviceMemoryPool::set_limit, py::arg("device_idx"), py::arg("nbytes"),
           "Caps the bytes the pool keeps allocated on a device (MemoryError past it).")
      .def("clear_limit", &DeviceMemoryPool::clear_limit, py::arg("device_idx"))
      .def("limit", &DeviceMemoryPool::limit, py::arg("device_idx"))
      .def("set_limit_from_free_memory", &DeviceMemoryPool::set_limit_from_free_memory,
           py::arg("fraction"))
      .def_static("bin_number", &DeviceMemoryPool::bin_number, py::arg("nbytes"))
      .def_static("alloc_size", &DeviceMemoryPool::alloc_size, py::arg("bin"));

  m.def("temporaries_pool", &skein::temporaries_pool, py::arg("queue"),
        "The queue's own pool: the memory of arrays made on it and of Skein's temporaries.");
  add_allocator_overloads();
}

}  // namespace skein::python
