// SPDX-License-Identifier: BSD-3-Clause
// Discovery: API, Platform, Device and DeviceParameters, with grunnur's names (API.all_available(),
// Platform.all(api), Device.all(platform), all_by_masks) over Skein's Api, Platform and Device.
#include <string>
#include <vector>

#include "bindings.hpp"

namespace skein::python {

namespace {

std::vector<std::string> masks(const py::object& obj) {
  if (obj.is_none()) return {};
  if (py::isinstance<py::str>(obj)) return {obj.cast<std::string>()};
  return obj.cast<std::vector<std::string>>();
}

void bind_api(py::module_& m) {
  py::enum_<ApiId>(m, "APIID", "An API's identifier (grunnur's APIID).")
      .value("cuda", ApiId::cuda)
      .value("opencl", ApiId::opencl)
      .def_property_readonly("shortcut", [](ApiId id) { return std::string(shortcut(id)); })
      .def_property_readonly("name_", [](ApiId id) { return std::string(name(id)); });

  py::class_<ApiStatus>(m, "APIStatus", "What API.status() reports for one API.")
      .def_readonly("id", &ApiStatus::id)
      .def_readonly("compiled_in", &ApiStatus::compiled_in)
      .def_readonly("available", &ApiStatus::available)
      .def_readonly("version", &ApiStatus::version)
      .def_readonly("reason", &ApiStatus::reason)
      .def("__repr__", [](const ApiStatus& s) {
        return "<skein.APIStatus " + std::string(shortcut(s.id)) +
               (s.available ? " available" : " unavailable: " + s.reason) + ">";
      });

  py::class_<Api>(m, "API", "A GPGPU API (CUDA or OpenCL) usable on this machine.")
      .def_static("all_available", &Api::all_available, "The APIs usable here, CUDA first.")
      .def_static(
          "all_by_shortcut",
          [](const std::optional<std::string>& s) {
            return s ? Api::all_by_shortcut(*s) : Api::all_by_shortcut();
          },
          py::arg("shortcut") = py::none(),
          "A list of the one API named ('cuda' or 'opencl'; raises ApiUnavailableError when it "
          "is not usable here), or all available ones for None.")
      .def_static("from_api_id", &Api::from_id, py::arg("api_id"))
      .def_static("status", &Api::status, "Every API Skein knows, available or not, and why.")
      .def_property_readonly("id", &Api::id)
      .def_property_readonly("shortcut", [](const Api& a) { return std::string(a.shortcut()); })
      .def_property_readonly("name", [](const Api& a) { return std::string(a.name()); })
      .def_property_readonly("version", &Api::version)
      .def_property_readonly("platforms", &Api::platforms)
      .def("__eq__", [](const Api& a, const Api& b) { return a == b; })
      .def("__hash__", [](const Api& a) { return static_cast<int>(a.id()); })
      .def("__repr__",
           [](const Api& a) { return "<skein.API " + std::string(a.shortcut()) + ">"; });
}

void bind_platform(py::module_& m) {
  py::class_<Platform>(m, "Platform", "A platform of an API (a driver or an OpenCL platform).")
      .def_static("all", &Platform::all, py::arg("api"))
      .def_static(
          "all_by_masks",
          [](const Api& api, const py::object& include, const py::object& exclude) {
            return Platform::all_by_masks(api, masks(include), masks(exclude));
          },
          py::arg("api"), py::arg("include_masks") = py::none(),
          py::arg("exclude_masks") = py::none(),
          "Platforms whose names match one of include_masks (regular expressions) and none of "
          "exclude_masks.")
      .def_static("from_index", &Platform::from_index, py::arg("api"), py::arg("platform_idx"))
      .def_property_readonly("api", &Platform::api)
      .def_property_readonly("index", &Platform::index)
      .def_property_readonly("name", &Platform::name)
      .def_property_readonly("vendor", &Platform::vendor)
      .def_property_readonly("version", &Platform::version)
      .def_property_readonly("devices", &Platform::devices)
      .def("__eq__", [](const Platform& a, const Platform& b) { return a == b; })
      .def("__hash__", [](const Platform& p) { return py::hash(py::int_(p.index())); })
      .def("__repr__", [](const Platform& p) { return "<skein.Platform '" + p.name() + "'>"; });
}

void bind_device(py::module_& m) {
  py::enum_<DeviceType>(m, "DeviceType")
      .value("cpu", DeviceType::cpu)
      .value("gpu", DeviceType::gpu)
      .value("other", DeviceType::other);

  py::class_<DeviceParameters>(m, "DeviceParameters", "What a device offers (grunnur's names).")
      .def_readonly("type", &DeviceParameters::type)
      .def_readonly("compute_units", &DeviceParameters::compute_units)
      .def_readonly("local_mem_size", &DeviceParameters::local_mem_size)
      .def_readonly("local_mem_banks", &DeviceParameters::local_mem_banks)
      .def_readonly("max_local_sizes", &DeviceParameters::max_local_sizes)
      .def_readonly("max_num_groups", &DeviceParameters::max_num_groups)
      .def_readonly("max_total_local_size", &DeviceParameters::max_total_local_size)
      .def_readonly("warp_size", &DeviceParameters::warp_size)
      .def_readonly("global_mem_size", &DeviceParameters::global_mem_size)
      .def_readonly("max_alloc_size", &DeviceParameters::max_alloc_size)
      .def_readonly("base_address_align", &DeviceParameters::base_address_align)
      .def_readonly("name", &DeviceParameters::name)
      .def_readonly("vendor", &DeviceParameters::vendor)
      .def_readonly("driver_version", &DeviceParameters::driver_version)
      .def_readonly("supports_float16", &DeviceParameters::supports_float16)
      .def_readonly("supports_float64", &DeviceParameters::supports_float64)
      .def_readonly("compute_capability", &DeviceParameters::compute_capability)
      .def_readonly("pci_bus_id", &DeviceParameters::pci_bus_id);

  py::class_<Device>(m, "Device", "A device of a platform.")
      .def_static("all", &Device::all, py::arg("platform"))
      .def_static(
          "all_by_masks",
          [](const Platform& platform, const py::object& include, const py::object& exclude,
             bool unique_only, bool include_pure_parallel_devices) {
            return Device::all_by_masks(platform, masks(include), masks(exclude), unique_only,
                                        include_pure_parallel_devices);
          },
          py::arg("platform"), py::arg("include_masks") = py::none(),
          py::arg("exclude_masks") = py::none(), py::arg("unique_only") = false,
          py::arg("include_pure_parallel_devices") = false)
      .def_static("from_index", &Device::from_index, py::arg("platform"), py::arg("device_idx"))
      .def_static("from_pci_bus_id", &Device::from_pci_bus_id, py::arg("api"),
                  py::arg("pci_bus_id"),
                  "PyCUDA's Device(pci_bus_id): the device of `api` with this PCI bus id.")
      .def("pci_bus_id", &Device::pci_bus_id,
           "PyCUDA's Device.pci_bus_id(): 'dddd:bb:dd.f' (skein.LogicError where the driver "
           "tells none).")
      .def_property_readonly("platform", &Device::platform)
      .def_property_readonly("index", &Device::index)
      .def_property_readonly("name", &Device::name)
      .def_property_readonly("params", &Device::params, py::return_value_policy::reference_internal)
      .def_property_readonly("description", &Device::description)
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return py::hash(py::int_(d.index())); })
      .def("__repr__", [](const Device& d) { return "<skein.Device '" + d.description() + "'>"; });
}

}  // namespace

void bind_platforms(py::module_& m) {
  bind_api(m);
  bind_platform(m);
  bind_device(m);
}

}  // namespace skein::python
