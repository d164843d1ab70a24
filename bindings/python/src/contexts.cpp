// SPDX-License-Identifier: BSD-3-Clause
// Context, Queue, Event and Buffer. Calls that wait for the device (synchronize, Event.wait,
// blocking copies) release the GIL, so that other Python threads run meanwhile.
#include <cstring>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace skein::python {

DeviceFilter device_filter(const py::kwargs& kwargs, const char* call) {
  DeviceFilter filter;
  auto strings = [](const py::handle& v) {
    if (py::isinstance<py::str>(v)) return std::vector<std::string>{v.cast<std::string>()};
    return v.cast<std::vector<std::string>>();
  };
  for (const auto& [key, value] : kwargs) {
    const auto k = key.cast<std::string>();
    if (k == "platform_include_masks") {
      filter.platform_include_masks = strings(value);
    } else if (k == "platform_exclude_masks") {
      filter.platform_exclude_masks = strings(value);
    } else if (k == "device_include_masks") {
      filter.device_include_masks = strings(value);
    } else if (k == "device_exclude_masks") {
      filter.device_exclude_masks = strings(value);
    } else if (k == "unique_devices_only") {
      filter.unique_devices_only = value.cast<bool>();
    } else if (k == "include_pure_parallel_devices") {
      filter.include_pure_parallel_devices = value.cast<bool>();
    } else {
      raise_argument(call, "unknown device filter '" + k + "'",
                     "The filters are platform_include_masks, platform_exclude_masks, "
                     "device_include_masks, device_exclude_masks, unique_devices_only and "
                     "include_pure_parallel_devices.");
    }
  }
  return filter;
}

