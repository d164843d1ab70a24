// SPDX-License-Identifier: BSD-3-Clause
// skein-info: what APIs, platforms and devices this machine offers Skein, and why an API is not
// available. The first thing a new user runs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <skein_cli/cli.hpp>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>

namespace {

nlohmann::json params_json(const skein::DeviceParameters& p) {
  nlohmann::json j{
      {"type", std::string(skein::name(p.type))},
      {"compute_units", p.compute_units},
      {"local_mem_size", p.local_mem_size},
      {"local_mem_banks", p.local_mem_banks},
      {"max_local_sizes", p.max_local_sizes},
      {"max_num_groups", p.max_num_groups},
      {"max_total_local_size", p.max_total_local_size},
      {"warp_size", p.warp_size},
      {"global_mem_size", p.global_mem_size},
      {"max_alloc_size", p.max_alloc_size},
      {"base_address_align", p.base_address_align},
      {"vendor", p.vendor},
      {"driver_version", p.driver_version},
      {"supports_float16", p.supports_float16},
      {"supports_float64", p.supports_float64},
  };
  if (p.compute_capability) {
    j["compute_capability"] =
        fmt::format("{}.{}", p.compute_capability->first, p.compute_capability->second);
  }
  if (p.pci_bus_id) j["pci_bus_id"] = *p.pci_bus_id;
  if (!p.opencl_c_versions.empty()) {
    std::vector<std::string> versions;
    for (const auto& [major, minor] : p.opencl_c_versions)
      versions.push_back(fmt::format("{}.{}", major, minor));
    j["opencl_c_versions"] = versions;
    j["opencl_c_features"] = p.opencl_c_features;
  }
  return j;
}

void print_params(const skein::DeviceParameters& p) {
  fmt::print("      type: {}, compute units: {}, warp size: {}\n", skein::name(p.type),
             p.compute_units, p.warp_size);
  fmt::print("      global memory: {}, largest allocation: {}\n",
             skein::format_bytes(p.global_mem_size), skein::format_bytes(p.max_alloc_size));
  fmt::print("      local memory: {} in {} bank(s)\n", skein::format_bytes(p.local_mem_size),
             p.local_mem_banks);
  fmt::print("      max local sizes: ({}), max total local size: {}\n",
             fmt::join(p.max_local_sizes, ", "), p.max_total_local_size);
  fmt::print("      max groups: ({})\n", fmt::join(p.max_num_groups, ", "));
  fmt::print("      vendor: {}, driver: {}\n", p.vendor, p.driver_version);
  fmt::print("      float16: {}, float64: {}\n", p.supports_float16 ? "yes" : "no",
             p.supports_float64 ? "yes" : "no");
  if (p.compute_capability) {
    fmt::print("      compute capability: {}.{}\n", p.compute_capability->first,
               p.compute_capability->second);
  }
  if (p.pci_bus_id) fmt::print("      PCI bus id: {}\n", *p.pci_bus_id);
  if (!p.opencl_c_versions.empty()) {
    std::vector<std::string> versions;
    for (const auto& [major, minor] : p.opencl_c_versions)
      versions.push_back(fmt::format("{}.{}", major, minor));
    fmt::print("      OpenCL C: {}\n", fmt::join(versions, ", "));
    if (!p.opencl_c_features.empty())
      fmt::print("      OpenCL C features: {}\n", fmt::join(p.opencl_c_features, " "));
  }
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{"List the APIs, platforms and devices Skein can use on this machine."};
  std::string api_filter;
  std::vector<std::string> platform_masks, device_masks;
  bool json = false;
  std::string json_file;
  app.add_option("--api", api_filter, "Only this API: cuda or opencl");
  app.add_option("--platform-mask", platform_masks,
                 "Only platforms whose name matches this regular expression (repeatable)");
  app.add_option("--device-mask", device_masks,
                 "Only devices whose name matches this regular expression (repeatable)");
  app.add_flag("--json", json, "Print JSON instead of text");
  app.add_option("--json-file", json_file, "Also write the JSON to this file");
  bool ranks = false;
  app.add_flag("--ranks", ranks,
               "Start the runtime and print which devices each rank uses (run under mpirun for "
               "every rank's; SKEIN_API, SKEIN_DEVICES, SKEIN_DEVICES_PER_RANK, SKEIN_DEVICE and "
               "SKEIN_SHARE_DEVICES apply)");
  app.version_flag("--version", SKEIN_VERSION_STRING);
  if (auto status = app.parse(argc, argv)) return *status;

  if (ranks) {
    try {
#if SKEIN_HAS_MPI
      skein::Runtime runtime(&argc, &argv);
#else
      skein::Runtime runtime;
#endif
      // The placement is gathered to every rank: one rank prints it for the job.
      if (runtime.rank() == 0) {
        fmt::print("Skein {}: {} rank(s)\n{}", SKEIN_VERSION_STRING, runtime.size(),
                   runtime.placement_table());
      }
    } catch (const skein::Error& e) {
      fmt::print(stderr, "{}\n", e.what());
      return 1;
    }
    return 0;
  }

  try {
    std::optional<skein::ApiId> only;
    if (!api_filter.empty()) only = skein::api_id_from_shortcut(api_filter);

    nlohmann::json out{{"skein_version", SKEIN_VERSION_STRING}, {"apis", nlohmann::json::array()}};
    if (!json) fmt::print("Skein {}\n", SKEIN_VERSION_STRING);
    for (const auto& status : skein::Api::status()) {
      if (only && status.id != *only) continue;
      nlohmann::json japi{{"id", std::string(skein::shortcut(status.id))},
                          {"name", std::string(skein::name(status.id))},
                          {"compiled_in", status.compiled_in},
                          {"available", status.available}};
      if (!json) {
        fmt::print("\nAPI {} ({}): ", skein::name(status.id), skein::shortcut(status.id));
        if (status.available) {
          fmt::print("available, {}\n", status.version);
        } else {
          fmt::print("unavailable: {}\n", status.reason);
        }
      }
      if (!status.available) {
        japi["reason"] = status.reason;
        out["apis"].push_back(japi);
        continue;
      }
      japi["version"] = status.version;
      japi["platforms"] = nlohmann::json::array();
      const auto api = skein::Api::from_id(status.id);
      for (const auto& platform : skein::Platform::all_by_masks(api, platform_masks)) {
        nlohmann::json jplat{{"index", platform.index()},
                             {"name", platform.name()},
                             {"vendor", platform.vendor()},
                             {"version", platform.version()},
                             {"devices", nlohmann::json::array()}};
        if (!json) {
          fmt::print("  platform {}: {} ({}, {})\n", platform.index(), platform.name(),
                     platform.vendor(), platform.version());
        }
        const auto devices = skein::Device::all_by_masks(platform, device_masks, {}, false, true);
        for (const auto& device : devices) {
          nlohmann::json jdev{{"index", device.index()}, {"name", device.name()}};
          jdev["params"] = params_json(device.params());
          jplat["devices"].push_back(jdev);
          if (!json) {
            fmt::print("    device {}: {}\n", device.index(), device.name());
            print_params(device.params());
          }
        }
        if (!json && devices.empty()) fmt::print("    (no matching devices)\n");
        japi["platforms"].push_back(jplat);
      }
      out["apis"].push_back(japi);
    }
    if (json) std::cout << out.dump(2) << "\n";
    if (!json_file.empty()) std::ofstream(json_file) << out.dump(2) << "\n";
  } catch (const skein::Error& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  return 0;
}