namespace {

QueuePriority to_priority(const py::object& obj) {
  if (obj.is_none()) return QueuePriority{};
  if (py::isinstance<py::str>(obj)) {
    const auto s = obj.cast<std::string>();
    if (s == "low") return QueuePriority::low();
    if (s == "high") return QueuePriority::high();
    raise_argument("Queue", "priority '" + s + "' is not one Skein knows",
                   "Give 'low', 'high', an int (the backend's priority number) or None.");
  }
  return QueuePriority::value(obj.cast<int>());
}

// A writable C-contiguous NumPy array's bytes, or a LogicError naming `call`.
std::span<std::byte> host_bytes(py::array a, const char* call) {
  if (!(a.flags() & py::array::c_style) || !a.writeable()) {
    raise_argument(call, "the host array must be writable and C-contiguous",
                   "Pass numpy.empty(...) or numpy.ascontiguousarray(...).");
  }
  return {static_cast<std::byte*>(a.mutable_data()), static_cast<std::size_t>(a.nbytes())};
}

ContextScheduling to_scheduling(const std::string& s) {
  for (auto v : {ContextScheduling::automatic, ContextScheduling::spin, ContextScheduling::yield,
                 ContextScheduling::blocking_sync}) {
    if (s == name(v)) return v;
  }
  throw py::value_error(
      "scheduling must be 'automatic', 'spin', 'yield' or 'blocking_sync', not '" + s + "'");
}

void bind_context(py::module_& m) {
  py::class_<Context>(m, "Context", "Devices of one platform used together.")
      .def_static(
          "from_devices",
          [](const py::object& devices, const std::optional<std::string>& scheduling) {
            std::vector<Device> list;
            if (py::isinstance<Device>(devices)) {
              list.push_back(devices.cast<Device>());
            } else {
              list = devices.cast<std::vector<Device>>();
            }
            if (!scheduling) return Context::from_devices(std::span<const Device>(list));
            return Context::from_devices(std::span<const Device>(list),
                                         ContextFlags{to_scheduling(*scheduling)});
          },
          py::arg("devices"), py::arg("scheduling") = py::none(),
          "A context over a device or a list of devices of one platform; `scheduling` "
          "('automatic', 'spin', 'yield', 'blocking_sync': PyCUDA's make_context flags) sets how "
          "host threads wait (CUDA; OpenCL takes 'automatic' only).")
      .def_static(
          "from_criteria",
          [](const Api& api, std::size_t devices_num, const py::kwargs& kwargs) {
            return Context::from_criteria(api, devices_num,
                                          device_filter(kwargs, "Context.from_criteria"));
          },
          py::arg("api"), py::arg("devices_num") = 1,
          "A context over `devices_num` devices of `api` that pass the filters (keyword "
          "arguments: platform_include_masks, device_include_masks, ... as grunnur's).")
      .def_property_readonly("api", &Context::api)
      .def_property_readonly("platform", &Context::platform)
      .def_property_readonly("devices", &Context::devices)
      .def_property_readonly("num_devices", &Context::num_devices)
      .def("device", &Context::device, py::arg("device_idx"))
      .def("deactivate", &Context::deactivate)
      .def(
          "scheduling",
          [](const Context& c, std::size_t device_idx) { return name(c.scheduling(device_idx)); },
          py::arg("device_idx") = 0, "The scheduling of a device's context, as a string.")
      .def("push", &Context::push, py::arg("device_idx") = 0,
           "PyCUDA's Context.push(): the device's CUDA context current on this thread.")
      .def("pop", &Context::pop, "PyCUDA's Context.pop(): undoes push().")
      .def(
          "synchronize",
          [](const Context& c) {
            const py::gil_scoped_release release;
            c.synchronize();
          },
          "PyCUDA's Context.synchronize(): waits for all work of the context.")
      .def_property("array_pool", &Context::array_pool, &Context::set_array_pool,
                    "Whether arrays made by Skein's calls come from the context's pool.")
      .def("__eq__", [](const Context& a, const Context& b) { return a == b; })
      .def("__repr__", [](const Context& c) {
        return "<skein.Context " + std::string(c.api().shortcut()) + ", " +
               std::to_string(c.num_devices()) + " device(s)>";
      });
}

void bind_queue(py::module_& m) {
  py::class_<Queue>(m, "Queue", "A queue on one or several devices of a context.")
      .def(py::init([](const Context& context, const py::object& device_idxs,
                       const py::object& priority, bool blocking) {
             std::vector<std::size_t> idxs;
             if (device_idxs.is_none()) {
               for (std::size_t i = 0; i < context.num_devices(); ++i) idxs.push_back(i);
             } else {
               idxs = device_idxs.cast<std::vector<std::size_t>>();
             }
             return Queue(context, std::move(idxs), to_priority(priority),
                          blocking ? QueueSync::blocking : QueueSync::non_blocking);
           }),
           py::arg("context"), py::arg("device_idxs") = py::none(),
           py::arg("priority") = py::none(), py::arg("blocking") = false,
           "A queue on the context's devices (all of them, or `device_idxs`); priority 'low', "
           "'high' or a number; blocking: its CUDA streams synchronise with the legacy default "
           "stream (PyCUDA's Stream(flags=0)).")
      .def_static("on_device_idxs", &Queue::on_device_idxs, py::arg("context"),
                  py::arg("device_idxs"))
      .def_property_readonly("context", &Queue::context)
      .def_property_readonly("device_idxs", &Queue::device_idxs)
      .def("has_device", &Queue::has_device, py::arg("device_idx"))
      .def("priority", &Queue::priority, py::arg("device_idx"))
      .def(
          "synchronize",
          [](const Queue& q, const std::optional<std::size_t>& device_idx) {
            const py::gil_scoped_release release;
            if (device_idx) {
              q.synchronize(*device_idx);
            } else {
              q.synchronize();
            }
          },
          py::arg("device_idx") = py::none(), "Blocks until the queue's work is done.")
      .def(
          "blocking",
          [](const Queue& q, std::size_t d) { return q.sync(d) == QueueSync::blocking; },
          py::arg("device_idx") = 0, "Whether the queue's stream on the device is blocking.")
      .def(
          "record_event",
          [](const Queue& q, std::size_t device_idx, bool blocking_sync, bool disable_timing) {
            return q.record_event(device_idx, EventFlags{.blocking_sync = blocking_sync,
                                                         .disable_timing = disable_timing});
          },
          py::arg("device_idx") = 0, py::arg("blocking_sync") = false,
          py::arg("disable_timing") = false,
          "An event after the work so far on a device; blocking_sync and disable_timing are "
          "PyCUDA's event_flags.")
      .def(
          "wait_for",
          [](const Queue& q, const Event& e, const std::optional<std::size_t>& device_idx) {
            if (device_idx) {
              q.wait_for(e, *device_idx);
            } else {
              q.wait_for(e);
            }
          },
          py::arg("event"), py::arg("device_idx") = py::none())
      .def("__eq__", [](const Queue& a, const Queue& b) { return a == b; });

  py::class_<Event>(m, "Event", "A point in a device queue's work.")
      .def(
          "wait",
          [](const Event& e) {
            const py::gil_scoped_release release;
            e.wait();
          },
          "Blocks until the work before the event is done.")
      .def("query", &Event::query)
      .def("time_since", &Event::time_since, py::arg("start"), "Milliseconds since `start`.")
      .def("time_till", &Event::time_till, py::arg("end"));
}

void bind_buffer(py::module_& m) {
  py::class_<Buffer>(m, "Buffer", "Device memory of one device of a context.")
      .def_static("allocate", &Buffer::allocate, py::arg("context"), py::arg("device_idx"),
                  py::arg("size"), "Allocates `size` bytes on the context's device `device_idx`.")
      .def_property_readonly("context", &Buffer::context)
      .def_property_readonly("device_idx", &Buffer::device_idx)
      .def_property_readonly("offset", &Buffer::offset)
      .def_property_readonly("size", &Buffer::size)
      .def("get_sub_region", &Buffer::get_sub_region, py::arg("origin"), py::arg("size"))
      .def(
          "get",
          [](const Buffer& b, const Queue& q, py::array host) {
            const auto bytes = host_bytes(host, "Buffer.get");
            const py::gil_scoped_release release;
            b.get(q, bytes);
          },
          py::arg("queue"), py::arg("host_array"),
          "Copies the buffer into a C-contiguous host array of the same size in bytes.")
      .def(
          "set",
          [](const Buffer& b, const Queue& q, const py::object& source) {
            if (py::isinstance<Buffer>(source)) {
              b.set(q, source.cast<Buffer>());
              return;
            }
            const auto host = py::array::ensure(source, py::array::c_style);
            if (!host) throw py::error_already_set();
            const std::span<const std::byte> bytes(static_cast<const std::byte*>(host.data()),
                                                   static_cast<std::size_t>(host.nbytes()));
            const py::gil_scoped_release release;
            b.set(q, bytes);
          },
          py::arg("queue"), py::arg("source"),
          "Copies a host array (of the buffer's size in bytes) or another Buffer into it.");
}

}  // namespace

void bind_contexts(py::module_& m) {
  bind_context(m);
  bind_queue(m);
  bind_buffer(m);
}

}  // namespace skein::python
